import type { Logger } from 'pino';
import type { Bus } from '../bus/nats.js';
import type { Subjects } from '../bus/subjects.js';
import type { Config } from '../config.js';
import type { Store } from '../store/db.js';
import type { Catalogue } from './catalogue.js';
import type { MeshEvents } from './events.js';

/** The running gateway's dependencies, handed to every service call that needs more than the store. */
export interface Mesh {
  config: Config;
  db: Store;
  bus: Bus;
  subjects: Subjects;
  catalogue: Catalogue;
  logger: Logger;
  events: MeshEvents;
}
