import type { Composition, HolderStatus, MachineStatus, PlanStatus, RepeatedCauseStatus, SeatStatus } from '../../services/status/composition.js';
import { currentStatus, followLatest } from '../../services/status/live/latest.js';
import { judgeEveryMs } from '../../services/status/live/subscription.js';
import { SITES_LISTED_MAX, type SiteCount, siteCounts, siteMachines } from '../../services/status/sites.js';
import { MachineStateEnum } from '../machines/machine.js';
import { builder } from '../support/builder.js';
import { mapLive, markSeq } from '../support/live.js';

// Every field here reads the plain composition value: a status is answered without the store.

const MachineHoldingStatusRef = builder.objectRef<MachineStatus['holdings'][number]>('MachineHoldingStatus').implement({
  description: 'A seat held by a module of a machine, as one composition saw it.',
  fields: (t) => ({
    seat: t.exposeString('seat'),
    module: t.exposeString('module'),
    derived: t.exposeBoolean('derived', { description: 'Held because the module claims the seat, not on record.' }),
  }),
});

export const MachineStatusRef = builder.objectRef<MachineStatus>('MachineStatus').implement({
  description: 'A machine as one composition saw it.',
  fields: (t) => ({
    name: t.exposeString('name'),
    site: t.exposeString('site', { nullable: true }),
    state: t.field({ type: MachineStateEnum, resolve: (m) => m.state }),
    lastHeardAt: t.field({ type: 'DateTime', resolve: (m) => m.lastHeardAt }),
    modules: t.exposeStringList('modules'),
    holdings: t.field({ type: [MachineHoldingStatusRef], resolve: (m) => m.holdings }),
  }),
});

const HolderStatusRef = builder.objectRef<HolderStatus>('HolderStatus').implement({
  description: 'A holder of a seat as one composition saw it.',
  fields: (t) => ({
    machine: t.exposeString('machine'),
    module: t.exposeString('module'),
    site: t.exposeString('site', { nullable: true }),
    derived: t.exposeBoolean('derived', { description: 'Held because the module claims the seat, not on record.' }),
  }),
});

export const SeatStatusRef = builder.objectRef<SeatStatus>('SeatStatus').implement({
  description: 'A seat and its holders as one composition saw them.',
  fields: (t) => ({
    name: t.exposeString('name'),
    held: t.exposeBoolean('held'),
    holders: t.field({ type: [HolderStatusRef], resolve: (s) => s.holders }),
  }),
});

export const PlanStatusRef = builder.objectRef<PlanStatus>('PlanStatus').implement({
  description: 'A plan not yet over (QUEUED, OPEN, or STOPPED until it is closed or resumed) as one composition saw it.',
  fields: (t) => ({
    id: t.exposeID('id'),
    seat: t.exposeString('seat'),
    build: t.exposeString('build'),
    state: t.exposeString('state', { description: 'QUEUED, OPEN or STOPPED.' }),
    tier: t.exposeInt('tier', { description: 'The tier being applied, from 0.' }),
    tiers: t.field({ type: t.listRef(t.listRef('String')), description: 'The machines of each tier, in the order applied.', resolve: (p) => p.tiers }),
    behind: t.exposeString('behind', { nullable: true }),
    openedAt: t.field({ type: 'DateTime', nullable: true, resolve: (p) => p.openedAt }),
    endedAt: t.field({ type: 'DateTime', nullable: true, resolve: (p) => p.endedAt }),
    stopReason: t.exposeString('stopReason', { nullable: true, description: 'Why a STOPPED plan stopped; null otherwise.' }),
  }),
});

export const RepeatedCauseStatusRef = builder.objectRef<RepeatedCauseStatus>('RepeatedCauseStatus').implement({
  description: "A cause given to more than one of the week's hand-acts.",
  fields: (t) => ({
    cause: t.exposeString('cause'),
    count: t.exposeInt('count'),
    firstAt: t.field({ type: 'DateTime', resolve: (r) => r.firstAt }),
    lastAt: t.field({ type: 'DateTime', resolve: (r) => r.lastAt }),
  }),
});

