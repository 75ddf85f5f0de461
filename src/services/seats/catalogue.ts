import type { Protocol, Verb } from '../verbs/protocol.js';

/** A seat as the binary defines it: the defaults seeded into the store on every start. */
export interface SeatDefinition extends Protocol {
  name: string;
  scope: string;
  delivers: string;
  decided: string;
  replicated: boolean;
}

/** The binary's seats by name, and which of them is the controller's own. */
export interface Catalogue {
  controller: string;
  seats: ReadonlyMap<string, SeatDefinition>;
}

const DECIDED = 'mesh-gateway defaults';

// The seats every mesh has besides the controller's: the broker's queues, the build machine,
// the artifact registry and the agents themselves.
const MESH_SEATS: SeatDefinition[] = [
  {
    name: 'queue',
    scope: 'site',
    delivers: 'durable message queues for the modules of a site',
    decided: DECIDED,
    replicated: true,
    accepts: ['message'],
    emits: ['delivered'],
    serves: [{ name: 'depth', acting: false, args: [{ name: 'queue', type: 'String', required: true }] }],
  },
  {
    name: 'builder',
    scope: 'mesh',
    delivers: 'builds of the mesh modules from source',
    decided: DECIDED,
    replicated: false,
    accepts: ['build-request'],
    emits: ['started', 'finished', 'failed'],
    serves: [
      {
        name: 'build',
        acting: true,
        args: [
          { name: 'module', type: 'String', required: true },
          { name: 'ref', type: 'String', required: false },
        ],
      },
    ],
  },
  {
    name: 'registry',
    scope: 'mesh',
    delivers: 'the artifacts of finished builds',
    decided: DECIDED,
    replicated: true,
    accepts: ['artifact'],
    emits: ['stored'],
    serves: [{ name: 'has', acting: false, args: [{ name: 'build', type: 'String', required: true }] }],
  },
  {
    name: 'agent',
    scope: 'machine',
    delivers: 'applying builds on one machine and reporting its heartbeat',
    decided: DECIDED,
    replicated: true,
    accepts: ['apply'],
    emits: ['heartbeat', 'report'],
    serves: [],
  },
];

/**
 * The binary's default seats: the controller's own (serving `controllerVerbs`, the verbs this build
 * defines) and the few a mesh always has.
 */
export function compiledCatalogue(controller: string, controllerVerbs: Verb[]): Catalogue {
  const own: SeatDefinition = {
    name: controller,
    scope: 'mesh',
    delivers: 'the control plane: status, plans, calls and hand-acts',
    decided: DECIDED,
    replicated: true,
    accepts: ['heartbeat', 'report', 'started', 'finished', 'failed'],
    emits: ['status', 'apply'],
    serves: controllerVerbs,
  };
  const seats = new Map<string, SeatDefinition>([[own.name, own]]);
  for (const seat of MESH_SEATS) if (!seats.has(seat.name)) seats.set(seat.name, seat);
  return { controller, seats };
}
