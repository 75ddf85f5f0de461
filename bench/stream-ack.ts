import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { ensureStatusStream, statusStreamName } from '../src/bus/status-stream.js';
import { diffCompositions } from '../src/services/status/delta/delta.js';
import { encodeStreamEntry } from '../src/services/status/replicating/encode.js';
import { aComposition, oneMachineChanged } from '../test/fixtures/compositions.js';

// What the serving replica's wait for the status stream's acknowledgement costs (issue 24,
// docs/status.md): puts as statusPublisher makes them, one after another, each expecting the last.
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const MACHINES = 1_000;
const PUTS = Number(process.env.BENCH_PUTS ?? 200);

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

/** `npm run bench -- stream-ack`: time of a delta put and of a snapshot put, and of a core NATS round trip beside them. */
export async function run(): Promise<string> {
  const nc = await connect({ servers: NATS_URL });
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const controller = `bench_ack_${randomBytes(3).toString('hex')}`;
  const made = await ensureStatusStream(jsm, controller, `bench_ack_${randomBytes(3).toString('hex')}`);
  const lines: string[] = [
    `load average at the start ${loadavg()
      .map((l) => l.toFixed(2))
      .join(', ')}`,
  ];
  try {
    const maxPayload = nc.info?.max_payload ?? 1024 * 1024;
    let composition = aComposition(1, MACHINES);
    let last: number | undefined;
    const put = async (subject: string, data: Uint8Array, headers: unknown) => {
      const t0 = performance.now();
      const ack = await js.publish(subject, data, { headers: headers as never, expect: last === undefined ? undefined : { lastSequence: last } });
      last = ack.seq;
      return performance.now() - t0;
    };
    const deltas: number[] = [];
    const snapshots: number[] = [];
    let deltaBytes = 0;
    let snapshotBytes = 0;
    for (let i = 0; i < PUTS; i++) {
      const next = oneMachineChanged(composition, composition.seq + 1);
      const delta = diffCompositions(composition, next);
      composition = next;
      const [entry] = await encodeStreamEntry('delta', delta, maxPayload, { base: delta.baseSeq });
      deltaBytes = entry!.data.length;
      deltas.push(await put(made.subjects.delta, entry!.data, entry!.headers));
      if (i % 4 === 0) {
        const parts = await encodeStreamEntry('snapshot', composition, maxPayload, {});
        snapshotBytes = parts.reduce((sum, p) => sum + p.data.length, 0);
        let ms = 0;
        for (const part of parts) ms += await put(made.subjects.snapshot, part.data, part.headers);
        snapshots.push(ms);
      }
    }
    const roundTrips: number[] = [];
    for (let i = 0; i < PUTS; i++) {
      const t0 = performance.now();
      await nc.flush();
      roundTrips.push(performance.now() - t0);
    }
    const show = (xs: number[]) => `median ${quantile(xs, 0.5).toFixed(2)} ms, p90 ${quantile(xs, 0.9).toFixed(2)} ms, max ${Math.max(...xs).toFixed(2)} ms`;
    lines.push(
      `delta put (${deltaBytes} B, ${deltas.length} puts, R1 file stream): ${show(deltas)}`,
      `snapshot put (${(snapshotBytes / 1024).toFixed(1)} KB, ${MACHINES} machines, ${snapshots.length} puts): ${show(snapshots)}`,
      `core NATS round trip (flush) beside them: ${show(roundTrips)}`,
      `load average at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(', ')}`,
    );
  } finally {
    await jsm.streams.delete(statusStreamName(controller)).catch(() => undefined);
    await nc.close();
  }
  return lines.join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(await run());
  process.exit(0);
}
