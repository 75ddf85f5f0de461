import type { Kysely } from 'kysely';
import type { DB } from '../../store/tables.js';
import { type HandActLog, leaveHandAct } from '../hand-acts/hand-acts.js';
import { actingVerb } from '../verbs/verb.js';
import { forgetMachine } from './forget.js';

/** Deletes a machine that holds no seat, with its assignments; answers the machine as it was. */
export const forgetMachineVerb = actingVerb(
  'forgetMachine',
  'admin',
  { machine: { type: 'String', required: true, description: 'The machine to forget; a heartbeat from it later is heard afresh.' } },
  async (mesh: HandActLog & { db: Kysely<DB> }, args, call) => {
    const machine = await forgetMachine(mesh.db, args.machine);
    await leaveHandAct(mesh, args, call, 'forgetMachine', machine.name);
    return machine;
  },
);
