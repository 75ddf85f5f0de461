import type { Registry } from 'prom-client';
import type { Mesh } from '../../services/mesh.js';
import type { NewsIngest } from '../../services/news/ingest.js';
import { readCounter, readGauge } from './read.js';

/** The news: how far behind its hearing and writing are, and what the ingest counted. */
export function newsMetrics(registry: Registry, mesh: Pick<Mesh, 'hearing'>, ingest: Pick<NewsIngest, 'stats' | 'partitions'> | undefined): void {
  const news = ingest?.stats;
  readGauge(
    registry,
    'mesh_news_lag_seconds',
    'How far the oldest news not yet heard by this replica, or not yet written, is behind its clock; 0 when caught up. States are judged at the instant heard up to (docs/status.md).',
    () => mesh.hearing.lagMs() / 1000,
  );
  readGauge(
    registry,
    'mesh_news_pending',
    'News messages stored in the news stream and not yet written (past the lowest partition mark), or not yet heard by this replica: the larger.',
    () => mesh.hearing.current().pending,
  );
  readGauge(
    registry,
    'mesh_news_partitions',
    'Partitions of the news (of 64) this replica writes now: its share of the writing (docs/deploy.md).',
    () => ingest?.partitions().length,
  );
  readGauge(
    registry,
    'mesh_hearing_partitions_judged',
    "Partitions of the news (of 64) this replica's hearing judges now: their beats parsed here and sent to the other replicas (docs/status.md).",
    () => mesh.hearing.judged().length,
  );
  readCounter(
    registry,
    'mesh_hearing_shared_beats_total',
    'Beats this replica judged and sent to the other replicas in its shares of hearing.',
    () => mesh.hearing.shared().sent,
  );
  readCounter(registry, 'mesh_hearing_taken_beats_total', "Beats taken from the other replicas' shares of hearing.", () => mesh.hearing.shared().taken);
  readCounter(
    registry,
    'mesh_hearing_shares_refused_total',
    'Shares of hearing refused: unsealed, forged or unreadable (anyone on NATS may publish there).',
    () => mesh.hearing.shared().refused,
  );
  readCounter(
    registry,
    'mesh_news_received_total',
    'News messages of the partitions this replica writes, read from the stream (each once).',
    () => news?.received,
  );
  readCounter(registry, 'mesh_news_ingested_total', 'News messages written to the store.', () => news?.ingested);
  readCounter(registry, 'mesh_news_malformed_total', 'News messages refused by the wire contract (dropped).', () => news?.malformed);
  readCounter(registry, 'mesh_news_dropped_total', 'Valid news the store refused alone (poison: found by splitting its batch, dropped).', () => news?.poison);
  readCounter(
    registry,
    'mesh_news_redelivered_total',
    'News dropped unwritten while the store was away (read from the stream again).',
    () => news?.redelivered,
  );
}
