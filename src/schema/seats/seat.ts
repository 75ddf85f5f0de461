import type { Seat } from '../../services/seats/seats.js';
import { ARG_TYPES, type Verb, type VerbArg } from '../../services/verbs/protocol.js';
import { builder } from '../support/builder.js';

const VerbArgRef = builder.objectRef<VerbArg>('VerbArg').implement({
  description: 'One argument a verb takes.',
  fields: (t) => ({
    name: t.exposeString('name'),
    type: t.exposeString('type', { description: 'String, Int, Float, Boolean, ID, JSON, DateTime, [String] or [[String]].' }),
    required: t.exposeBoolean('required'),
  }),
});

const VerbRef = builder.objectRef<Verb>('Verb').implement({
  description: 'A verb a seat serves on `<subjects>.seat.<seat>.<verb>`.',
  fields: (t) => ({
    name: t.exposeString('name'),
    acting: t.exposeBoolean('acting', { description: 'Whether calling it changes the mesh.' }),
    args: t.field({ type: [VerbArgRef], resolve: (verb) => verb.args }),
  }),
});

// Seat.holders is added in holding.ts, where HoldingRef is, so the two files import one way.
export const SeatRef = builder.objectRef<Seat>('Seat').implement({
  description: 'A role in the mesh that a running module holds: what it delivers and the protocol it speaks.',
  fields: (t) => ({
    name: t.exposeString('name', { description: 'The canonical name; former names are its aliases.' }),
    scope: t.exposeString('scope'),
    delivers: t.exposeString('delivers'),
    decided: t.exposeString('decided', { description: 'The decision that made the seat.' }),
    replicated: t.exposeBoolean('replicated', { description: 'Whether several modules may hold it at once.' }),
    accepts: t.exposeStringList('accepts'),
    emits: t.exposeStringList('emits'),
    serves: t.field({ type: [VerbRef], resolve: (seat) => seat.serves }),
    aliases: t.stringList({ resolve: (seat, _args, ctx) => ctx.loaders.aliasesBySeat.load(seat.name) }),
  }),
});

const VerbArgInput = builder.inputType('VerbArgInput', {
  fields: (t) => ({
    name: t.string({ required: true }),
    type: t.string({ required: true, description: `One of ${ARG_TYPES.join(', ')}.` }),
    required: t.boolean({ defaultValue: false }),
  }),
});

const VerbInput = builder.inputType('VerbInput', {
  fields: (t) => ({
    name: t.string({ required: true }),
    acting: t.boolean({ defaultValue: false }),
    args: t.field({ type: [VerbArgInput], defaultValue: [] }),
  }),
});

export const SeatInput = builder.inputType('SeatInput', {
  description: 'A seat to create, or changes to the seat the name resolves to: fields left out keep their value.',
  fields: (t) => ({
    name: t.string({ required: true }),
    scope: t.string(),
    delivers: t.string(),
    decided: t.string(),
    replicated: t.boolean(),
    accepts: t.stringList(),
    emits: t.stringList(),
    serves: t.field({ type: [VerbInput] }),
    protocol: t.string({ description: 'The whole protocol as JSON text, `{"accepts":[…],"emits":[…],"serves":[…]}`; instead of accepts/emits/serves.' }),
  }),
});
