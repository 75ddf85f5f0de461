import { sql } from 'kysely';
import { byName } from '../../kernel/names.js';
import type { Store } from '../../store/db.js';
import { claimsOf, type Heartbeat } from './machines.js';

/** What the store holds of a machine that its beats can change: site, running modules with their claims, the checkpoint of when it was last heard. */
export interface StoredMachine {
  site: string | null;
  /** Each running module's claims, as JSON text. */
  modules: Map<string, string>;
  lastHeardMs: number;
  /** When a gateway last wrote its row; undefined when unknown. */
  writtenMs: number | undefined;
}

/**
 * The machines named as the store holds them, in one statement that writes nothing: what a batch
 * of beats is compared with, so that a beat repeating what is stored is not written (issue 37).
 */
export async function storedMachines(db: Store, names: readonly string[]): Promise<Map<string, StoredMachine>> {
  if (names.length === 0) return new Map();
  const { rows } = await sql<{ name: string; site: string | null; last_heard_ms: number; written_ms: number | null; modules: [string, unknown][] | null }>`
    select m.name, m.site,
           (extract(epoch from m.last_heard_at) * 1000)::float8 as last_heard_ms,
           (extract(epoch from m.written_at) * 1000)::float8 as written_ms,
           (select json_agg(json_build_array(a.module, a.claims)) from assignment a where a.machine = m.name and a.running) as modules
      from machine m where m.name = any(${[...names]}::text[])`.execute(db);
  return new Map(
    rows.map((r) => [
      r.name,
      {
        site: r.site,
        modules: new Map((r.modules ?? []).map(([module, claims]) => [module, JSON.stringify(claims)])),
        lastHeardMs: Number(r.last_heard_ms),
        writtenMs: r.written_ms == null ? undefined : Number(r.written_ms),
      },
    ]),
  );
}

/** Whether a beat says something the store does not hold: a machine new to it, another site, other modules or claims. */
export function changesStored(beat: Heartbeat, stored: StoredMachine | undefined): boolean {
  if (!stored) return true;
  if (beat.site != null && beat.site !== stored.site) return true;
  const modules = new Set(beat.modules);
  if (modules.size !== stored.modules.size) return true;
  for (const module of modules) if (stored.modules.get(module) !== JSON.stringify(claimsOf(beat, module))) return true;
  return false;
}

/** What a checkpoint writes of one machine: the beats counted since the last and the latest heard instant. */
export interface Checkpoint {
  machine: string;
  beats: number;
  lastHeardMs: number;
}

/**
 * Writes checkpoints in one statement: each machine's beat count grows by what was counted and its
 * last-heard moves to the later of the two (never back). In name order, so two replicas'
 * checkpoints of overlapping machines lock rows in one order. A machine forgotten meanwhile is skipped.
 */
export async function writeCheckpoints(db: Store, checkpoints: readonly Checkpoint[]): Promise<void> {
  if (checkpoints.length === 0) return;
  const rows = [...checkpoints].sort((a, b) => byName(a.machine, b.machine));
  await sql`
    update machine m set heartbeats = m.heartbeats + u.n, last_heard_at = greatest(m.last_heard_at, u.l), written_at = now()
      from unnest(${rows.map((r) => r.machine)}::text[], ${rows.map((r) => r.beats)}::int[],
                  ${rows.map((r) => new Date(r.lastHeardMs).toISOString())}::timestamptz[]) as u(name, n, l)
     where m.name = u.name`.execute(db);
}
