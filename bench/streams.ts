import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { newsStreamName } from '../src/bus/news-stream.js';
import { statusStreamName } from '../src/bus/status-stream.js';

/**
 * Deletes every stream a gateway of `controller` makes on the shared NATS (its buckets, news and
 * status streams), so bench runs do not pile up reservations in the server's JetStream store.
 * Best effort: a NATS that cannot be reached leaves them (and says so).
 */
export async function deleteControllerStreams(natsUrl: string, controller: string): Promise<void> {
  const nc = await connect({ servers: natsUrl }).catch(() => undefined);
  if (!nc) {
    console.error(`bench: could not reach ${natsUrl} to delete the streams of ${controller}`);
    return;
  }
  try {
    const jsm = await jetstreamManager(nc);
    const mine = (name: string) => name.startsWith(`KV_${controller}_`) || name === newsStreamName(controller) || name === statusStreamName(controller);
    for await (const s of jsm.streams.list()) if (mine(s.config.name)) await jsm.streams.delete(s.config.name);
  } finally {
    await nc.close();
  }
}
