import type { Alias } from '../../services/seats/seats.js';
import { builder } from '../support/builder.js';

export const AliasRef = builder.objectRef<Alias>('Alias').implement({
  description: "A seat's former name, and the seat it resolves to now.",
  fields: (t) => ({
    alias: t.exposeString('alias'),
    seat: t.exposeString('seat'),
  }),
});
