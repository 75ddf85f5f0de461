import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);
const NODE_LOG = `${JSON.stringify(process.execPath)} --import tsx test/fixtures/log-line.ts`;

/** What the gateway's logger prints, on a terminal (util-linux `script` gives it one) or into a pipe. */
async function logged(onTerminal: boolean, env: Record<string, string> = {}): Promise<string> {
  const options = { cwd: ROOT, env: { ...process.env, LOG_FORMAT: '', ...env }, timeout: 60_000 };
  const { stdout } = onTerminal
    ? await run('script', ['-qec', NODE_LOG, '/dev/null'], options)
    : await run(process.execPath, ['--import', 'tsx', 'test/fixtures/log-line.ts'], options);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: colours are stripped to read the words
  return stdout.replace(/\u001b\[[0-9;]*m/g, '').trim();
}

describe('log lines', () => {
  it('read as one line per event on a terminal: time, level and message first, then the fields', async () => {
    const out = await logged(true);
    expect(out).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: serving GraphQL/);
    expect(out).toContain('{"url":"http://127.0.0.1:4000/graphql"}');
    expect(out.split('\n')).toHaveLength(1);
    expect(out).not.toContain('{"level"');
  }, 90_000);

  it('are JSON lines when stdout is not a terminal', async () => {
    const line = JSON.parse(await logged(false));
    expect(line).toMatchObject({ level: 30, msg: 'serving GraphQL', service: 'mesh-gateway', url: 'http://127.0.0.1:4000/graphql' });
  }, 90_000);

  it('are JSON lines on a terminal too with LOG_FORMAT=json', async () => {
    const line = JSON.parse(await logged(true, { LOG_FORMAT: 'json' }));
    expect(line).toMatchObject({ level: 30, msg: 'serving GraphQL' });
  }, 90_000);

  it('refuse a LOG_FORMAT they do not know, naming it', async () => {
    await expect(logged(false, { LOG_FORMAT: 'yaml' })).rejects.toThrow(/LOG_FORMAT must be json or pretty, got "yaml"/);
  }, 90_000);
});
