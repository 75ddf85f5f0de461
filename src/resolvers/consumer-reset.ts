import { builder } from '../schema/builder.js';
import { ConsumerResetRef } from '../schema/consumer-reset.js';
import { resetConsumerVerb } from '../services/consumers/verbs.js';
import { verbMutation } from './verb-mutation.js';

builder.mutationFields((t) => ({
  resetConsumer: t.field({
    type: ConsumerResetRef,
    description:
      'Deletes a JetStream durable consumer and creates it again with its configuration, delivering from the first message of the stream, or from startSeq or startTime when given. See docs/calls.md.',
    ...verbMutation(t, resetConsumerVerb),
  }),
}));
