import { listCalls } from '../src/services/calls/reading.js';
import { listHandActs } from '../src/services/hand-acts/hand-acts.js';
import { listMachines, type Machine, machineState, machinesByNames } from '../src/services/machines/machines.js';
import type { Mesh } from '../src/services/mesh.js';
import { type Holding, listHoldings } from '../src/services/seats/holdings.js';
import { listSeats, type Seat, seatsByNames } from '../src/services/seats/seats.js';

/**
 * The physical limit of each shape of the reads bench: the SQL statements (and bucket reads) the
 * gateway runs for it, the answer built by hand from their rows, with the gateway's field order and
 * null-handling, ready for one JSON.stringify. No GraphQL, no validation, no per-field resolvers.
 */
export type BareShape = (mesh: Mesh) => Promise<unknown>;

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

const byName = <T extends { name: string }>(items: readonly (T | undefined)[]) => new Map(items.flatMap((i) => (i ? [[i.name, i] as const] : [])));

async function machinesOf(mesh: Mesh, holdings: Holding[]): Promise<Map<string, Machine>> {
  const names = [...new Set(holdings.map((h) => h.machine))];
  return byName(await machinesByNames(mesh.db, names));
}

/** `{ seats { name scope replicated holders { module scope machine { name site } } } }` */
async function nested(mesh: Mesh) {
  const seats = await listSeats(mesh.db, mesh.catalogue);
  const holdings = groupBy(await listHoldings(mesh.db, { seats: seats.map((s) => s.name) }), (h) => h.seat);
  // A holding carries its machine's site (issue 24): the gateway reads no machines for this shape.
  return {
    seats: seats.map((s) => ({
      name: s.name,
      scope: s.scope,
      replicated: s.replicated,
      holders: (holdings.get(s.name) ?? []).map((h) => ({ module: h.module, scope: h.scope, machine: { name: h.machine, site: h.site } })),
    })),
  };
}

/** `{ machines { name site state modules holdings { seat { name } module } } }` */
async function machines(mesh: Mesh) {
  const now = new Date();
  const list = await listMachines(mesh.db);
  const holdings = groupBy(await listHoldings(mesh.db, { machines: list.map((m) => m.name) }), (h) => h.machine);
  const seats = byName(await seatsByNames(mesh.db, mesh.catalogue, [...new Set([...holdings.values()].flat().map((h) => h.seat))]));
  return {
    machines: list.map((m) => ({
      name: m.name,
      site: m.site,
      state: machineState(m.lastHeardAt.getTime(), { heardUntilMs: now.getTime(), heartbeatSeconds: mesh.config.heartbeatSeconds }),
      modules: m.modules,
      holdings: (holdings.get(m.name) ?? []).map((h) => ({ seat: { name: seats.get(h.seat)!.name }, module: h.module })),
    })),
  };
}

/** `{ seats { holders { machine { holdings { seat { holders { machine { name } } } } } } } }` */
async function deep(mesh: Mesh) {
  const seats = await listSeats(mesh.db, mesh.catalogue);
  const bySeat = groupBy(await listHoldings(mesh.db, { seats: seats.map((s) => s.name) }), (h) => h.seat);
  const machines = await machinesOf(mesh, [...bySeat.values()].flat());
  const byMachine = groupBy(await listHoldings(mesh.db, { machines: [...machines.keys()] }), (h) => h.machine);
  // Seats and machines reached again are those already read: the gateway's loaders have them primed or cached.
  const known = byName<Seat>(seats);
  const holders = (seat: string) => (bySeat.get(seat) ?? []).map((h) => ({ machine: { name: machines.get(h.machine)!.name } }));
  return {
    seats: seats.map((s) => ({
      holders: (bySeat.get(s.name) ?? []).map((h) => ({
        machine: {
          holdings: (byMachine.get(h.machine) ?? []).map((o) => ({ seat: { holders: holders(known.get(o.seat)!.name) } })),
        },
      })),
    })),
  };
}

const page = { limit: 101 };

/** `calls(first: 100)`, every field of each call. */
async function calls(mesh: Mesh) {
  const list = await listCalls(mesh, {}, page);
  const edges = list.slice(0, 100).map((c) => ({
    node: {
      id: c.id,
      seat: c.seat,
      verb: c.verb,
      args: c.args,
      argsTruncated: c.argsTruncated,
      caller: c.caller,
      door: c.door,
      state: c.state,
      startedAt: new Date(c.startedAt).toISOString(),
      endedAt: c.endedAt === null ? null : new Date(c.endedAt).toISOString(),
      answer: c.answer,
      answerJson: c.answerTruncated || c.answer === null ? null : JSON.parse(c.answer),
      answerTruncated: c.answerTruncated,
      answerBytes: c.answerBytes,
      error: c.error?.message ?? null,
      errorCode: c.error?.code ?? null,
      replica: c.replica,
      outerCallId: c.outerCallId ?? null,
    },
  }));
  return { calls: { edges } };
}

/** `handActs(first: 100)`, every field of each hand-act. */
async function handActs(mesh: Mesh) {
  const list = listHandActs(mesh, {}, page);
  const edges = list.slice(0, 100).map((a) => ({
    node: {
      id: a.id,
      at: new Date(a.at).toISOString(),
      actor: a.actor,
      act: a.act,
      target: a.target,
      why: a.why,
      cause: a.cause,
      condition: a.condition,
      callId: a.callId,
    },
  }));
  return { handActs: { edges } };
}

export const BARE_SHAPES: Record<string, BareShape> = { nested, machines, deep, calls, handActs };
