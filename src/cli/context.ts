import type { GatewayClient } from './client.js';
import { errorAsData, type Refused } from './client.js';

/** What every command runs with: the gateway's client and how to print. */
export interface CommandContext {
  client: GatewayClient;
  /** `--json`: print exactly the GraphQL `data`, for scripts. */
  json: boolean;
  print(text: string): void;
}

/** Runs a command's work with the context made from the global options, turning failures into exit codes. */
export type Runner = (work: (ctx: CommandContext) => Promise<void>) => Promise<void>;

/** Prints a response: its `data` as JSON with --json, else as people read it. */
export function show<T>(ctx: CommandContext, data: T, human: (data: T) => string): void {
  ctx.print(ctx.json ? JSON.stringify(data, null, 2) : human(data));
}

/**
 * A mutation's answer: with --json the whole response's `data` is printed first; then the
 * success's `data` is returned (for the command to print as people read it), or its typed error
 * as data is thrown (meshctl prints `error CODE: message` and exits 1).
 */
export function succeeded<D>(ctx: CommandContext, data: unknown, result: { __typename: string; data?: D; code?: string; message?: string }): D {
  if (ctx.json) ctx.print(JSON.stringify(data, null, 2));
  const refused: Refused | undefined = errorAsData(result);
  if (refused) throw refused;
  return result.data as D;
}
