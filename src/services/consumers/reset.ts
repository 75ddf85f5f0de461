import { type ConsumerConfig, type ConsumerInfo, DeliverPolicy } from '@nats-io/jetstream';
import type { Bus } from '../../bus/nats.js';
import { Conflict, Invalid, NotFound } from '../../kernel/errors.js';
import { checkName } from '../../kernel/names.js';

export interface ConsumerResetRequest {
  stream: string;
  consumer: string;
  /** Deliver from this stream sequence instead of the first message. */
  startSeq?: number | null;
  /** Deliver from the first message at or after this instant instead. */
  startTime?: string | Date | null;
}

/** What a reset did: where delivery starts again and how many messages were pending before and after. */
export interface ConsumerReset {
  stream: string;
  consumer: string;
  deliverPolicy: string;
  startSeq: number | null;
  startTime: string | null;
  pendingBefore: number;
  pendingAfter: number;
}

function notFound(error: unknown, stream: string, consumer: string): never {
  const message = (error as Error).message ?? '';
  if (/stream not found/i.test(message)) throw new NotFound('stream', stream);
  if (/consumer not found/i.test(message)) throw new NotFound('consumer', `${stream}/${consumer}`);
  throw error;
}

/** What resetting a consumer needs of the mesh: the JetStream manager. */
export interface ConsumersMesh {
  bus: Pick<Bus, 'jsm'>;
}

/**
 * Resets a JetStream durable consumer for real (2.9 has no reset API): reads its configuration,
 * deletes it and creates it again under the same name with that configuration, delivery starting
 * from the stream's first message — or from `startSeq` / `startTime` when given. Acknowledgements,
 * redeliveries and pending pulls of the old consumer are gone; its clients keep their binding by
 * name. Refuses an ephemeral consumer (Conflict: nothing would keep it), an unknown stream or
 * consumer (NotFound), both starts at once (Invalid). If creating it again fails, the old
 * configuration is put back and the error thrown.
 */
export async function resetConsumer(mesh: ConsumersMesh, request: ConsumerResetRequest): Promise<ConsumerReset> {
  const { stream, consumer } = request;
  checkName(stream, 'stream');
  checkName(consumer, 'consumer');
  if (request.startSeq != null && request.startTime != null) throw new Invalid('give startSeq or startTime, not both', 'startSeq');
  if (request.startSeq != null && (!Number.isSafeInteger(request.startSeq) || request.startSeq < 1))
    throw new Invalid('startSeq must be a sequence ≥ 1', 'startSeq');
  const startTime = request.startTime == null ? null : new Date(request.startTime);
  if (startTime && Number.isNaN(startTime.getTime())) throw new Invalid('startTime must be an ISO 8601 instant', 'startTime');
  const { jsm } = mesh.bus;
  let before: ConsumerInfo;
  try {
    before = await jsm.consumers.info(stream, consumer);
  } catch (error) {
    notFound(error, stream, consumer);
  }
  if (!before.config.durable_name) throw new Conflict(`consumer ${stream}/${consumer} is ephemeral: only a durable consumer can be reset`);
  const { opt_start_seq: _seq, opt_start_time: _time, deliver_policy: _policy, ...kept } = before.config;
  const config: Partial<ConsumerConfig> = { ...kept };
  if (request.startSeq != null) Object.assign(config, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: request.startSeq });
  else if (startTime) Object.assign(config, { deliver_policy: DeliverPolicy.StartTime, opt_start_time: startTime.toISOString() });
  else config.deliver_policy = DeliverPolicy.All;
  await jsm.consumers.delete(stream, consumer);
  let after: ConsumerInfo;
  try {
    after = await jsm.consumers.add(stream, config);
  } catch (error) {
    await jsm.consumers.add(stream, before.config).catch(() => undefined);
    throw error;
  }
  return {
    stream,
    consumer,
    deliverPolicy: String(after.config.deliver_policy),
    startSeq: after.config.opt_start_seq ?? null,
    startTime: after.config.opt_start_time ?? null,
    pendingBefore: before.num_pending,
    pendingAfter: after.num_pending,
  };
}
