import { z } from 'zod';
import { checkName } from '../../kernel/names.js';
import type { Heartbeat } from '../machines/machines.js';
import type { Report } from '../plans/rollout.js';
import type { BuildNews } from './builds.js';

/** A report's detail is kept up to this many characters: it is a hint for people, not a log. */
export const REPORT_DETAIL_MAX = 4_096;
/** A heartbeat lists at most this many modules and claims per module; no real machine runs more. */
export const MODULES_MAX = 256;

const name = (what: string) =>
  z.string().transform((value, ctx) => {
    try {
      return checkName(value, what);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  });

/**
 * The earliest instant the store keeps (`0001-01-01T00:00:00Z`): PostgreSQL has no year 0, so an
 * `at` before it (`0000-01-01T00:00:00Z` passes ISO 8601) is refused here rather than make the
 * store refuse the whole batch. Four-digit years cannot pass 9999, which the store keeps.
 */
export const AT_EARLIEST_MS = new Date('0001-01-01T00:00:00Z').getTime();

const at = z.iso
  .datetime({ offset: true })
  .refine((iso) => new Date(iso).getTime() >= AT_EARLIEST_MS, 'before 0001-01-01T00:00:00Z, which the store cannot keep')
  .optional();

/**
 * PostgreSQL's text cannot hold U+0000: a string with one is refused, not cut. Names cannot hold it
 * (the one name rule), so this guards the one free string, a report's `detail`.
 */
const noNul = (value: string) => !value.includes('\u0000');
const NUL_MESSAGE = 'holds a NUL character (U+0000), which the store cannot keep';

const heartbeatSchema = z.object({
  kind: z.literal('heartbeat'),
  at,
  site: name('site').nullish(),
  modules: z.array(name('module')).max(MODULES_MAX),
  claims: z.record(z.string(), z.array(name('seat')).max(MODULES_MAX)).optional(),
});

const reportSchema = z.object({
  kind: z.literal('report'),
  at,
  plan: name('plan'),
  build: name('build'),
  ok: z.boolean(),
  detail: z
    .string()
    .refine(noNul, NUL_MESSAGE)
    .nullish()
    .transform((d) => (d == null ? d : d.slice(0, REPORT_DETAIL_MAX))),
});

const machineNewsSchema = z.discriminatedUnion('kind', [heartbeatSchema, reportSchema]);

const buildNewsSchema = z.object({
  kind: z.enum(['started', 'finished', 'failed']),
  at,
  module: name('module').nullish(),
});

/** One news message, judged: what it says, or why it was refused. */
export type News =
  | { type: 'heartbeat'; heartbeat: Heartbeat }
  | { type: 'report'; report: Report }
  | { type: 'build'; build: BuildNews }
  | { type: 'malformed'; reason: string };

function reason(error: z.ZodError): string {
  return error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; ');
}

/**
 * Judges one message from `<root>.news.machine.<machine>` or `<root>.news.build.<build>`: the
 * subject's last token is the machine or build (one name rule), the body JSON per the wire
 * contract. A heartbeat is dated `heardAt` (its `at` kept as `sentAt`, information only); a report's
 * and build news's `at` date their durations: `heardAt` when absent or in the future.
 */
export function judgeNews(root: string, subject: string, body: Uint8Array | string, heardAt: Date): News {
  const machinePrefix = `${root}.news.machine.`;
  const buildPrefix = `${root}.news.build.`;
  const isMachine = subject.startsWith(machinePrefix);
  if (!isMachine && !subject.startsWith(buildPrefix)) return { type: 'malformed', reason: 'not a news subject' };
  const token = subject.slice((isMachine ? machinePrefix : buildPrefix).length);
  try {
    checkName(token, isMachine ? 'machine' : 'build');
  } catch (error) {
    return { type: 'malformed', reason: (error as Error).message };
  }
  let json: unknown;
  try {
    json = JSON.parse(typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  } catch (error) {
    return { type: 'malformed', reason: `the body is not JSON: ${(error as Error).message}` };
  }
  const when = (iso: string | undefined) => {
    if (!iso) return heardAt;
    const t = new Date(iso);
    return t.getTime() > heardAt.getTime() ? heardAt : t;
  };
  if (isMachine) {
    const parsed = machineNewsSchema.safeParse(json);
    if (!parsed.success) return { type: 'malformed', reason: reason(parsed.error) };
    const news = parsed.data;
    if (news.kind === 'heartbeat') {
      const claims = news.claims ? Object.fromEntries(Object.entries(news.claims).filter(([module]) => news.modules.includes(module))) : undefined;
      // Liveness is judged by when the gateway heard it, never by the agent's clock (docs/status.md).
      return { type: 'heartbeat', heartbeat: { machine: token, site: news.site ?? null, modules: news.modules, claims, at: heardAt, sentAt: when(news.at) } };
    }
    return { type: 'report', report: { machine: token, plan: news.plan, build: news.build, ok: news.ok, detail: news.detail ?? null, at: when(news.at) } };
  }
  const parsed = buildNewsSchema.safeParse(json);
  if (!parsed.success) return { type: 'malformed', reason: reason(parsed.error) };
  return { type: 'build', build: { build: token, kind: parsed.data.kind, module: parsed.data.module ?? null, at: when(parsed.data.at) } };
}
