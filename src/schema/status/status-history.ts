import type { StatusCount } from '../../services/status/looking-back/counts.js';
import type { MachineStateChange } from '../../services/status/looking-back/machine-history.js';
import { MachineStateEnum } from '../machines/machine.js';
import { builder } from '../support/builder.js';

export const MachineStateChangeRef = builder.objectRef<MachineStateChange>('MachineStateChange').implement({
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

export const StatusCountRef = builder.objectRef<StatusCount>('StatusCount').implement({
  description: 'How many machines were UP, LATE and SILENT in the composition in force at an instant.',
  fields: (t) => ({
    at: t.field({ type: 'DateTime', description: 'The instant counted.', resolve: (c) => c.at }),
    up: t.exposeInt('up'),
    late: t.exposeInt('late'),
    silent: t.exposeInt('silent'),
  }),
});
