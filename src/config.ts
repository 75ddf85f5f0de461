import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { isName, NAME_RULE } from './kernel/names.js';

/** Everything the gateway reads from its environment, read once by `loadConfig`. */
export interface Config {
  host: string;
  port: number;
  /** Unset: embedded PGlite under `<dataDir>/pg`. */
  databaseUrl: string | undefined;
  /**
   * NATS_URL: one server or a comma-separated list of a cluster's servers (the client fails over
   * among them). Unset: the machine's NATS at 127.0.0.1:4222, else a child nats-server under `<dataDir>/nats`.
   */
  natsUrl: string[] | undefined;
  /** MESH_KV_REPLICAS: the replicas of every bucket and stream the gateway creates (1, or 3 on a three-node cluster). */
  kvReplicas: number;
  /** MESH_KV_WRITE_RETRY_S: how long a call record or hand-act write is retried while its stream has no leader (or NATS is away) before the act is refused UNAVAILABLE. */
  kvWriteRetrySeconds: number;
  /** MESH_OUTBOX_CLAIM_S: how long a replica holds the outbox rows it is relaying; a replica killed mid-relay leaves them to another once this lapses. */
  outboxClaimSeconds: number;
  natsUser: string | undefined;
  natsPassword: string | undefined;
  /** The controller's seat name and the prefix of its buckets. */
  controller: string;
  /** The root of every NATS subject. */
  subjects: string;
  /** The expected interval between a machine's heartbeats, in seconds. */
  heartbeatSeconds: number;
  /** MESH_CHECKPOINT_S: each machine's last-heard and beat count reach the store once per this many seconds, spread evenly (issue 37). */
  checkpointSeconds: number;
  /** How long duration rows are kept, in days. */
  durationRetentionDays: number;
  /** The bounds in force, in seconds, shown beside each duration summary. */
  bounds: { applySeconds: number; tierSeconds: number; buildSeconds: number };
  tokensFile: string | undefined;
  /** MESH_NATS_USERS_FILE: each NATS user's scopes; unset, NATS users have `read` and `act`, never `admin`. */
  natsUsersFile: string | undefined;
  dataDir: string;
  /** This process's name among the replicas; unique per start. */
  replica: string;
  logLevel: string;
  /** On SIGTERM, how long in-flight HTTP requests and running calls may take to finish, in seconds (MESH_DRAIN_S). */
  drainSeconds: number;
  /** How long the status stream keeps compositions, in hours (MESH_STATUS_HISTORY_H): what `statusAt` can look back to. */
  statusHistoryHours: number;
  production: boolean;
  introspection: boolean;
  /** Origins whose browser pages may call the gateway (CORS); empty: CORS off. */
  corsOrigins: string[];
  /** What one client may hold open: graphql-ws operations per socket, sockets per caller and per address. */
  caps: { subscriptionsPerSocket: number; socketsPerCaller: number; socketsPerAddress: number; operationsPerSecond: number };
  /** MESH_PERSISTED_ONLY=1: only operations of the codegen manifest are answered (by hash, or by their text). */
  persistedOnly: boolean;
  /** LOG_FORMAT: `json` or `pretty`; unset, pretty lines on a terminal and JSON otherwise. */
  logFormat: 'json' | 'pretty' | undefined;
  /** JWT sign-in (MESH_JWKS_FILE or MESH_JWKS_URL); undefined when neither is set. */
  jwt: JwtConfig | undefined;
  /** MESH_NEWS_MAX_BYTES / MESH_STATUS_MAX_BYTES: what each stream may hold, reserved in the NATS server's store (times the replicas). */
  streamBytes: { news: number; status: number };
}

export interface JwtConfig {
  /** A JWKS JSON file, re-read when it changes. */
  jwksFile: string | undefined;
  /** A JWKS served over HTTP(S), cached, fetched again for a key id it does not hold. */
  jwksUrl: string | undefined;
  /** MESH_JWT_ISSUER: the `iss` a token must carry (required). */
  issuer: string;
  /** MESH_JWT_AUDIENCE: an `aud` a token must carry (required). */
  audience: string;
  /** MESH_JWT_SCOPES_CLAIM: the claim holding the scopes (default `scope`, space-separated as OAuth 2 has it, or an array). */
  scopesClaim: string;
  /** MESH_JWT_CLOCK_TOLERANCE_S: how far a token's `nbf`, `iat` and `exp` may be off this clock (an identity provider's clock drifts). */
  clockToleranceS: number;
}

