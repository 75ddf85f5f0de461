import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpus, loadavg, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { type DocumentNode, execute, parse } from 'graphql';
import pino from 'pino';
import { ensureStatusStream, statusStreamName } from '../src/bus/status-stream.js';
import { schema } from '../src/schema/index.js';
import { deltaChange, fullChange, type StatusDelta } from '../src/services/status/delta/delta.js';
import { mergeDeltas } from '../src/services/status/delta/delta-chain.js';
import { type RunningStatusFeed, startStatusFeed } from '../src/services/status/live/feed.js';
import { StatusHistory } from '../src/services/status/looking-back/history.js';
import type { StatusStreamLink } from '../src/services/status/replicating/stream-follower.js';
import { aComposition, oneMachineChanged } from '../test/fixtures/compositions.js';

// The status stream's costs, measured on the stream itself (NATS on 127.0.0.1) with compositions
// of the shape the composer makes (test/fixtures/compositions.ts): no store, no composing.
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const QUICK = process.env.BENCH_QUICK === '1';
const SIZES = QUICK ? [1_000, 10_000] : [1_000, 10_000, 100_000];
const CHANGES_PER_SIZE = 20;
/** A dashboard away 30 s at 4 compositions a second (COMPOSE_MIN_GAP_MS) misses 120. */
const AWAY = 120;
/** History shaped as the composer makes it: a snapshot every minute, 240 deltas between (4 a second). */
const HISTORY_MINUTES = QUICK ? 4 : Number(process.env.BENCH_HISTORY_MINUTES ?? 30);
const DELTAS_PER_MINUTE = 240;
const STATUS_AT_RUNS = 10;

const logger = pino({ level: 'silent' });
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const name = (prefix: string) => `${prefix}_${randomBytes(4).toString('hex')}`;

const FIELDS = `{ seq composedAt tookMs trigger machines { name site state lastHeardAt modules holdings { seat module derived } }
  seats { name held holders { machine module site derived } } unheldSeats callsRunning handActsThisWeek
  repeatedCauses { cause count firstAt lastAt } plans { id seat build state tier tiers behind openedAt endedAt stopReason } }`;
const LIST = (item: string) => `{ added { ${item} } addedAt changed { ${item} } removed order }`;
const CHANGES: DocumentNode = parse(`subscription Changes { statusChanges { seq baseSeq full ${FIELDS} delta { seq baseSeq composedAt tookMs trigger
  machines ${LIST('name site state lastHeardAt modules holdings { seat module derived }')}
  seats ${LIST('name held holders { machine module site derived }')}
  plans ${LIST('id seat build state tier tiers behind openedAt endedAt stopReason')}
  repeatedCauses ${LIST('cause count firstAt lastAt')}
  unheldSeats { added addedAt removed order } callsRunning handActsThisWeek } } }`);

/** The bytes of one statusChanges message as the fan-out serializes it (the same execution over the same root value). */
async function payloadBytes(root: unknown): Promise<number> {
  const result = await execute({ schema, document: CHANGES, rootValue: root, contextValue: { caller: { name: 'bench', scopes: new Set(['read']) } } });
  if (result.errors) throw new Error(JSON.stringify(result.errors));
  return Buffer.byteLength(JSON.stringify(result));
}

interface Setup {
  nc: NatsConnection;
  link: StatusStreamLink;
  stream: string;
  feed: RunningStatusFeed;
  close(): Promise<void>;
}

async function setup(): Promise<Setup> {
  const nc = await connect({ servers: NATS_URL });
  const jsm = await jetstreamManager(nc);
  const controller = name('bench_ctl');
  const root = name('bench_mesh');
  const made = await ensureStatusStream(jsm, controller, root);
  const link: StatusStreamLink = { js: jetstream(nc), jsm, ...made, askSnapshot: () => undefined };
  const feed = startStatusFeed(nc, `${root}.status`, logger, undefined, link);
  return {
    nc,
    link,
    stream: statusStreamName(controller),
    feed,
    async close() {
      await feed.stop();
      await jsm.streams.delete(statusStreamName(controller)).catch(() => undefined);
      await nc.close();
    },
  };
}

