import { cpus, loadavg } from 'node:os';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { HeardMachines } from '../src/services/news/heard-machines.js';
import { followHearing } from '../src/services/news/hearing-follower.js';

// A start's rebuild of hearing (issue 37): a stream of MACHINES machines' last BEATS beats each (the
// SILENT threshold of news: 7 at 10 s beats, 7 at 60 s), read by the follower as it starts
// (`followHearing`) both ways it can: every message of the window by time, and the last message of
// each machine; and what asking for the last of each costs the stream (NATS 2.9 holds it while it
// makes the consumer: LAST_PER_SUBJECT_SUBJECTS_AT_MOST). On the shared NATS, a stream of the
// bench's own, deleted after.
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

    /** A start: `followHearing` until caught up, reading the last message of each machine or every message of the window by time. */
    const start = async (lastOfEach: boolean) => {
      const started = performance.now();
      const heard = new HeardMachines();
      const follower = await followHearing(
        { js, jsm, stream, root, replayMs: 3_600_000, lastPerSubjectAtMost: lastOfEach ? Number.POSITIVE_INFINITY : 0 },
        heard,
      );
      await follower.caughtUp;
      const ms = performance.now() - started;
      follower.stop();
      if (heard.size !== MACHINES) throw new Error(`not every machine heard: ${heard.size}`);
      return ms;
    };
    /**
     * What making a last-per-subject consumer costs the stream: how long NATS takes to make it, and
     * how long a machine's beat published just after the ask waits for the stream to store it.
     */
    const hold = async () => {
      const asked = performance.now();
      const made = jsm.consumers
        .add(stream, { deliver_policy: DeliverPolicy.LastPerSubject, filter_subject: `${root}.news.>`, ack_policy: AckPolicy.None, inactive_threshold: 60e9 })
        .then((info) => ({ ms: performance.now() - asked, name: info.name }));
      await new Promise((resolve) => setTimeout(resolve, 5));
      const published = performance.now();
      await js.publish(`${root}.news.machine.m-0`, body, { timeout: 120_000 });
      const beatMs = performance.now() - published;
      const { ms, name } = await made;
      await jsm.consumers.delete(stream, name).catch(() => undefined);
      return { ms, beatMs };
    };
    lines.push(
      '',
      '| round | every message of the window, by time | the last message of each machine | making a last-per-subject consumer; a beat stored meanwhile after |',
      '|---|---|---|---|',
    );
    for (let round = 1; round <= ROUNDS; round++) {
      const byTime = await start(false);
      // Past LAST_PER_SUBJECT_SUBJECTS_AT_MOST NATS may not make it within the client's time: that is the figure.
      const lastOfEach = await start(true).catch((err: Error) => `${err.name} (${err.message})`);
      const held = await hold();
      lines.push(
        `| ${round} | ${byTime.toFixed(0)} ms (${MACHINES * BEATS} messages) | ${typeof lastOfEach === 'string' ? lastOfEach : `${lastOfEach.toFixed(0)} ms (${MACHINES} messages)`} | ${held.ms.toFixed(0)} ms; ${held.beatMs.toFixed(0)} ms |`,
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
