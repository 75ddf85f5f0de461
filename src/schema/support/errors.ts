import { Conflict, type DomainError, Forbidden, Invalid, NotFound } from '../../kernel/errors.js';
import { builder } from './builder.js';

const ErrorInterface = builder.interfaceRef<DomainError>('Error').implement({
  description: 'What every typed error as data carries: a sentence for people and a code for tools.',
  fields: (t) => ({
    message: t.exposeString('message'),
    code: t.exposeString('code'),
  }),
});

builder.objectType(NotFound, {
  name: 'NotFoundError',
  description: 'The thing named does not exist.',
  interfaces: [ErrorInterface],
  fields: (t) => ({
    kind: t.exposeString('kind', { description: 'What was looked for: seat, machine, call, plan, holding.' }),
    key: t.exposeString('key', { description: 'The name or id that was not found.' }),
  }),
});

builder.objectType(Conflict, {
  name: 'ConflictError',
  description: 'The request contradicts what is stored: a name taken, a state that does not allow it.',
  interfaces: [ErrorInterface],
});

builder.objectType(Invalid, {
  name: 'InvalidError',
  description: 'The request is malformed: a bad name, a blank reason, an argument of the wrong type.',
  interfaces: [ErrorInterface],
  fields: (t) => ({
    field: t.exposeString('field', { nullable: true, description: 'The argument that was wrong, where one was.' }),
  }),
});

builder.objectType(Forbidden, {
  name: 'ForbiddenError',
  description: 'The caller lacks the scope the request needs.',
  interfaces: [ErrorInterface],
});
