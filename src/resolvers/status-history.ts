import { Unavailable } from '../kernel/errors.js';
import { builder } from '../schema/builder.js';
import type { GatewayContext } from '../schema/context.js';
import { StatusRef } from '../schema/status.js';
import { MachineStateChangeRef } from '../schema/status-history.js';
import type { StatusHistory } from '../services/status/history.js';
import { MACHINE_HISTORY_MAX, machineHistory } from '../services/status/machine-history.js';

const historyOf = (ctx: GatewayContext): StatusHistory => {
  const history = ctx.mesh.status.history;
  if (!history) throw new Unavailable('this replica has no status stream to look back in');
  return history;
};

builder.queryFields((t) => ({
  statusAt: t.field({
    type: StatusRef,
    nullable: true,
    description:
      'A composition of the past while the status stream holds it (MESH_STATUS_HISTORY_H, a day by default): by its `seq`, or the one in force `at` an instant; exactly one of the two. Same fields as `status`.',
    args: { seq: t.arg.int(), at: t.arg({ type: 'DateTime' }) },
    resolve: (_root, args, ctx) => historyOf(ctx).statusAt({ seq: args.seq, at: args.at }),
  }),
  machineHistory: t.field({
    type: [MachineStateChangeRef],
    errors: {},
    description: `One machine's changes (UP / LATE / SILENT, site, modules) from \`since\` (default: a day before \`until\`) to \`until\` (default: now), earliest first, the first being the machine as it was at \`since\`; at most ${MACHINE_HISTORY_MAX}, from the status stream.`,
    args: { name: t.arg.string({ required: true }), since: t.arg({ type: 'DateTime' }), until: t.arg({ type: 'DateTime' }) },
    resolve: (_root, args, ctx) => machineHistory(historyOf(ctx), { name: args.name, since: args.since, until: args.until }, ctx.now),
  }),
}));
