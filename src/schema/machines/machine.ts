import { type Machine, machineState } from '../../services/machines/machines.js';
import { builder } from '../support/builder.js';

export const MachineStateEnum = builder.enumType('MachineState', {
  description: 'UP; LATE once news heard past 1.5 expected heartbeat intervals after its last beat is written with none of its own; SILENT past 6.',
  values: ['UP', 'LATE', 'SILENT'] as const,
});

/** The fields of a machine that its name and site answer: a holding answers a selection of only these itself. */
export const MACHINE_BRIEF_FIELDS: ReadonlySet<string> = new Set(['name', 'site', '__typename']);

export const MachineRef = builder.objectRef<Machine>('Machine').implement({
  description: 'A machine of the mesh, as its heartbeats describe it.',
  // Machine.holdings is added in holding.ts, where HoldingRef is, so the two files import one way.
  fields: (t) => ({
    name: t.exposeString('name'),
    site: t.exposeString('site', { nullable: true }),
    firstHeardAt: t.field({ type: 'DateTime', resolve: (m) => m.firstHeardAt }),
    lastHeardAt: t.field({ type: 'DateTime', resolve: (m) => m.lastHeardAt }),
    heartbeats: t.exposeInt('heartbeats'),
    state: t.field({
      type: MachineStateEnum,
      description: 'Judged at how far news was written when the request came (`Status.heardUntil`), not at the wall clock.',
      resolve: (m, _args, ctx) => machineState(m.lastHeardAt.getTime(), ctx.judging),
    }),
    modules: t.exposeStringList('modules', { description: 'The modules running on it.' }),
  }),
});
