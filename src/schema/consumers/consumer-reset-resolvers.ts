import { resetConsumerVerb } from '../../services/consumers/verbs.js';
import { builder } from '../support/builder.js';
import { verbMutation } from '../support/verb-mutation.js';
import { ConsumerResetRef } from './consumer-reset.js';

builder.mutationFields((t) => ({
  resetConsumer: t.field({
    type: ConsumerResetRef,
    description:
      'Deletes a JetStream durable consumer and creates it again with its configuration, delivering from the first message of the stream, or from startSeq or startTime when given. See docs/calls.md.',
    ...verbMutation(t, resetConsumerVerb),
  }),
}));
