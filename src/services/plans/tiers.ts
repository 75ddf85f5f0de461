import { Conflict, Invalid, NotFound } from '../../kernel/errors.js';
import { checkName } from '../../kernel/names.js';
import type { Db } from '../../store/db.js';
import { listHoldings } from '../seats/holdings.js';
import { PLAN_MACHINES_MAX } from './plan.js';

/**
 * The default tiers: the seat's holders (recorded, else derived) grouped one tier per site, sites
 * in name order (machines without a site last), machines in name order within each.
 */
export async function defaultTiers(db: Db, seat: string): Promise<string[][]> {
  const holdings = await listHoldings(db, { seats: [seat] });
  const bySite = new Map<string, Set<string>>();
  for (const h of holdings) {
    const site = h.site ?? '\uffff';
    if (!bySite.has(site)) bySite.set(site, new Set());
    bySite.get(site)!.add(h.machine);
  }
  return [...bySite.keys()].sort().map((site) => [...bySite.get(site)!].sort());
}

/** Judges tiers given to push: non-empty lists of known machine names, each machine in one tier, at most PLAN_MACHINES_MAX. */
export async function checkTiers(db: Db, tiers: unknown): Promise<string[][]> {
  if (!Array.isArray(tiers) || tiers.length === 0) throw new Invalid('tiers must be a non-empty list of non-empty lists of machine names', 'tiers');
  const seen = new Set<string>();
  for (const tier of tiers) {
    if (!Array.isArray(tier) || tier.length === 0) throw new Invalid('every tier must name at least one machine', 'tiers');
    for (const machine of tier) {
      checkName(machine, 'tiers');
      if (seen.has(machine)) throw new Invalid(`machine ${JSON.stringify(machine)} is in two tiers`, 'tiers');
      seen.add(machine);
    }
  }
  if (seen.size > PLAN_MACHINES_MAX) throw new Invalid(`tiers name ${seen.size} machines; at most ${PLAN_MACHINES_MAX}`, 'tiers');
  const known = await db
    .selectFrom('machine')
    .select('name')
    .where('name', 'in', [...seen])
    .execute();
  if (known.length < seen.size) {
    const have = new Set(known.map((k) => k.name));
    throw new NotFound('machine', [...seen].find((m) => !have.has(m))!);
  }
  return tiers as string[][];
}

/**
 * Refuses tiers naming a machine that does not hold the seat (recorded, else derived: the holders
 * `listHoldings` answers): Conflict, naming the first such machine in tier order. The tiers are
 * well formed and the machine exists; it is the store's holdings the request contradicts.
 */
export async function checkTierHolders(db: Db, seat: string, tiers: readonly string[][]): Promise<void> {
  const machines = tiers.flat();
  const holders = new Set((await listHoldings(db, { seats: [seat], machines })).map((h) => h.machine));
  const stranger = machines.find((m) => !holders.has(m));
  if (stranger !== undefined)
    throw new Conflict(`machine ${JSON.stringify(stranger)} does not hold seat ${JSON.stringify(seat)}: a plan applies only to its holders`);
}
