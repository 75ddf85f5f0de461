import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { isWrongLastSequence } from '../../../bus/retry.js';
import type { StatusStreamSubjects } from '../../../bus/status-stream.js';
import { editedPlaces, noteEdits } from '../../../kernel/list-edits.js';
import { byName } from '../../../kernel/names.js';
import { msBetweenInstants } from '../../../kernel/values.js';
import type { ComposeTrigger } from '../composing/poke.js';
import { type Composition, LAST_HEARD_GRAIN_MS, type MachineStatus, sameModules } from '../composition.js';
import { diffCompositions, type StatusDelta, sameJson } from '../delta/delta.js';
import { countStates } from '../looking-back/counts.js';
import { encodeStreamEntry } from './encode.js';
import { isNotServing } from './seal.js';
import type { StatusSealing } from './wire.js';

/** The serving replica puts a whole composition into the status stream at least this often (and on a takeover). */
export const SNAPSHOT_EVERY_MS = 60_000;
/**
 * How long one put into the status stream may wait for its acknowledgement. A stream electing a
 * leader (a NATS node lost) answers late or not at all; past this the composition goes whole on
 * `<subjects>.status` instead, so no replica's subscribers wait for the election.
 */
export const STATUS_PUT_TIMEOUT_MS = 1_000;
/** Triggers after which the next composition goes into the stream whole: a new server, a replica without one, a gap. */
const SNAPSHOT_TRIGGERS: ReadonlySet<ComposeTrigger> = new Set<ComposeTrigger>(['start', 'takeover', 'resync', 'replica-joined']);

/** One coarsening's machines: as composed, and as published (`coarsenLastHeard`'s answer). */
export interface Coarsening {
  composed: readonly MachineStatus[];
  published: readonly MachineStatus[];
}

/** Whether two items of a machine differ in nothing but lastHeardAt, moved forward by less than `grainMs`. */
function onlyHeardSooner(before: MachineStatus, after: MachineStatus, grainMs: number): boolean {
  const moved = msBetweenInstants(before.lastHeardAt, after.lastHeardAt);
  if (!(moved >= 0 && moved < grainMs)) return false;
  return before.state === after.state && before.site === after.site && sameModules(before.modules, after.modules) && sameJson(before.holdings, after.holdings);
}

/**
 * `next` with each machine that changed only by a heartbeat heard less than `grainMs` after the
 * `lastHeardAt` of `previous` given back its item of `previous` (the same object), so the delta
 * does not name it. Returns `next` itself when no machine is kept back. Both lists are in name
 * order, so they are walked side by side: a machine at the same place is compared at once (an
 * incremental composition keeps every untouched machine there, the same object), and one added or
 * removed only moves the place in `previous`. A map of every machine cost 0.95 s a composition at
 * a million (docs/BENCHMARKS.md, "Coarsening a million machines' instants"). A list out of name
 * order is never wrong, only coarsened less: a machine is matched by its name alone.
 *
 * With `last`, the coarsening before it, when `previous` is what it published: a machine composed
 * as the very same object at the same place as then was answered then, and its answer is the item
 * published (a full composition makes every machine a new object, kept back for up to a minute, and
 * comparing each of them again at every composition was 9% of the serving replica at 100,000).
 */
export function coarsenLastHeard(previous: Composition, next: Composition, grainMs = LAST_HEARD_GRAIN_MS, last?: Coarsening): Composition {
  const was = previous.machines;
  const answered = last && last.published === was && last.composed.length === was.length ? last.composed : undefined;
  const places = answered && editedPlaces(next.machines, answered);
  if (places) return coarsenAtPlaces(was, next, places, grainMs);
  let machines: MachineStatus[] | undefined;
  let j = 0;
  for (let i = 0; i < next.machines.length; i++) {
    const m = next.machines[i]!;
    if (was[i] === m) {
      j = i;
      continue;
    }
    if (answered?.[i] === m) {
      j = i;
      machines ??= next.machines.slice();
      machines[i] = was[i]!;
      continue;
    }
    if (was[i]?.name === m.name) j = i;
    else while (j < was.length && byName(was[j]!.name, m.name) < 0) j++;
    const b = was[j]?.name === m.name ? was[j] : undefined;
    if (!b || b === m || b.lastHeardAt === m.lastHeardAt || !onlyHeardSooner(b, m, grainMs)) continue;
    machines ??= next.machines.slice();
    machines[i] = b;
  }
  return machines ? Object.freeze({ ...next, machines }) : next;
}

/**
 * `coarsenLastHeard` of a composition whose machines were made from those answered last by writing
 * `places` (`noteEdits`), against what was published then (`was`, the same machines at the same
 * places): every other place's answer is the item published. Visits those places alone, and notes
 * the places whose item is not the one published.
 */
function coarsenAtPlaces(was: readonly MachineStatus[], next: Composition, places: readonly number[], grainMs: number): Composition {
  let machines: MachineStatus[] | undefined;
  const written: number[] = [];
  for (const i of places) {
    const m = next.machines[i]!;
    const b = was[i]!;
    if (b === m || (b.lastHeardAt !== m.lastHeardAt && onlyHeardSooner(b, m, grainMs))) continue;
    machines ??= was.slice();
    machines[i] = m;
    written.push(i);
  }
  if (!machines) return Object.freeze({ ...next, machines: was as MachineStatus[] });
  noteEdits(machines, was, written);
  return Object.freeze({ ...next, machines });
}