/** A JWT's times may be off this clock by this many seconds by default: the drift between an identity provider and a gateway on a busy day. */
export const JWT_CLOCK_TOLERANCE_DEFAULT_S = 30;
/** More tolerance than this would keep an expired token good for over five minutes: refused as a mistake. */
export const JWT_CLOCK_TOLERANCE_MAX_S = 300;
/** A steady mesh writes each machine's last-heard once per 300 s: machines / 300 rows a second (issue 37). */
const CHECKPOINT_S = 300;
/**
 * A write of a call record or hand-act is retried this long while JetStream has no leader for its
 * stream (bus/retry.ts's KV_WRITE_RETRY_MS, the same 15 s: a leader elected within ~4.5 s, a
 * reconnect within one wait), then the act is refused UNAVAILABLE.
 */
const KV_WRITE_RETRY_S = 15;
/**
 * A replica's claim on the outbox rows it relays lasts this long: longer than one put's time-out
 * (5 s), so a live relay keeps its claim mid-put; a replica killed mid-relay leaves its rows to
 * another after it (services/outbox/outbox.ts).
 */
const OUTBOX_CLAIM_S = 10;
/** A claim shorter than this would lapse between a relay's claim and its first put: refused as a typo. */
const OUTBOX_CLAIM_MIN_S = 1;
/** The hosts a MESH_JWKS_URL may reach over plain `http:`: this machine only (tests, a local issuer); anywhere else, keys over plain HTTP could be swapped. */
const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '[::1]'];

/** The default each stream may hold: 1 GiB, reserved whole by the NATS server's store whether used or not. */
export const STREAM_MAX_BYTES_DEFAULT = 1 << 30;
/** Below this a stream could not hold one composition snapshot of a large mesh: refused as a typo. */
export const STREAM_MAX_BYTES_MIN = 1 << 20;

/** A dashboard runs a handful of operations on its socket; 100 is room for any screen, not for a flood. */
const SUBSCRIPTIONS_PER_SOCKET = 100;
/** One token may be shared by a wall of screens, not by ten thousand sockets. */
const SOCKETS_PER_CALLER = 1_000;
/** One machine (or one NAT) opens a few sockets per screen; 500 leaves room for an office. */
const SOCKETS_PER_ADDRESS = 500;
/** Operations one caller may ask a second (HTTP and graphql-ws together): dashboards ask a few, a loop gone wrong thousands. */
const OPERATIONS_PER_SECOND = 500;
/** JetStream keeps a stream on at most five servers (a Raft group of 1 to 5). */
export const KV_REPLICAS_MAX = 5;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

function int(env: NodeJS.ProcessEnv, key: string, fallback: number, min = 0): number {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) throw new ConfigError(`${key} must be a number ≥ ${min}, got ${JSON.stringify(raw)}`);
  return n;
}

/** An on/off switch: `1`, `true`, `on` or `0`, `false`, `off` (unset: `fallback`); anything else is refused. */
function flag(env: NodeJS.ProcessEnv, key: string, fallback: boolean): boolean {
  const raw = env[key]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'on'].includes(raw)) return true;
  if (['0', 'false', 'off'].includes(raw)) return false;
  throw new ConfigError(`${key} must be 1 or 0 (also true/false, on/off), got ${JSON.stringify(env[key])}`);
}

/** A stream's replicas: a whole number from 1 to KV_REPLICAS_MAX. */
function replicas(env: NodeJS.ProcessEnv, key: string): number {
  const n = int(env, key, 1, 1);
  if (!Number.isInteger(n) || n > KV_REPLICAS_MAX)
    throw new ConfigError(`${key} must be a whole number from 1 to ${KV_REPLICAS_MAX}, got ${JSON.stringify(env[key])}`);
  return n;
}

function name(env: NodeJS.ProcessEnv, key: string, fallback: string): string {
  const value = env[key] || fallback;
  if (!isName(value)) throw new ConfigError(`${key} must be ${NAME_RULE}, got ${JSON.stringify(value)}`);
  return value;
}

/** A comma-separated list of origins (`https://ops.example.com`); `*` is refused, since answers carry credentials. */
function origins(env: NodeJS.ProcessEnv, key: string): string[] {
  const raw = env[key];
  if (!raw?.trim()) return [];
  return raw.split(',').map((entry) => {
    const origin = entry.trim();
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    if (!parsed || !['http:', 'https:'].includes(parsed.protocol) || parsed.origin !== origin) {
      throw new ConfigError(`${key} must list origins such as https://ops.example.com, comma-separated, got ${JSON.stringify(entry)}`);
    }
    return origin;
  });
}

