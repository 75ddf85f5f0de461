import { request as httpRequest } from 'node:http';
import WebSocket from 'ws';
import type { Door } from '../../src/server/guards/refusal.js';

/**
 * One request at one door, as a client sends it, and what the gateway answered: the probes of
 * every-door-every-guard.test.ts. Node's http and ws clients, so a probe can set any Host, Origin,
 * Content-Length or content type (fetch sets some of them itself).
 */

/** What a probe changes in an ordinary, good request so that one guard refuses it. */
export interface Tweak {
  host?: string;
  origin?: string;
  /** The whole Authorization header; `null` sends none. */
  authorization?: string | null;
  contentType?: string;
  /** Sends no x-graphql-yoga-csrf header on a GET (an ordinary GET carries it). */
  noCsrfHeader?: boolean;
  contentLength?: string;
  variables?: Record<string, unknown>;
  extensions?: Record<string, unknown>;
}

/** What a door answered. */
export type Outcome =
  | { kind: 'http'; status: number; text: string }
  | { kind: 'closed'; code: number; reason: string }
  | { kind: 'error'; message: string; code: unknown }
  | { kind: 'passed' };

/** The status query the status fast path answers once it has answered it for the caller. */
const FAST_STATUS = 'query WalkStatus { status { seq } }';
const ORDINARY = '{ __typename }';

const ACCEPT: Partial<Record<Door, string>> = {
  POST: 'application/json',
  GET: 'application/json',
  'status fast path': 'application/json',
  multipart: 'multipart/mixed',
  SSE: 'text/event-stream',
};

/** Sends one HTTP request of `door` with `tweak`; the status and the body's text (the first 64 KiB of a stream). */
export function probeHttp(url: string, door: Door, token: string, tweak: Tweak): Promise<Outcome> {
  const base = new URL(url);
  const query = door === 'status fast path' ? FAST_STATUS : ORDINARY;
  const params = { query, ...(tweak.variables && { variables: tweak.variables }), ...(tweak.extensions && { extensions: tweak.extensions }) };
  const get = door === 'GET';
  const search = new URLSearchParams(Object.entries(params).map(([name, value]) => [name, typeof value === 'string' ? value : JSON.stringify(value)]));
  const body = get ? undefined : JSON.stringify(params);
  const authorization = tweak.authorization === undefined ? `Bearer ${token}` : tweak.authorization;
  const headers: Record<string, string> = {
    host: tweak.host ?? base.host,
    accept: ACCEPT[door] ?? 'application/json',
    ...(authorization !== null && { authorization }),
    ...(tweak.origin && { origin: tweak.origin }),
    ...(get ? (tweak.noCsrfHeader ? {} : { 'x-graphql-yoga-csrf': '1' }) : { 'content-type': tweak.contentType ?? 'application/json' }),
    ...(body !== undefined && { 'content-length': tweak.contentLength ?? String(Buffer.byteLength(body)) }),
  };
  return new Promise((resolve, reject) => {
    const path = get ? `${base.pathname}?${search}` : base.pathname;
    const request = httpRequest({ host: base.hostname, port: base.port, method: get ? 'GET' : 'POST', path, headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
        if (text.length > 65_536) response.destroy();
      });
      const done = () => {
        resolve({ kind: 'http', status: response.statusCode ?? 0, text });
        request.destroy();
      };
      response.once('end', done);
      response.once('close', done);
    });
    // A body longer than it says is never sent: the refusal comes before the gateway reads one.
    request.on('error', (error) => (request.destroyed ? undefined : reject(error)));
    if (body !== undefined && tweak.contentLength === undefined) request.end(body);
    else if (body !== undefined) request.write(body);
    else request.end();
  });
}

/** Opens a graphql-ws socket with `tweak`'s Host, Origin and Authorization: the upgrade's refusal, the socket's close, or passed (then closed). */
export function probeConnect(url: string, token: string, tweak: Tweak): Promise<Outcome> {
  const authorization = tweak.authorization === undefined ? `Bearer ${token}` : tweak.authorization;
  return new Promise((resolve, reject) => {
    const headers = { ...(tweak.host && { host: tweak.host }), ...(tweak.origin && { origin: tweak.origin }) };
    const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws', { headers });
    socket.once('unexpected-response', (_request, response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.once('end', () => resolve({ kind: 'http', status: response.statusCode ?? 0, text }));
    });
    socket.once('error', (error) => (socket.readyState === WebSocket.CLOSED ? undefined : reject(error)));
    socket.once('open', () =>
      socket.send(JSON.stringify({ type: 'connection_init', payload: authorization === null ? {} : { Authorization: authorization } })),
    );
    socket.once('close', (code, reason) => resolve({ kind: 'closed', code, reason: String(reason) }));
    socket.once('message', (data) => {
      if (JSON.parse(String(data)).type !== 'connection_ack') return;
      resolve({ kind: 'passed' });
      socket.close();
    });
  });
}

/** Connects as `token`, runs `first` (a subscription held open) if given, then subscribes with `tweak`'s variables and extensions. */
export function probeSubscribe(url: string, token: string, tweak: Tweak, first?: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
    const send = (message: unknown) => socket.send(JSON.stringify(message));
    const finish = (outcome: Outcome) => {
      resolve(outcome);
      socket.close();
    };
    socket.once('error', reject);
    socket.once('open', () => send({ type: 'connection_init', payload: { Authorization: `Bearer ${token}` } }));
    socket.once('close', (code, reason) => resolve({ kind: 'closed', code, reason: String(reason) }));
    socket.on('message', (data) => {
      const message = JSON.parse(String(data));
      if (message.type === 'connection_ack') {
        if (first) send({ id: 'first', type: 'subscribe', payload: { query: first } });
        send({ id: 'probe', type: 'subscribe', payload: { query: ORDINARY, variables: tweak.variables, extensions: tweak.extensions } });
      } else if (message.id === 'probe' && message.type === 'error') {
        finish({ kind: 'error', message: message.payload[0]?.message, code: message.payload[0]?.extensions?.code });
      } else if (message.id === 'probe') finish({ kind: 'passed' });
    });
  });
}