/**
 * A composition not put because this replica no longer serves (it was frozen past its lease, say,
 * or lost it while composing): the status stream refused it (another replica put into it since
 * this one's last put), or this replica's seal did (`isNotServing`). Its composition is stale.
 */
export class ServingFenced extends Error {
  constructor(seq: number, cause: unknown) {
    super(`composition ${seq} was not put: this replica no longer serves (${String(cause)})`);
    this.name = 'ServingFenced';
  }
}

/** What the publisher needs of the status stream and of this replica's feed. */
export interface StatusPublisherLink {
  nc: NatsConnection;
  js: JetStreamClient;
  subjects: StatusStreamSubjects;
  /** The composition this replica holds: the one the next is a delta from. */
  current(): Composition | undefined;
  logger?: Logger;
  /** Seals every part put (`statusSeal`), so followers know it is the serving replica's; the gateway always passes the link's. */
  sealing?: StatusSealing;
}

/** What the publisher put: the composition as coarsened, the delta to it from the one held, and whether it goes whole on `<subjects>.status`. */
export interface Published {
  composition: Composition;
  delta: StatusDelta | undefined;
  /** A snapshot, or one the stream did not take: it goes whole on `<subjects>.status` too. */
  whole: boolean;
}

/**
 * The serving replica's way out for compositions: each one, coarsened (`coarsenLastHeard`), goes
 * into the status stream as the delta from the one before; a whole snapshot follows when none
 * was published by this replica yet, when the one before was not its own (a takeover), after
 * SNAPSHOT_EVERY_MS, or when a replica asked (`resync`). It returns what it put, once the stream
 * has it (so no replica ever serves a seq the others cannot hear), for the feed to keep and to
 * send whole on `<subjects>.status` when `whole`: a snapshot, or a composition the stream could
 * not take within STATUS_PUT_TIMEOUT_MS (a leader being elected), which every replica then hears
 * there; the next one goes into the stream as a snapshot.
 */
export function statusPublisher(link: StatusPublisherLink): (composition: Composition, ...triggers: ComposeTrigger[]) => Promise<Published> {
  let snapshot: { streamSeq: number; at: number } | undefined;
  let published: number | undefined;
  // The stream sequence of this replica's last put: each put expects the stream to end there, so a
  // replica that lost the lease (frozen, say) and resumes cannot put a stale composition after another's.
  let lastPut: number | undefined;
  let lastCoarsening: Coarsening | undefined;
  const put = async (subject: string, parts: { data: Uint8Array; headers?: unknown }[]) => {
    let first: number | undefined;
    for (const part of parts) {
      const expect = lastPut === undefined ? undefined : { lastSequence: lastPut };
      const ack = await link.js.publish(subject, part.data, { headers: part.headers as never, timeout: STATUS_PUT_TIMEOUT_MS, expect });
      lastPut = ack.seq;
      first ??= ack.seq;
    }
    return first!;
  };
  return async (composed, ...triggers) => {
    // A replica that takes the lease puts after whoever served before it: nothing to expect.
    if (triggers.some((t) => t === 'start' || t === 'takeover')) lastPut = undefined;
    const previous = link.current();
    const next = previous ? coarsenLastHeard(previous, composed, LAST_HEARD_GRAIN_MS, lastCoarsening) : composed;
    lastCoarsening = { composed: composed.machines, published: next.machines };
    const delta = previous && previous.seq < next.seq ? diffCompositions(previous, next) : undefined;
    const whole =
      !snapshot || !previous || published !== previous.seq || Date.now() - snapshot.at >= SNAPSHOT_EVERY_MS || triggers.some((t) => SNAPSHOT_TRIGGERS.has(t));
    const maxPayload = link.nc.info?.max_payload ?? 1024 * 1024;
    // The delta goes before the snapshot of the same seq: a replica holding the base applies it and
    // keeps its chain of deltas (what resuming subscribers are sent), then skips the snapshot.
    let streamTookIt = true;
    try {
      const counts = countStates(next.machines);
      if (delta)
        await put(
          link.subjects.delta,
          await encodeStreamEntry('delta', delta, maxPayload, { base: delta.baseSeq, snapshotAt: snapshot?.streamSeq, counts }, link.sealing),
        );
      if (whole)
        snapshot = {
          streamSeq: await put(link.subjects.snapshot, await encodeStreamEntry('snapshot', next, maxPayload, { counts }, link.sealing)),
          at: Date.now(),
        };
      published = next.seq;
    } catch (error) {
      if (isWrongLastSequence(error) || isNotServing(error)) {
        // Another replica serves now, or this one lost the lease while composing (its seal
        // refused): this composition is kept nowhere and sent nowhere, dropped, not failed.
        lastPut = undefined;
        throw new ServingFenced(next.seq, error);
      }
      // Not known whether the put got in: the next one expects nothing.
      lastPut = undefined;
      // `published` stays behind: the next composition goes into the stream whole, after this delta (if it got in) or not.
      streamTookIt = false;
      link.logger?.warn({ err: String(error), seq: next.seq }, 'the status stream did not take a composition: sent whole on the status subject');
    }
    return { composition: next, delta, whole: whole || !streamTookIt };
  };
}
