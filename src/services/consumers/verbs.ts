import { type HandActLog, leaveHandAct } from '../hand-acts/hand-acts.js';
import { actingVerb } from '../verbs/verb.js';
import { type ConsumersMesh, resetConsumer } from './reset.js';

/** Deletes a JetStream durable consumer and creates it again, delivering from the start (or startSeq / startTime). */
export const resetConsumerVerb = actingVerb(
  'resetConsumer',
  'act',
  { stream: { type: 'String', required: true }, consumer: { type: 'String', required: true }, startSeq: { type: 'Int' }, startTime: { type: 'DateTime' } },
  async (mesh: ConsumersMesh & HandActLog, args, call) => {
    const reset = await resetConsumer(mesh, args);
    await leaveHandAct(mesh, args, call, 'resetConsumer', `${reset.stream}/${reset.consumer}`);
    return reset;
  },
  // Its act is JetStream's, not the store's: its hand-act is written to the outbox just after it (docs/calls.md).
  { actsOutsideTheStore: true },
);
