import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { HeardMachines } from '../../../src/services/news/heard-machines.js';
import { followHearing } from '../../../src/services/news/hearing-follower.js';
import { NATS_URL, uniqueName } from '../../fixtures/services.js';

// Issue 37, seen in the bad day at 100,000 machines: a replica started after a SIGKILL re-read
// every beat of the SILENT threshold (400,000 messages) and took the serving lease still behind.
// A start now reads the last message of each machine, and the window again only for the machines
// whose last message hides their last beat (a report).

let nc: NatsConnection;
const root = uniqueName('replay');
const stream = `${root}_news`;
beforeAll(async () => {
  nc = await connect({ servers: NATS_URL });
  await (await jetstreamManager(nc)).streams.add({ name: stream, subjects: [`${root}.news.>`] });
});
afterAll(async () => {
  await (await jetstreamManager(nc)).streams.delete(stream).catch(() => undefined);
  await nc?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Fills `<root>_news` as both tests read it: long-gone-1 beats once before the window (600 ms),
 * busy-1 beats five times in it, reporting-1 three times and then reports. Returns the instants the
 * stream stored busy-1's and reporting-1's last beats, and a beat that returns its own.
 */
async function fillTheWindow(root: string) {
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  /** Publishes and returns when the stream stored the message, in ms. */
  const publish = async (machine: string, body: Record<string, unknown>) => {
    const { seq } = await js.publish(`${root}.news.machine.${machine}`, JSON.stringify(body));
    return Date.parse((await jsm.streams.getMessage(`${root}_news`, { seq }))!.timestamp);
  };
  const beat = (machine: string) => publish(machine, { kind: 'heartbeat', site: 'eu-1', modules: ['broker'] });
  await beat('long-gone-1');
  await sleep(800);
  let busyLast = 0;
  for (let i = 0; i < 5; i++) busyLast = await beat('busy-1');
  let reportingLast = 0;
  for (let i = 0; i < 3; i++) reportingLast = await beat('reporting-1');
  await publish('reporting-1', { kind: 'report', plan: 'p-1', build: 'b-1', ok: true });
  return { busyLast, reportingLast, beat };
}

test("a start reads each machine's last message, and the beats before a report again, and knows every machine's last beat in the window", async () => {
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const { busyLast, reportingLast, beat } = await fillTheWindow(root);
  await js.publish(`${root}.news.build.b-1`, JSON.stringify({ kind: 'built' }));

  const lines: { msg: string; lastOfEach?: number; machinesWithReportLast?: number; reread?: number }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const heard = new HeardMachines();
  const follower = await followHearing({ js, jsm, stream, root, replayMs: 600, logger }, heard);
  try {
    await follower.caughtUp;
    expect(Math.abs(heard.lastMs('busy-1')! - busyLast)).toBeLessThan(1);
    expect(Math.abs(heard.lastMs('reporting-1')! - reportingLast)).toBeLessThan(1);
    expect(heard.lastMs('long-gone-1')).toBeUndefined(); // older than the window: SILENT whatever it said
    const rebuilt = lines.find((l) => l.msg.startsWith('hearing rebuilt'));
    // One message a subject (three machines and one build), not the ten the stream holds.
    expect(rebuilt).toMatchObject({ lastOfEach: 4, machinesWithReportLast: 1 });
    expect(rebuilt!.reread).toBeGreaterThanOrEqual(9);
    // The re-read's consumer is gone: only the follower's own is left on the stream.
    expect(await jsm.consumers.list(stream).next()).toHaveLength(1);

    // And it goes on following: a beat published now is heard.
    const now = await beat('busy-1');
    await expect.poll(() => heard.lastMs('busy-1'), { timeout: 5_000 }).toBeGreaterThanOrEqual(now - 1);
  } finally {
    follower.stop();
  }
  // Stopped, it leaves no consumer on the server counting the stream as pending.
  await expect.poll(async () => (await jsm.consumers.list(stream).next()).map((c) => c.name), { timeout: 15_000 }).toEqual([]);
});

test('a start on a stream of more subjects than it asks the last of each for reads every message of the window by time, and knows every last beat', async () => {
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const wide = `${root}w`;
  const wideStream = `${wide}_news`;
  await jsm.streams.add({ name: wideStream, subjects: [`${wide}.news.>`] });
  try {
    const { busyLast, reportingLast, beat } = await fillTheWindow(wide);

    const lines: { msg: string; window?: number; subjects?: number; lastOfEach?: number }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const heard = new HeardMachines();
    // Three subjects stored, more than the one this start may ask the last of each for.
    const follower = await followHearing({ js, jsm, stream: wideStream, root: wide, replayMs: 600, logger, lastPerSubjectAtMost: 1 }, heard);
    try {
      await follower.caughtUp;
      expect(Math.abs(heard.lastMs('busy-1')! - busyLast)).toBeLessThan(1);
      expect(Math.abs(heard.lastMs('reporting-1')! - reportingLast)).toBeLessThan(1);
      expect(heard.lastMs('long-gone-1')).toBeUndefined();
      // Every message of the window (five beats, three, and the report), none asked for again.
      expect(lines.find((l) => l.msg.startsWith('hearing rebuilt'))).toMatchObject({ window: 9, subjects: 3 });
      expect(await jsm.consumers.list(wideStream).next()).toHaveLength(1);
      const now = await beat('busy-1');
      await expect.poll(() => heard.lastMs('busy-1'), { timeout: 5_000 }).toBeGreaterThanOrEqual(now - 1);
    } finally {
      follower.stop();
    }
  } finally {
    await jsm.streams.delete(wideStream).catch(() => undefined);
  }
});