const SiteCountRef = builder.objectRef<SiteCount>('SiteCount').implement({
  description: "A site's machines counted by state, as one composition saw them.",
  fields: (t) => ({
    site: t.exposeString('site', { nullable: true, description: 'The site; null for the machines that name none.' }),
    up: t.exposeInt('up'),
    late: t.exposeInt('late'),
    silent: t.exposeInt('silent'),
  }),
});

export const StatusRef = builder.objectRef<Composition>('Status').implement({
  description:
    'The whole mesh at one instant, composed by the serving replica after news, acting verbs and plan changes (at most a few a second) and every minute.',
  fields: (t) => ({
    seq: t.exposeInt('seq', { description: 'Grows with each composition, across replicas.' }),
    controller: t.string({
      nullable: true,
      description: 'The controller (MESH_CONTROLLER) that composed it; a replica ignores compositions of another controller.',
      resolve: (c) => c.controller ?? null,
    }),
    composedAt: t.field({ type: 'DateTime', resolve: (c) => c.composedAt }),
    heardUntil: t.field({
      type: 'DateTime',
      description:
        'News stored before this instant was heard (read from the news stream) when the composition was made, and machines are judged UP, LATE or SILENT at it, not at the wall clock: a gateway behind on its news shows it here (compare with composedAt), never as machines going LATE. See docs/status.md.',
      resolve: (c) => c.heardUntil ?? c.composedAt,
    }),
    tookMs: t.exposeFloat('tookMs', { description: 'How long composing took, in milliseconds.' }),
    trigger: t.exposeString('trigger', {
      description:
        'What asked for it, the triggers coalesced into it comma-separated: start, takeover, resumed (the serving lease taken back in the term it lapsed in), news, build, acted, plan, state-change (a machine crossed into LATE or SILENT), minute, replica-joined.',
    }),
    machines: t.field({
      type: [MachineStatusRef],
      description: 'The machines by name. `site`: only the machines of that site; null: only those of no site; absent: every machine.',
      args: { site: t.arg.string({ description: 'A site: only its machines (null: the machines of no site).' }) },
      resolve: (c, args) => (args.site === undefined ? c.machines : siteMachines(c, args.site)),
    }),
    sites: t.field({
      type: [SiteCountRef],
      description: `Each site's machines counted by state: by site in code-unit order, the machines of no site last (site null). At most ${SITES_LISTED_MAX.toLocaleString('en-US')} sites; sitesUnlisted counts any past that. Counted once per composition.`,
      resolve: (c) => siteCounts(c).sites,
    }),
    sitesUnlisted: t.int({
      description: `Sites left out of \`sites\`, past its ${SITES_LISTED_MAX.toLocaleString('en-US')}: 0 unless the mesh has more sites than that.`,
      resolve: (c) => siteCounts(c).unlisted,
    }),
    seats: t.field({ type: [SeatStatusRef], resolve: (c) => c.seats }),
    unheldSeats: t.exposeStringList('unheldSeats', { description: 'Seats with no holder, on record or derived.' }),
    callsRunning: t.exposeInt('callsRunning'),
    handActsThisWeek: t.exposeInt('handActsThisWeek', { description: 'Hand-acts of the last 7 days.' }),
    repeatedCauses: t.field({
      type: [RepeatedCauseStatusRef],
      description: 'Causes seen more than once in the last 7 days.',
      resolve: (c) => c.repeatedCauses,
    }),
    plans: t.field({ type: [PlanStatusRef], resolve: (c) => c.plans }),
  }),
});

builder.queryFields((t) => ({
  status: t.field({
    type: StatusRef,
    description: 'The last composition this replica heard, at once: a status is never composed while its caller waits.',
    resolve: (_root, _args, ctx) => currentStatus(ctx.mesh.status),
  }),
}));

builder.subscriptionFields((t) => ({
  status: t.field({
    type: StatusRef,
    description:
      'The current composition, then each new one. A slow subscriber skips to the latest instead of queueing. `everyMs`: at most one per interval, the latest.',
    args: { everyMs: t.arg.int({ description: 'At most one composition per this many milliseconds (0 to 3,600,000); absent: every one.' }) },
    subscribe: (_root, args, ctx) =>
      mapLive(followLatest(ctx.mesh.status, { everyMs: judgeEveryMs(args.everyMs) }), (composition) => {
        markSeq(ctx, composition.seq);
        return composition;
      }),
    resolve: (composition) => composition,
  }),
}));
