import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { expect, test } from 'vitest';

const RULES = 'docs/prometheus-alerts.yml';
const RULE_TESTS = 'test/alerts/prometheus-alerts.test.yml';
/** Debian's `prometheus` package; .ci/run installs it when missing. */
const PROMTOOL = process.env.PROMTOOL ?? '/usr/bin/promtool';
/** Metrics the rules name that issue 19 adds to /metrics (the news lag): written against those names. */
const COMING_WITH_ISSUE_19 = new Set(['mesh_news_lag_seconds', 'mesh_news_pending']);

const promtool = (...args: string[]) => {
  if (!existsSync(PROMTOOL)) throw new Error(`${PROMTOOL} is missing: apt-get install prometheus (Debian's package has promtool)`);
  return execFileSync(PROMTOOL, args, { encoding: 'utf8', stdio: 'pipe' });
};

/** Each alert of the rules file: its name and its text, up to the next alert. */
function alerts(): { name: string; text: string }[] {
  return readFileSync(RULES, 'utf8')
    .split(/^\s*- alert: /m)
    .slice(1)
    .map((block) => ({ name: block.split('\n')[0]!.trim(), text: block }));
}

/** The anchors GitHub gives docs/operations.md's headings. */
function operationsAnchors(): Set<string> {
  const headings = readFileSync('docs/operations.md', 'utf8').match(/^#{1,6} .+$/gm) ?? [];
  return new Set(
    headings.map((h) =>
      h
        .replace(/^#+ /, '')
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-'),
    ),
  );
}

test('the shipped alert rules load in Prometheus and fire on the situations they name (promtool test rules)', () => {
  expect(promtool('check', 'rules', RULES)).toContain('SUCCESS');
  expect(promtool('test', 'rules', RULE_TESTS)).toContain('SUCCESS');
});

test('the alerts cover SILENT machines, a gateway behind, no composition, not ready, failing calls and poison news', () => {
  const names = alerts().map((a) => a.name);
  expect(names).toEqual(
    expect.arrayContaining([
      'MeshMachinesSilent',
      'MeshGatewayBehind',
      'MeshNoComposition',
      'MeshGatewayNotReady',
      'MeshCallsFailing',
      'MeshNewsDroppedAsPoison',
    ]),
  );
  // Every alert is exercised by the promtool tests.
  const tests = readFileSync(RULE_TESTS, 'utf8');
  for (const name of names) expect(tests, name).toMatch(new RegExp(`alertname: ${name}\\b[\\s\\S]*?exp_labels`));
});

test('every alert has a summary and a runbook that is a section of docs/operations.md', () => {
  const anchors = operationsAnchors();
  for (const { name, text } of alerts()) {
    expect(text, name).toMatch(/^\s+summary: ".{20,}"$/m);
    const runbook = /^\s+runbook: docs\/operations\.md#(\S+)$/m.exec(text)?.[1];
    expect(runbook, `${name}'s runbook`).toBeDefined();
    expect([...anchors], `${name}'s runbook #${runbook}`).toContain(runbook);
  }
});

test('every metric the rules name is one the gateway exports', () => {
  // metrics.ts wires the rooms of src/server/metrics/, each of which registers its own metrics.
  const files = ['src/server/metrics.ts', 'src/server/operation-metrics.ts', ...readdirSync('src/server/metrics').map((f) => `src/server/metrics/${f}`)];
  const sources = files.map((f) => readFileSync(f, 'utf8')).join('\n');
  const named = new Set(readFileSync(RULES, 'utf8').match(/\bmesh_[a-z_]+/g));
  expect(named.size).toBeGreaterThan(5);
  for (const metric of named) {
    if (COMING_WITH_ISSUE_19.has(metric)) continue;
    expect(sources, metric).toContain(`'${metric}'`);
  }
});
