import { cpus, loadavg } from 'node:os';
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { HeardMachines } from '../src/services/news/heard-machines.js';
import { followHearing } from '../src/services/news/hearing-follower.js';
import { judgeNews } from '../src/services/news/wire.js';

// A start's rebuild of hearing (issue 37): a stream of MACHINES machines' last BEATS beats each (the
// SILENT threshold of news: 7 at 10 s beats, 7 at 60 s), read by the follower as it starts now (the
// last message of each machine, `followHearing`), against what a start did before (every message of
// the window, each judged and noted). On the shared NATS, a stream of the bench's own, deleted after.
const MACHINES = Number(process.env.BENCH_MACHINES ?? 100_000);
const BEATS = Number(process.env.BENCH_BEATS ?? 7);
const ROUNDS = 2;
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

export async function run(): Promise<string> {
  const nc = await connect({ servers: NATS_URL });
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const root = `replay${process.pid}`;
  const stream = `${root}_news`;
  await jsm.streams.add({ name: stream, subjects: [`${root}.news.>`] });
  const lines = [
    `machine: ${cpus().length} cores, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  ];
  try {
    const body = JSON.stringify({ kind: 'heartbeat', site: 'eu-1', modules: ['broker', 'cache'] });
    for (let beat = 0; beat < BEATS; beat++) {
      for (let i = 0; i < MACHINES; i++) {
        js.publish(`${root}.news.machine.m-${i}`, body).catch(() => undefined);
        if (i % 2_000 === 0) await nc.flush();
      }
      await nc.flush();
    }
    while ((await jsm.streams.info(stream)).state.messages < MACHINES * BEATS) await new Promise((resolve) => setTimeout(resolve, 200));
    lines.push(`stream: ${MACHINES} machines × ${BEATS} beats = ${MACHINES * BEATS} messages`);

    /** What a start did before: every message of the window, each judged and its beat noted. */
    const wholeWindow = async () => {
      const started = performance.now();
      const heard = new HeardMachines();
      const last = (await jsm.streams.info(stream)).state.last_seq;
      const consumer = await js.consumers.get(stream, { deliver_policy: DeliverPolicy.All });
      const messages = await consumer.consume({ max_messages: 5_000 });
      let read = 0;
      for await (const msg of messages) {
        read++;
        const storedMs = msg.info.timestampNanos / 1e6;
        const news = judgeNews(root, msg.subject, msg.data, new Date(storedMs));
        if (news.type === 'heartbeat') heard.note(news.heartbeat.machine, storedMs, storedMs);
        if (msg.seq >= last) break;
      }
      await consumer.delete().catch(() => undefined);
      return { ms: performance.now() - started, read, heard: heard.size };
    };
    /** A start now: `followHearing` until caught up. */
    const lastOfEach = async () => {
      const started = performance.now();
      const heard = new HeardMachines();
      const follower = await followHearing({ js, jsm, stream, root, replayMs: 3_600_000 }, heard);
      await follower.caughtUp;
      const ms = performance.now() - started;
      follower.stop();
      return { ms, read: MACHINES, heard: heard.size };
    };
    lines.push('', '| round | every message of the window (before) | the last message of each machine (now) | ratio |', '|---|---|---|---|');
    for (let round = 1; round <= ROUNDS; round++) {
      const before = await wholeWindow();
      const now = await lastOfEach();
      if (before.heard !== MACHINES || now.heard !== MACHINES) throw new Error(`not every machine heard: ${before.heard}, ${now.heard}`);
      lines.push(
        `| ${round} | ${before.ms.toFixed(0)} ms (${before.read} messages) | ${now.ms.toFixed(0)} ms (${now.read} messages) | ${(before.ms / now.ms).toFixed(1)}× |`,
      );
    }
    lines.push(
      '',
      `load after: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    await jsm.streams.delete(stream).catch(() => undefined);
    await nc.close();
  }
  return lines.join('\n');
}
