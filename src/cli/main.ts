#!/usr/bin/env node
import { Command, CommanderError, Option } from 'commander';
import { GatewayClient, Refused, Unreachable } from './client.js';
import { registerCommands } from './commands.js';
import type { CommandContext } from './context.js';

/** meshctl's exit codes: what a script can branch on. */
export const EXIT = { ok: 0, refused: 1, usage: 2, unreachable: 3 } as const;
const DEFAULT_URL = 'http://127.0.0.1:4000/graphql';

const print = (text: string) => process.stdout.write(`${text}\n`);

/** meshctl: a typed command line for the gateway, over its GraphQL API (the generated operations in ./generated). */
/** The gateway's address as an operator types it (`http://host:4000`, where `/` is the dashboard) means its GraphQL endpoint. */
export function graphqlEndpoint(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.pathname === '/' && !parsed.search) parsed.pathname = '/graphql';
    return parsed.toString();
  } catch {
    return url; // not a URL: the client names it when it cannot reach it
  }
}

export async function main(argv: string[]): Promise<number> {
  const program = new Command('meshctl')
    .description('the mesh-gateway command line: status, seats, machines, plans, calls, hand-acts, durations')
    .addOption(new Option('--url <url>', 'the gateway GraphQL endpoint (a bare http://host:port means its /graphql)').env('MESH_URL').default(DEFAULT_URL))
    .addOption(new Option('--token <token>', 'a bearer token, when the gateway has MESH_TOKENS_FILE').env('MESH_TOKEN'))
    .option('--json', 'print exactly the GraphQL data, for scripts')
    .showHelpAfterError()
    .exitOverride();
  let code: number = EXIT.ok;
  const run = async (work: (ctx: CommandContext) => Promise<void>) => {
    const options = program.opts<{ url: string; token?: string; json?: boolean }>();
    const ctx: CommandContext = { client: new GatewayClient(graphqlEndpoint(options.url), options.token), json: !!options.json, print };
    try {
      await work(ctx);
    } catch (error) {
      if (error instanceof Unreachable) {
        process.stderr.write(`meshctl: ${error.message}\n`);
        code = EXIT.unreachable;
      } else if (error instanceof Refused) {
        process.stderr.write(`error ${error.code}: ${error.message}\n`);
        code = EXIT.refused;
      } else throw error;
    }
  };
  registerCommands(program, run, print, () => !!program.opts<{ json?: boolean }>().json);
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    throw error;
  }
  return code;
}

// Exit once stdout has drained: into a pipe, a large --json answer is still being written when main resolves.
const exitWhenWritten = (code: number) => process.stdout.write('', () => process.exit(code));

main(process.argv.slice(2)).then(
  (code) => exitWhenWritten(code),
  (error) => {
    process.stderr.write(`meshctl: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(EXIT.refused);
  },
);
