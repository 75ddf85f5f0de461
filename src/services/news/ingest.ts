import type { Consumer, JsMsg } from '@nats-io/jetstream';
import { NEWS_WORKING_EVERY_MS } from '../../bus/news-stream.js';
import type { IngestMesh } from './batch.js';
import { startCheckpointing } from './checkpoints.js';
import { malformedLog } from './malformed-log.js';
import { NewsPuller } from './news-puller.js';
import { type NewsStats, NewsWriter } from './news-writer.js';
import { judgeNews } from './wire.js';

export interface NewsIngest {
  stats: NewsStats;
  /** Resolves once everything received so far is written (or handed back) and its checkpoint too; logs the malformed news counted and not yet logged. */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Pulls machine and build news from the controller's news stream through its one durable
 * consumer (shared by every replica, so each message is written by one replica): `NewsPuller`
 * pulls while there is room, each message is judged as it arrives (a malformed one is counted,
 * logged and acknowledged), and `NewsWriter` writes them in batches, acknowledging each message
 * once its batch is written; a beat that changes nothing stored is owed to the checkpoint, which
 * `startCheckpointing` writes spread over MESH_CHECKPOINT_S (issue 37).
 */
export function startNewsIngest(mesh: IngestMesh, consumer: Pick<Consumer, 'fetch'>): NewsIngest {
  const stats: NewsStats = { received: 0, ingested: 0, malformed: 0, poison: 0, redelivered: 0, batches: 0 };
  const malformed = malformedLog(mesh.logger);
  const writer = new NewsWriter(mesh, stats, () => puller.wake());
  const checkpointing = startCheckpointing(mesh.db, mesh.hearing.owed, mesh.logger);

  const onMessage = (msg: JsMsg) => {
    if (!writer.takeHandedBack(msg.seq)) stats.received++;
    // Heard when the stream stored it: news written after an outage keeps the instant it was sent.
    const heardAt = new Date(Math.min(Date.now(), msg.info.timestampNanos / 1e6));
    const news = judgeNews(mesh.subjects.root, msg.subject, msg.data, heardAt);
    if (news.type === 'malformed') {
      stats.malformed++;
      msg.term();
      malformed.note({ subject: msg.subject, reason: news.reason, bytes: msg.data.length });
      return;
    }
    writer.add({ news, msg, touchedAt: Date.now() });
  };
  const puller = new NewsPuller(consumer, writer, onMessage, mesh.logger);

  // What is held longer than NEWS_WORKING_EVERY_MS is told to the stream as being worked on, so it
  // is not delivered again to another replica while this one writes it (a slow store); a replica
  // that froze or died stops telling, and its news goes to another after NEWS_ACK_WAIT_MS.
  const working = setInterval(() => writer.stillWorking(Date.now() - NEWS_WORKING_EVERY_MS), NEWS_WORKING_EVERY_MS);
  working.unref();

  const flush = async () => {
    malformed.drain();
    await writer.flush();
    await checkpointing.flush();
  };

  return {
    stats,
    flush,
    async stop() {
      clearInterval(working);
      await puller.stop();
      malformed.drain();
      await writer.stop();
      await checkpointing.stop();
      malformed.stop();
    },
  };
}
