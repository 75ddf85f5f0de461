import type { ConsumerReset } from '../../services/consumers/reset.js';
import { resetConsumerVerb } from '../../services/consumers/verbs.js';
import { builder } from '../support/builder.js';
import { verbMutation } from '../support/verb-mutation.js';

const ConsumerResetRef = builder.objectRef<ConsumerReset>('ConsumerReset').implement({
  description: 'A JetStream durable consumer deleted and created again with its configuration; see docs/calls.md.',
  fields: (t) => ({
    stream: t.exposeString('stream'),
    consumer: t.exposeString('consumer'),
    deliverPolicy: t.exposeString('deliverPolicy', { description: '`all` (from the first message), `by_start_sequence` or `by_start_time`.' }),
    startSeq: t.exposeInt('startSeq', { nullable: true }),
    startTime: t.field({ type: 'DateTime', nullable: true, resolve: (r) => r.startTime }),
    pendingBefore: t.exposeInt('pendingBefore', { description: 'Messages the consumer had not yet delivered before the reset.' }),
    pendingAfter: t.exposeInt('pendingAfter', { description: 'Messages it will deliver after it.' }),
  }),
});

builder.mutationFields((t) => ({
  resetConsumer: t.field({
    type: ConsumerResetRef,
    description:
      'Deletes a JetStream durable consumer and creates it again with its configuration, delivering from the first message of the stream, or from startSeq or startTime when given. See docs/calls.md.',
    ...verbMutation(t, resetConsumerVerb),
  }),
}));
