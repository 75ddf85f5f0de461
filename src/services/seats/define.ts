import type { Kysely } from 'kysely';
import { Invalid } from '../../kernel/errors.js';
import { checkName } from '../../kernel/names.js';
import { freeText } from '../../kernel/values.js';
import type { DB } from '../../store/tables.js';
import { parseProtocol } from '../verbs/protocol.js';
import type { Catalogue } from './catalogue.js';
import { json, resolveSeatName, type Seat, seatByName } from './seats.js';

export interface SeatInput {
  name: string;
  scope?: string | null;
  delivers?: string | null;
  decided?: string | null;
  replicated?: boolean | null;
  /** The whole protocol as JSON text or a value: `{accepts, emits, serves}`; replaces all three lists. */
  protocol?: unknown;
  /** One list of the protocol each, instead of `protocol`: a list given replaces that list only. */
  accepts?: unknown;
  emits?: unknown;
  serves?: unknown;
}

/** A seat's or a holding's scope is a short label (`site`, `mesh`, `machine`). */
export const SEAT_SCOPE_MAX = 200;
/** What a seat delivers and what was decided about it are a paragraph each, read by every `seats` reader: 4 KiB, not a document. */
const SEAT_TEXT_MAX = 4096;

const given = (value: unknown): boolean => value !== undefined && value !== null;

/** The protocol columns to write: all three for `protocol`, else only the lists given. */
function protocolFields(input: SeatInput): { accepts?: string; emits?: string; serves?: string } {
  const lists = (['accepts', 'emits', 'serves'] as const).filter((list) => given(input[list]));
  if (given(input.protocol)) {
    if (lists.length) {
      throw new Invalid(`protocol is the whole protocol: give it alone, or give ${lists.join(', ')} without it`, 'protocol');
    }
    const protocol = parseProtocol(input.protocol);
    return { accepts: json(protocol.accepts), emits: json(protocol.emits), serves: json(protocol.serves) };
  }
  if (!lists.length) return {};
  // Judged together, so a message names the list as `protocol.<list>…` whichever door it came through.
  const parsed = parseProtocol(Object.fromEntries(lists.map((list) => [list, input[list]])));
  return Object.fromEntries(lists.map((list) => [list, json(parsed[list])]));
}

/**
 * Creates a seat, or changes the one the name resolves to: fields left out keep their value, each
 * of accepts, emits and serves separately; `protocol` given replaces all three. Refuses a bad name,
 * a scope, delivers or decided too long or holding a NUL, a protocol that is not well formed, and `protocol` beside any of the three lists (Invalid, field
 * `protocol`).
 */
export async function defineSeat(db: Kysely<DB>, catalogue: Catalogue, input: SeatInput): Promise<Seat> {
  checkName(input.name, 'name');
  freeText(input.scope, 'scope', SEAT_SCOPE_MAX);
  freeText(input.delivers, 'delivers', SEAT_TEXT_MAX);
  freeText(input.decided, 'decided', SEAT_TEXT_MAX);
  const protocol = protocolFields(input);
  return db.transaction().execute(async (tx) => {
    const present = await resolveSeatName(tx, input.name);
    const fields = {
      ...(input.scope != null && { scope: input.scope }),
      ...(input.delivers != null && { delivers: input.delivers }),
      ...(input.decided != null && { decided: input.decided }),
      ...(input.replicated != null && { replicated: input.replicated }),
      ...protocol,
    };
    if (present) {
      if (Object.keys(fields).length) await tx.updateTable('seat').set(fields).where('name', '=', present).execute();
    } else {
      // Another defineSeat of the same new name may be inserting it too: then this one waits for it
      // and changes what it made, as it would have a moment later (a plain insert failed, INTERNAL).
      await tx
        .insertInto('seat')
        .values({ name: input.name, ...fields })
        .onConflict((oc) => (Object.keys(fields).length ? oc.column('name').doUpdateSet(fields) : oc.column('name').doNothing()))
        .execute();
    }
    return seatByName(tx, catalogue, present ?? input.name);
  });
}