/** Bytes the stream grew by while `act` ran. */
async function streamBytes(s: Setup, act: () => Promise<void>): Promise<number> {
  const before = (await s.link.jsm.streams.info(s.stream)).state.bytes;
  await act();
  return (await s.link.jsm.streams.info(s.stream)).state.bytes - before;
}

async function bytesPerChange(lines: string[]): Promise<void> {
  lines.push('### Bytes on NATS per composition, one machine changed', '');
  lines.push('| machines | snapshot (once a minute, and on `<subjects>.status`) | per composition (a delta) | ratio to 1,000 |', '|---|---|---|---|');
  let first: number | undefined;
  for (const machines of SIZES) {
    const s = await setup();
    let c = aComposition(1, machines);
    const snapshot = await streamBytes(s, () => s.feed.publish!(c, 'start'));
    const total = await streamBytes(s, async () => {
      for (let i = 0; i < CHANGES_PER_SIZE; i++) await s.feed.publish!((c = oneMachineChanged(c, c.seq + 1, (i * 7919) % machines)), 'news');
    });
    const per = total / CHANGES_PER_SIZE;
    first ??= per;
    lines.push(`| ${machines.toLocaleString('en')} | ${kb(snapshot)} | ${(per / 1024).toFixed(2)} KB | ${(per / first).toFixed(2)}× |`);
    await s.close();
  }
  lines.push('');
}

async function resumeBytes(lines: string[]): Promise<void> {
  const s = await setup();
  let c = aComposition(1, 10_000);
  await s.feed.publish!(c, 'start');
  const full = await payloadBytes(fullChange(s.feed.current()!));
  const held = s.feed.current()!.seq;
  for (let i = 0; i < AWAY; i++) await s.feed.publish!((c = oneMachineChanged(c, c.seq + 1, (i * 7919) % 10_000)), 'news');
  const since = s.feed.changesAfter(held) as StatusDelta[];
  // What the fan-out sends a subscriber resuming: the chain merged into one delta.
  const bytes = await payloadBytes(deltaChange(mergeDeltas(since, s.feed.current()!)));
  let separate = 0;
  for (const d of since) separate += await payloadBytes(deltaChange(d));
  lines.push('### A dashboard away 30 s resumes (`statusChanges(after:)`, 10,000 machines)', '');
  lines.push(
    `${AWAY} compositions missed (30 s at 4 a second), each one machine changed: the ${since.length} deltas merged into one message of ${kb(bytes)}, against ${kb(full)} for one whole composition: **${((100 * bytes) / full).toFixed(2)}%** (target ≤ 5%). Sent one by one they would be ${kb(separate)} (${((100 * separate) / full).toFixed(2)}%): the empty lists of each message cost more than the machine it names. Bytes are the GraphQL payloads as the fan-out serializes them (every field selected), without the ~40 bytes of graphql-ws framing per message.`,
    '',
  );
  await s.close();
}

async function statusAtBack(lines: string[]): Promise<void> {
  const s = await setup();
  let c = aComposition(1, 10_000);
  const seqs: number[] = [];
  const started = performance.now();
  for (let minute = 0; minute < HISTORY_MINUTES; minute++) {
    await s.feed.publish!(c, 'takeover'); // the minute's snapshot
    for (let i = 0; i < DELTAS_PER_MINUTE; i++) {
      c = oneMachineChanged(c, c.seq + 1, (minute * DELTAS_PER_MINUTE + i) % 10_000);
      await s.feed.publish!(c, 'news');
      // The worst case of each minute: the last composition before the next snapshot.
      if (i === DELTAS_PER_MINUTE - 1) seqs.push(c.seq);
    }
    c = oneMachineChanged(c, c.seq + 1);
  }
  const filled = performance.now() - started;
  const info = await s.link.jsm.streams.info(s.stream);
  const times: number[] = [];
  for (let run = 0; run < STATUS_AT_RUNS; run++) {
    const seq = seqs[run % seqs.length]!;
    const t = performance.now();
    // A history of its own each run: nothing cached.
    const got = await new StatusHistory(s.link, s.feed).statusAt({ seq });
    times.push(performance.now() - t);
    if (got.seq !== seq || got.machines.length !== 10_000) throw new Error('statusAt answered another composition');
  }
  lines.push('### `statusAt` back in time (10,000 machines)', '');
  lines.push(
    `A stream of ${HISTORY_MINUTES} minutes as the composer fills it (a snapshot a minute, ${DELTAS_PER_MINUTE} deltas between): ${info.state.messages.toLocaleString('en')} messages, ${mb(info.state.bytes)}, written in ${(filled / 1000).toFixed(0)} s. ` +
      `\`statusAt(seq:)\` of the last composition before a snapshot (the most deltas to apply), uncached, ${STATUS_AT_RUNS} runs over ${seqs.length} seqs: median **${median(times).toFixed(0)} ms**, max ${Math.max(...times).toFixed(0)} ms (target < 500 ms). ` +
      `12 hours hold 720 snapshots and ${(720 * DELTAS_PER_MINUTE).toLocaleString('en')} deltas: the binary search takes ${Math.ceil(Math.log2(720 * (DELTAS_PER_MINUTE + 1)))} reads instead of ${Math.ceil(Math.log2(info.state.messages))}; the rest (one snapshot, at most a minute of deltas) does not grow with the age.`,
    '',
  );
  await s.close();
}

