import type { Command } from 'commander';
import { callCommands } from './commands/calls.js';
import { handActCommands } from './commands/hand-acts.js';
import { machineCommands } from './commands/machines.js';
import { planCommands } from './commands/plans.js';
import { seatCommands } from './commands/seats.js';
import { statusCommands } from './commands/status.js';
import { tokenCommands } from './commands/token.js';
import type { Runner } from './context.js';

/** Registers every meshctl command on `program`, in the order its help lists them: main runs them, tests read their flags. */
export function registerCommands(program: Command, run: Runner, print: (text: string) => void, json: () => boolean): void {
  statusCommands(program, run);
  seatCommands(program, run);
  machineCommands(program, run);
  planCommands(program, run);
  callCommands(program, run);
  handActCommands(program, run);
  tokenCommands(program, print, json);
}
