import { randomBytes } from 'node:crypto';
import { type Command, InvalidArgumentError } from 'commander';
import { isName, NAME_RULE } from '../../kernel/names.js';
import { SCOPES } from '../../services/access/caller.js';
import { hashToken } from '../../services/access/token-hash.js';

/** A token carries this many random bytes: far past guessing, short enough to paste. */
const TOKEN_BYTES = 32;

const scopeList = (value: string): string[] => {
  const scopes = value.split(',').filter(Boolean);
  const bad = scopes.find((s) => !(SCOPES as readonly string[]).includes(s));
  if (bad || scopes.length === 0) throw new InvalidArgumentError(`scopes are a comma-separated list of ${SCOPES.join(', ')}`);
  return scopes;
};

/**
 * `meshctl token new NAME --scopes read,act`: a fresh random token, printed once, and the entry to
 * add to MESH_TOKENS_FILE (its SHA-256, never the token). Needs no gateway: it never sees the token.
 */
export function tokenCommands(program: Command, print: (text: string) => void, json: () => boolean): void {
  program
    .command('token')
    .description('tokens for MESH_TOKENS_FILE')
    .command('new')
    .description('prints a fresh token once, and the tokens-file entry (name, scopes, hash) to add')
    .argument('<name>', `the caller's name: ${NAME_RULE}`)
    .option('--scopes <scopes>', 'comma-separated: read, act, admin', scopeList, ['read'])
    .action((name: string, o: { scopes: string[] }) => {
      if (!isName(name)) throw new InvalidArgumentError(`a token's name is ${NAME_RULE}`);
      const token = randomBytes(TOKEN_BYTES).toString('base64url');
      const entry = { name, scopes: o.scopes, sha256: hashToken(token) };
      if (json()) print(JSON.stringify({ token, entry }, null, 2));
      else print(`token (shown once; give it to ${name}):\n${token}\n\nadd to MESH_TOKENS_FILE's "tokens":\n${JSON.stringify(entry)}`);
    });
}
