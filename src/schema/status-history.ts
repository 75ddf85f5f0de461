import type { MachineStateChange } from '../services/status/machine-history.js';
import { builder } from './builder.js';
import { MachineStateEnum } from './machine.js';

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
