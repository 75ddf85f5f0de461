import { Unavailable } from '../../kernel/errors.js';
import { STATUS_COUNTS_GRAIN_MS, STATUS_COUNTS_POINTS_DEFAULT, STATUS_COUNTS_POINTS_MAX, type StatusCount } from '../../services/status/looking-back/counts.js';
import type { StatusHistory } from '../../services/status/looking-back/history.js';
import { MACHINE_HISTORY_MAX, type MachineStateChange, machineHistory } from '../../services/status/looking-back/machine-history.js';
import { MachineStateEnum } from '../machines/machine.js';
import { builder } from '../support/builder.js';
import type { GatewayContext } from '../support/context.js';
import { StatusRef } from './status.js';

const MachineStateChangeRef = builder.objectRef<MachineStateChange>('MachineStateChange').implement({
  description: 'One change of a machine as the compositions saw it (state, site or modules), with the composition that first showed it.',
  fields: (t) => ({
    seq: t.exposeInt('seq', { description: 'The composition that first showed this.' }),
    at: t.field({ type: 'DateTime', description: "That composition's composedAt.", resolve: (c) => c.at }),
    state: t.field({
      type: MachineStateEnum,
      nullable: true,
      description: 'Null when the machine left the compositions (forgotten).',
      resolve: (c) => c.state,
    }),
    site: t.exposeString('site', { nullable: true }),
    modules: t.exposeStringList('modules'),
    lastHeardAt: t.field({ type: 'DateTime', nullable: true, resolve: (c) => c.lastHeardAt }),
  }),
});

const StatusCountRef = builder.objectRef<StatusCount>('StatusCount').implement({
  description: 'How many machines were UP, LATE and SILENT in the composition in force at an instant.',
  fields: (t) => ({
    at: t.field({ type: 'DateTime', description: 'The instant counted.', resolve: (c) => c.at }),
    up: t.exposeInt('up'),
    late: t.exposeInt('late'),
    silent: t.exposeInt('silent'),
  }),
});

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
  statusCounts: t.field({
    type: [StatusCountRef],
    description: `The machines UP, LATE and SILENT at \`until\`, \`until - stepSeconds\`, … back to \`since\`, oldest first (default: now, and a day before it or the start of the history kept, whichever is later; \`stepSeconds\` default: the window in about ${STATUS_COUNTS_POINTS_DEFAULT} steps), each the composition in force then to within ${STATUS_COUNTS_GRAIN_MS / 1000} s, from the status stream; no point before the history kept. At most ${STATUS_COUNTS_POINTS_MAX} points (INVALID past it, naming the least step), so its cost never grows with the window.`,
    args: { since: t.arg({ type: 'DateTime' }), until: t.arg({ type: 'DateTime' }), stepSeconds: t.arg.int() },
    resolve: (_root, args, ctx) => ctx.mesh.statusCounts.query(args, ctx.now),
  }),
}));
