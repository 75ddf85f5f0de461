import { afterAll, beforeAll, expect, test } from 'vitest';
import { recordHeartbeats } from '../../../src/services/machines/machines.js';
import type { Composition, MachineStatus } from '../../../src/services/status/composition.js';
import { SITES_LISTED_MAX, siteCounts, siteMachines } from '../../../src/services/status/sites.js';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually, sseSubscribe, wsSubscribe } from '../../fixtures/live.js';

const { gw, env } = useGateway('sites');
let agent: Awaited<ReturnType<typeof anAgent>>;

/** Five machines over two sites and none: `us-1`'s us-b heard 20 s ago (LATE), the rest beating. */
const BEATING: Record<string, string | null> = { 'eu-a': 'eu-1', 'eu-b': 'eu-1', 'us-a': 'us-1', 'lone-a': null };

beforeAll(async () => {
  agent = await anAgent();
  await eventually(() => gw.mesh.status.current(), 'the first composition');
  for (const [name, site] of Object.entries(BEATING)) agent.heartbeat(env.subjects, name, { ...(site ? { site } : {}), modules: ['agent'] });
  await recordHeartbeats(gw.mesh.db, [{ machine: 'us-b', site: 'us-1', modules: ['agent'], claims: {}, at: new Date(Date.now() - 20_000) }]);
  gw.mesh.events.emit('news', 'machine', ['us-b']);
  await eventually(() => gw.mesh.status.current()?.machines.length === 5, 'a composition of the five machines');
});
afterAll(async () => {
  await agent?.close();
});

const names = (machines: { name: string }[]) => machines.map((m) => m.name);

test('status counts the machines of each site by state, sites by name and the machines of no site last', async () => {
  const { data, errors } = await gw.gql('{ status { seq sitesUnlisted sites { site up late silent } } }');
  expect(errors).toBeUndefined();
  expect(data.status.sitesUnlisted).toBe(0);
  expect(data.status.sites).toEqual([
    { site: 'eu-1', up: 2, late: 0, silent: 0 },
    { site: 'us-1', up: 1, late: 1, silent: 0 },
    { site: null, up: 1, late: 0, silent: 0 },
  ]);
});

test("status.machines(site:) answers one site's machines by name, null those of no site, and without it every machine as before", async () => {
  const query = 'query ($site: String) { status { machines(site: $site) { name site state } } }';
  const eu = await gw.gql(query, { site: 'eu-1' });
  expect(eu.errors).toBeUndefined();
  expect(eu.data.status.machines).toEqual([
    { name: 'eu-a', site: 'eu-1', state: 'UP' },
    { name: 'eu-b', site: 'eu-1', state: 'UP' },
  ]);
  const us = await gw.gql('{ status { machines(site: "us-1") { name state } } }');
  expect(us.data.status.machines).toEqual([
    { name: 'us-a', state: 'UP' },
    { name: 'us-b', state: 'LATE' },
  ]);
  expect(names((await gw.gql(query, { site: null })).data.status.machines)).toEqual(['lone-a']);
  expect(names((await gw.gql('{ status { machines(site: null) { name } } }')).data.status.machines)).toEqual(['lone-a']);
  expect(names((await gw.gql('{ status { machines(site: "nowhere") { name } } }')).data.status.machines)).toEqual([]);
  expect(names((await gw.gql(query, {})).data.status.machines)).toEqual(['eu-a', 'eu-b', 'lone-a', 'us-a', 'us-b']);
  expect(names((await gw.gql('{ status { machines { name } } }')).data.status.machines)).toEqual(['eu-a', 'eu-b', 'lone-a', 'us-a', 'us-b']);
});

test('the live status sends the counts by site alone, and one site’s machines, over graphql-ws and SSE, each new composition', async () => {
  const sites = wsSubscribe(gw.url, 'subscription { status(everyMs: 0) { seq sites { site up late silent } } }');
  const site = sseSubscribe(gw.url, 'subscription { status(everyMs: 0) { seq machines(site: "eu-1") { name state } } }');
  try {
    const [first] = await sites.atLeast(1);
    expect(Object.keys(first.status)).toEqual(['seq', 'sites']);
    expect(first.status.sites.find((s: { site: string }) => s.site === 'eu-1')).toEqual({ site: 'eu-1', up: 2, late: 0, silent: 0 });
    const [opened] = await site.atLeast(1);
    expect(names(opened.status.machines)).toEqual(['eu-a', 'eu-b']);

    // A third machine in eu-1: both are sent a composition naming it.
    agent.heartbeat(env.subjects, 'eu-c', { site: 'eu-1', modules: ['agent'] });
    const counted = await eventually(
      () => sites.items.find((s) => s.status.sites.find((c: { site: string }) => c.site === 'eu-1')?.up === 3),
      'the counts with eu-c',
    );
    expect(counted.status.sites.map((s: { site: string | null }) => s.site)).toEqual(['eu-1', 'us-1', null]);
    const shown = await eventually(() => site.items.find((s) => s.status.machines.length === 3), 'eu-1 with eu-c');
    expect(names(shown.status.machines)).toEqual(['eu-a', 'eu-b', 'eu-c']);
  } finally {
    sites.close();
    site.close();
  }
});

/** A machine of a composition made here, not composed: the counting is pure. */
const machine = (name: string, site: string | null, state: MachineStatus['state'] = 'UP'): MachineStatus => ({
  name,
  site,
  state,
  lastHeardAt: '2026-12-03T10:00:00.000Z',
  modules: [],
  holdings: [],
});
const composed = (machines: MachineStatus[]) => ({ seq: 1, machines }) as unknown as Composition;

test('sites are ordered by code unit (Z before a), counted once per composition, and listed up to their maximum with the rest counted', () => {
  const small = composed([machine('m1', 'a'), machine('m2', 'Z', 'SILENT'), machine('m3', null, 'LATE'), machine('m4', 'a', 'LATE')]);
  const counts = siteCounts(small);
  expect(counts.sites).toEqual([
    { site: 'Z', up: 0, late: 0, silent: 1 },
    { site: 'a', up: 1, late: 1, silent: 0 },
    { site: null, up: 0, late: 1, silent: 0 },
  ]);
  expect(siteCounts(small)).toBe(counts);
  expect(siteMachines(small, 'a').map((m) => m.name)).toEqual(['m1', 'm4']);

  const many = composed([
    ...Array.from({ length: SITES_LISTED_MAX + 5 }, (_, i) => machine(`m-${i}`, `site-${String(i).padStart(6, '0')}`)),
    machine('m-none', null),
  ]);
  const capped = siteCounts(many);
  expect(capped.unlisted).toBe(5);
  expect(capped.sites).toHaveLength(SITES_LISTED_MAX + 1);
  expect(capped.sites.at(-2)?.site).toBe(`site-${String(SITES_LISTED_MAX - 1).padStart(6, '0')}`);
  expect(capped.sites.at(-1)).toEqual({ site: null, up: 1, late: 0, silent: 0 });
});