/**
 * NATS_URL as a list: each comma-separated entry a `nats://` or `tls://` URL, or a bare `host:port`
 * (read as nats://), with a host and no path; duplicates are refused as typos. The Node transport
 * speaks NATS over TCP, so `ws://` is refused here rather than failing to connect.
 */
function natsServers(env: NodeJS.ProcessEnv, key: string): string[] | undefined {
  const raw = env[key];
  if (!raw?.trim()) return undefined;
  const seen = new Set<string>();
  return raw.split(',').map((entry) => {
    const server = entry.trim();
    let parsed: URL | undefined;
    try {
      parsed = new URL(/^[a-z]+:\/\//i.test(server) ? server : `nats://${server}`);
    } catch {
      parsed = undefined;
    }
    if (!parsed || !['nats:', 'tls:'].includes(parsed.protocol) || !parsed.hostname || !['', '/'].includes(parsed.pathname) || parsed.search) {
      throw new ConfigError(`${key} must list NATS servers such as nats://10.0.0.1:4222, comma-separated, got ${JSON.stringify(entry)}`);
    }
    if (seen.has(server)) throw new ConfigError(`${key} lists ${JSON.stringify(server)} twice`);
    seen.add(server);
    return server;
  });
}

/** Reads the environment once; throws ConfigError naming the variable that is wrong. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const heartbeatSeconds = int(env, 'MESH_HEARTBEAT_S', 10, 0.01);
  return {
    host: env.HOST || '127.0.0.1',
    port: int(env, 'PORT', 4000),
    databaseUrl: env.DATABASE_URL || undefined,
    natsUrl: natsServers(env, 'NATS_URL'),
    kvReplicas: replicas(env, 'MESH_KV_REPLICAS'),
    kvWriteRetrySeconds: int(env, 'MESH_KV_WRITE_RETRY_S', KV_WRITE_RETRY_S, 0.1),
    outboxClaimSeconds: int(env, 'MESH_OUTBOX_CLAIM_S', OUTBOX_CLAIM_S, OUTBOX_CLAIM_MIN_S),
    natsUser: env.NATS_USER || undefined,
    natsPassword: env.NATS_PASSWORD || undefined,
    controller: name(env, 'MESH_CONTROLLER', 'mesh-controller'),
    subjects: name(env, 'MESH_SUBJECTS', 'mesh'),
    heartbeatSeconds,
    checkpointSeconds: int(env, 'MESH_CHECKPOINT_S', CHECKPOINT_S, 0.01),
    durationRetentionDays: int(env, 'MESH_DURATION_RETENTION_DAYS', 14, 0.001),
    bounds: {
      applySeconds: int(env, 'MESH_APPLY_TIMEOUT_S', 300, 0.001),
      tierSeconds: int(env, 'MESH_TIER_TIMEOUT_S', 1800, 0.001),
      buildSeconds: int(env, 'MESH_BUILD_TIMEOUT_S', 3600, 0.001),
    },
    tokensFile: env.MESH_TOKENS_FILE || undefined,
    natsUsersFile: env.MESH_NATS_USERS_FILE || undefined,
    dataDir: resolve(env.MESH_DATA_DIR || '.mesh'),
    replica: env.MESH_REPLICA || `${hostname().replace(/[^A-Za-z0-9_-]/g, '-')}-${process.pid}-${randomBytes(3).toString('hex')}`,
    logLevel: env.LOG_LEVEL || 'info',
    drainSeconds: int(env, 'MESH_DRAIN_S', 10),
    statusHistoryHours: int(env, 'MESH_STATUS_HISTORY_H', 24, 0.001),
    production: env.NODE_ENV === 'production',
    introspection: env.MESH_INTROSPECTION !== 'off',
    corsOrigins: origins(env, 'MESH_CORS_ORIGINS'),
    caps: {
      subscriptionsPerSocket: int(env, 'MESH_WS_OPERATIONS_PER_SOCKET', SUBSCRIPTIONS_PER_SOCKET, 1),
      socketsPerCaller: int(env, 'MESH_WS_SOCKETS_PER_CALLER', SOCKETS_PER_CALLER, 1),
      socketsPerAddress: int(env, 'MESH_WS_SOCKETS_PER_ADDRESS', SOCKETS_PER_ADDRESS, 1),
      operationsPerSecond: int(env, 'MESH_OPS_PER_SECOND', OPERATIONS_PER_SECOND, 1),
    },
    persistedOnly: flag(env, 'MESH_PERSISTED_ONLY', false),
    logFormat: logFormat(env, 'LOG_FORMAT'),
    jwt: jwt(env),
    streamBytes: {
      news: Math.floor(int(env, 'MESH_NEWS_MAX_BYTES', STREAM_MAX_BYTES_DEFAULT, STREAM_MAX_BYTES_MIN)),
      status: Math.floor(int(env, 'MESH_STATUS_MAX_BYTES', STREAM_MAX_BYTES_DEFAULT, STREAM_MAX_BYTES_MIN)),
    },
  };
}

function logFormat(env: NodeJS.ProcessEnv, key: string): 'json' | 'pretty' | undefined {
  const raw = env[key]?.trim();
  if (!raw) return undefined;
  if (raw === 'json' || raw === 'pretty') return raw;
  throw new ConfigError(`${key} must be json or pretty, got ${JSON.stringify(raw)}`);
}

/** MESH_JWKS_FILE or MESH_JWKS_URL (not both) turns JWT sign-in on; the other MESH_JWT_* need one of them. */
function jwt(env: NodeJS.ProcessEnv): JwtConfig | undefined {
  const jwksFile = env.MESH_JWKS_FILE?.trim() || undefined;
  const jwksUrl = env.MESH_JWKS_URL?.trim() || undefined;
  const issuer = env.MESH_JWT_ISSUER?.trim() || undefined;
  const audience = env.MESH_JWT_AUDIENCE?.trim() || undefined;
  const scopesClaim = env.MESH_JWT_SCOPES_CLAIM?.trim() || 'scope';
  const clockToleranceS = int(env, 'MESH_JWT_CLOCK_TOLERANCE_S', JWT_CLOCK_TOLERANCE_DEFAULT_S, 0);
  if (clockToleranceS > JWT_CLOCK_TOLERANCE_MAX_S) {
    throw new ConfigError(
      `MESH_JWT_CLOCK_TOLERANCE_S must be 0 to ${JWT_CLOCK_TOLERANCE_MAX_S} seconds, got ${JSON.stringify(env.MESH_JWT_CLOCK_TOLERANCE_S)}`,
    );
  }
  if (jwksFile && jwksUrl) throw new ConfigError('set MESH_JWKS_FILE or MESH_JWKS_URL, not both');
  if (!jwksFile && !jwksUrl) {
    const stray = ['MESH_JWT_ISSUER', 'MESH_JWT_AUDIENCE', 'MESH_JWT_SCOPES_CLAIM', 'MESH_JWT_CLOCK_TOLERANCE_S'].find((key) => env[key]?.trim());
    if (stray) throw new ConfigError(`${stray} is set but neither MESH_JWKS_FILE nor MESH_JWKS_URL is: no token could be verified`);
    return undefined;
  }
  // Without both, a token the same identity provider issued for another service would be let in.
  if (!issuer || !audience)
    throw new ConfigError(`JWT sign-in needs MESH_JWT_ISSUER and MESH_JWT_AUDIENCE: ${!issuer ? 'MESH_JWT_ISSUER' : 'MESH_JWT_AUDIENCE'} is not set`);
  if (jwksUrl) {
    let url: URL | undefined;
    try {
      url = new URL(jwksUrl);
    } catch {
      url = undefined;
    }
    if (!url || !['http:', 'https:'].includes(url.protocol)) throw new ConfigError(`MESH_JWKS_URL must be an https: URL, got ${JSON.stringify(jwksUrl)}`);
    if (url.protocol === 'http:' && !LOOPBACK_HOSTS.includes(url.hostname)) {
      throw new ConfigError(
        `MESH_JWKS_URL must be https: (plain http: only to this machine, ${LOOPBACK_HOSTS.join(', ')}): the keys every token is checked with would travel unprotected, got ${JSON.stringify(jwksUrl)}`,
      );
    }
  }
  return { jwksFile: jwksFile && resolve(jwksFile), jwksUrl, issuer, audience, scopesClaim, clockToleranceS };
}

/** The file under MESH_DATA_DIR naming the NATS a gateway without NATS_URL uses (a child nats-server's port changes per start); `npm run simulate` reads it. */
export const NATS_URL_FILE = 'nats.url';
