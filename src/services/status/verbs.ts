import { readingVerb } from '../verbs/verb.js';
import type { StatusFeed } from './composition.js';
import { currentStatus } from './live/latest.js';

/** The last composition this replica heard. */
export const statusVerb = readingVerb('status', 'read', {}, (mesh: { status: StatusFeed }) => currentStatus(mesh.status));
