import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { connect } from '@nats-io/transport-node';
import { DEFAULT_NATS_URL } from './bus/nats.js';
import { subjectsUnder } from './bus/subjects.js';
import { ConfigError, loadConfig, NATS_URL_FILE } from './config.js';
import { createLogger } from './logger.js';
import type { ApplyMessage } from './services/plans/rollout.js';

/** The simulator runs at most this many agents: enough to load a gateway, bounded so it cannot eat the machine. */
export const SIMULATED_MACHINES_MAX = 50_000;
const TICK_MS = 100;
const PROGRESS_EVERY_MS = 10_000;
/**
 * nats.js drops what is published while its connection is down (it empties its buffer at each
 * redial), and the socket may have taken the last instant's before the loss was noticed: reports
 * sent from this long before the loss are sent again when the connection is back, as a real agent
 * would. The gateway counts only a machine's first report of a plan.
 */
const REPORTS_RESENT_LOOKBACK_MS = 10_000;

const usage = `npm run simulate -- [--machines N] [--sites S] [--seconds T] [--fail-rate F] [--slow-rate R] [--build-every SEC]
  Agents that heartbeat every MESH_HEARTBEAT_S on NATS_URL under MESH_SUBJECTS, answer each apply with a
  report (a fraction R slow, a fraction F failing), and a build machine publishing build news. Ctrl-C stops it.`;

