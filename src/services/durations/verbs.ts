import { readingVerb } from '../verbs/verb.js';
import { type DurationsMesh, readDurations } from './durations.js';

/** Durations summarised per kind since an instant, beside the bound in force. */
export const durationsVerb = readingVerb('durations', 'read', { kind: { type: 'String' }, since: { type: 'DateTime' } }, (mesh: DurationsMesh, args) =>
  readDurations(mesh, args),
);