/** A replica's RSS: a child process following the stream (the feed alone) at `machines`. */
async function replicaRss(lines: string[], machines: number): Promise<void> {
  const s = await setup();
  let c = aComposition(1, machines);
  await s.feed.publish!(c, 'start');
  for (let i = 0; i < 50; i++) await s.feed.publish!((c = oneMachineChanged(c, c.seq + 1, (i * 7919) % machines)), 'news');
  const last = c.seq;
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(import.meta.url), '--replica', JSON.stringify({ stream: s.stream, subjects: s.link.subjects, last })],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  // Live deltas while it follows.
  const live = setInterval(() => void s.feed.publish!((c = oneMachineChanged(c, c.seq + 1)), 'news').catch(() => undefined), 250);
  await new Promise((resolve) => child.on('exit', resolve));
  clearInterval(live);
  const reply = JSON.parse(out.trim().split('\n').at(-1)!);
  lines.push(
    `### Replica memory at ${machines.toLocaleString('en')} machines`,
    '',
    `A replica process following the stream (the status feed alone: last snapshot, ${reply.deltas} deltas applied, then 10 s of live ones at 4 a second): caught up in ${reply.caughtUpMs} ms, RSS **${mb(reply.rss)}** (heap used ${mb(reply.heapUsed)}) (target < 1 GB for the whole gateway; its HTTP server, schema and pool add their base on top).`,
    '',
  );
  await s.close();
}

async function replicaRole(arg: string): Promise<void> {
  const { stream, subjects, last } = JSON.parse(arg);
  const nc = await connect({ servers: NATS_URL });
  const link: StatusStreamLink = { js: jetstream(nc), jsm: await jetstreamManager(nc), stream, subjects, askSnapshot: () => undefined };
  const t = performance.now();
  const feed = startStatusFeed(nc, `${subjects.all}-unused`, logger, undefined, link);
  while ((feed.current()?.seq ?? 0) < last) await new Promise((r) => setTimeout(r, 20));
  const caughtUpMs = Math.round(performance.now() - t);
  await new Promise((r) => setTimeout(r, 10_000));
  global.gc?.();
  const { rss, heapUsed } = process.memoryUsage();
  process.stdout.write(`${JSON.stringify({ rss, heapUsed, caughtUpMs, deltas: feed.streamStats().deltas })}\n`);
  await feed.stop();
  await nc.close();
  process.exit(0);
}

export async function run(): Promise<string> {
  const lines = [
    `Machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${mb(totalmem())} RAM, load ${loadavg()[0].toFixed(1)} at start; NATS ${NATS_URL}.`,
    '',
  ];
  // BENCH_STREAM_ONLY=bytes,resume,statusAt,rss runs only those parts.
  const only = process.env.BENCH_STREAM_ONLY?.split(',');
  const part = (name: string) => !only || only.includes(name);
  if (part('bytes')) await bytesPerChange(lines);
  if (part('resume')) await resumeBytes(lines);
  if (part('statusAt')) await statusAtBack(lines);
  if (part('rss')) await replicaRss(lines, QUICK ? 10_000 : 100_000);
  return lines.join('\n');
}

const roleAt = process.argv.indexOf('--replica');
if (roleAt >= 0) await replicaRole(process.argv[roleAt + 1]!);