function options() {
  const { values } = parseArgs({
    options: {
      machines: { type: 'string', default: '50' },
      sites: { type: 'string', default: '4' },
      seconds: { type: 'string' },
      'fail-rate': { type: 'string', default: '0.02' },
      'slow-rate': { type: 'string', default: '0.2' },
      'build-every': { type: 'string', default: '30' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  const number = (key: keyof typeof values, min: number, max: number) => {
    const n = Number(values[key]);
    if (!Number.isFinite(n) || n < min || n > max) throw new ConfigError(`--${key} must be a number from ${min} to ${max}, got ${values[key]}\n${usage}`);
    return n;
  };
  return {
    machines: Math.floor(number('machines', 1, SIMULATED_MACHINES_MAX)),
    sites: Math.floor(number('sites', 1, 100)),
    seconds: values.seconds === undefined ? undefined : number('seconds', 1, 7 * 86_400),
    failRate: number('fail-rate', 0, 1),
    slowRate: number('slow-rate', 0, 1),
    buildEvery: number('build-every', 1, 86_400),
  };
}

interface Agent {
  name: string;
  site: string;
  modules: string[];
  claims: Record<string, string[]>;
  /** When its next heartbeat is due (ms since epoch). */
  due: number;
}

/** The agents: every one runs `agent`; every third a broker (claims `queue`), every fifth a registry, the first the builder. */
function agents(count: number, sites: number, heartbeatMs: number): Agent[] {
  const width = String(count).length;
  const now = Date.now();
  return Array.from({ length: count }, (_, i) => {
    const modules = ['agent'];
    const claims: Record<string, string[]> = { agent: ['agent'] };
    if (i % 3 === 0) modules.push('broker'), (claims.broker = ['queue']);
    if (i % 5 === 0) modules.push('registry'), (claims.registry = ['registry']);
    if (i === 0) modules.push('builder'), (claims.builder = ['builder']);
    // Spread over the interval, so the gateway hears a steady rate rather than bursts.
    return {
      name: `sim-${String(i + 1).padStart(width, '0')}`,
      site: `site-${String.fromCharCode(97 + (i % sites))}`,
      modules,
      claims,
      due: now + (i / count) * heartbeatMs,
    };
  });
}

/**
 * NATS_URL when set; else the NATS a gateway started without NATS_URL wrote to
 * `<MESH_DATA_DIR>/nats.url` (its child nats-server's port is picked at start); else 127.0.0.1:4222.
 */
function natsUrlFor(config: { natsUrl: string[] | undefined; dataDir: string }): string[] {
  if (config.natsUrl) return config.natsUrl;
  try {
    const noted = readFileSync(join(config.dataDir, NATS_URL_FILE), 'utf8').trim();
    if (noted) return noted.split(',');
  } catch {
    // No gateway wrote one: the machine's NATS.
  }
  return [DEFAULT_NATS_URL];
}

async function main(): Promise<void> {
  const opts = options();
  const config = loadConfig();
  const logger = createLogger(config.logLevel, config.logFormat);
  const subjects = subjectsUnder(config.subjects);
  const heartbeatMs = config.heartbeatSeconds * 1000;
  // Reconnects for ever, as the gateway does: nats.js gives up after ten attempts by default.
  const nc = await connect({
    servers: natsUrlFor(config),
    user: config.natsUser,
    pass: config.natsPassword,
    name: 'mesh-simulator',
    maxReconnectAttempts: -1,
  });
  const mesh = agents(opts.machines, opts.sites, heartbeatMs);
  const byName = new Map(mesh.map((a) => [a.name, a]));
  const counts = { heartbeats: 0, applies: 0, reports: 0, failed: 0, builds: 0 };
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };
  const publish = (subject: string, body: unknown) => nc.publish(subject, JSON.stringify(body));
  // Reports kept to be sent again after a lost connection: those of the last REPORTS_RESENT_LOOKBACK_MS,
  // and while the connection is down every one since then (one per machine per plan applied).
  const reportsKept: { at: number; subject: string; body: unknown }[] = [];
  let lostAt: number | undefined;
  const publishReport = (subject: string, body: unknown) => {
    const at = Date.now();
    if (lostAt === undefined) {
      let expired = 0;
      while (expired < reportsKept.length && reportsKept[expired]!.at < at - REPORTS_RESENT_LOOKBACK_MS) expired++;
      if (expired > 0) reportsKept.splice(0, expired);
    }
    reportsKept.push({ at, subject, body });
    publish(subject, body);
  };
  (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') {
        lostAt ??= Date.now();
        logger.warn({ server: status.server }, 'NATS connection lost: reconnecting');
      } else if (status.type === 'reconnect' && lostAt !== undefined) {
        const since = lostAt - REPORTS_RESENT_LOOKBACK_MS;
        lostAt = undefined;
        const again = reportsKept.filter((r) => r.at >= since);
        for (const r of again) publish(r.subject, r.body);
        logger.warn({ server: nc.getServer(), reportsSentAgain: again.length }, 'NATS connected again');
      }
    }
  })().catch(() => undefined);

  const beat = setInterval(() => {
    const now = Date.now();
    for (const agent of mesh) {
      if (agent.due > now) continue;
      agent.due += heartbeatMs;
      if (agent.due < now) agent.due = now + heartbeatMs;
      publish(subjects.machineNews(agent.name), { kind: 'heartbeat', site: agent.site, modules: agent.modules, claims: agent.claims });
      counts.heartbeats++;
    }
  }, TICK_MS);

  // One report per machine per plan, so what waits is bounded by the machines simulated.
  const reporting = new Set<string>();
  const applies = nc.subscribe(`${subjects.root}.plan.*.apply`, {
    callback: (err, msg) => {
      if (err) return;
      let apply: ApplyMessage;
      try {
        apply = msg.json<ApplyMessage>();
      } catch {
        return;
      }
      if (!Array.isArray(apply?.machines)) return;
      counts.applies++;
      for (const machine of apply.machines) {
        const key = `${apply.plan}/${machine}`;
        if (!byName.has(machine) || reporting.has(key)) continue;
        reporting.add(key);
        const slow = Math.random() < opts.slowRate;
        const ok = Math.random() >= opts.failRate;
        const ms = slow ? 3_000 + Math.random() * 5_000 : 200 + Math.random() * 1_300;
        later(ms, () => {
          reporting.delete(key);
          publishReport(subjects.machineNews(machine), {
            kind: 'report',
            plan: apply.plan,
            build: apply.build,
            ok,
            detail: ok ? `applied in ${Math.round(ms)} ms` : 'simulated failure: health check did not pass',
          });
          counts.reports++;
          if (!ok) counts.failed++;
        });
      }
    },
  });

  let buildNo = 0;
  const build = () => {
    const name = `sim-build-${Date.now().toString(36)}-${++buildNo}`;
    publish(subjects.buildNews(name), { kind: 'started', module: 'builder' });
    const ok = Math.random() >= opts.failRate * 2;
    later(2_000 + Math.random() * 8_000, () => {
      publish(subjects.buildNews(name), { kind: ok ? 'finished' : 'failed', module: 'builder' });
      counts.builds++;
    });
  };
  build();
  const builds = setInterval(build, opts.buildEvery * 1000);
  const progress = setInterval(() => logger.info({ ...counts, waitingReports: reporting.size }, 'simulating'), PROGRESS_EVERY_MS);

  logger.info(
    { machines: opts.machines, sites: opts.sites, heartbeatSeconds: config.heartbeatSeconds, subjects: subjects.root, nats: nc.getServer() },
    'simulating a mesh: Ctrl-C stops it',
  );

  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    for (const t of [beat, builds, progress]) clearInterval(t);
    for (const t of timers) clearTimeout(t);
    applies.unsubscribe();
    await nc.drain().catch(() => undefined);
    logger.info({ ...counts, why }, 'simulation stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  if (opts.seconds !== undefined) setTimeout(() => void stop(`--seconds ${opts.seconds}`), opts.seconds * 1000);
}

main().catch((error) => {
  console.error(`mesh-simulate: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(error instanceof ConfigError ? 2 : 1);
});
