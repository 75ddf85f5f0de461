import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { NATS_URL } from './fixtures/services.js';

/**
 * vitest's global setup: keeps one small stream on the shared NATS server while the files run, and
 * removes it after. NATS 2.9 deletes the account's store folder when its last stream is deleted, and
 * a stream another file creates at that moment fails ("error creating store for stream": its
 * folder is gone). On a server with no other streams, files removing their last stream as others
 * start hit that race; with this stream kept, the folder stays.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const name = `mesh_test_keeper_${randomBytes(4).toString('hex')}`;
  const nc = await connect({ servers: NATS_URL });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name, subjects: [`${name}.none`], max_msgs: 1 });
  return async () => {
    await jsm.streams.delete(name).catch(() => undefined);
    await nc.close();
  };
}
