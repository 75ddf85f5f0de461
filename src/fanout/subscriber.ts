import type { Logger } from 'pino';
import { WebSocket } from 'ws';
import type { Composition } from '../services/status/composition.js';
import type { StatusDelta } from '../services/status/delta/delta.js';
import type { LiveField, MaybePromise } from './live-field.js';

/**
 * A payload this small goes out as one message built per subscriber (a copy of a few hundred
 * bytes costs little); a larger one is written by reference between a per-subscriber prefix and
 * suffix, in one frame this module frames itself (`writeOneFrame`).
 */
const BY_REFERENCE_FROM_BYTES = 16 * 1024;

const SUFFIX = Buffer.from('}');

/** The socket under a `ws` WebSocket, as far as writing goes (ws corks it around each frame too). */
interface RawSocket {
  cork(): void;
  uncork(): void;
  write(chunk: Buffer, callback?: (error?: Error | null) => void): boolean;
}

/** FIN and the text opcode: the first byte of an unfragmented text frame (RFC 6455 §5.2). */
const FIN_TEXT = 0x81;

/** The header of an unfragmented, unmasked (server to client) text frame of `length` bytes, then `prefix`. */
function frameHeadWith(length: number, prefix: Buffer): Buffer {
  const size = length < 126 ? 2 : length < 65_536 ? 4 : 10;
  const head = Buffer.allocUnsafe(size + prefix.length);
  head[0] = FIN_TEXT;
  if (size === 2) head[1] = length;
  else if (size === 4) {
    head[1] = 126;
    head.writeUInt16BE(length, 2);
  } else {
    head[1] = 127;
    head.writeUInt32BE(Math.floor(length / 2 ** 32), 2);
    head.writeUInt32BE(length >>> 0, 6);
  }
  prefix.copy(head, size);
  return head;
}

export type PayloadKind = 'full' | 'change';

/** What frames and subscribers need of the group serving them (engine.ts's Group), so neither imports the engine. */
export interface FrameSource {
  readonly field: LiveField;
  readonly engine: { readonly counters: { sent: number; skipped: number }; readonly logger: Logger };
  /** Executes the group's operation over a root value and serializes the result, once per frame and kind. */
  produce(rootValue: unknown): MaybePromise<Buffer>;
  remove(subscriber: Subscriber): void;
}

export const isPromise = <T>(value: MaybePromise<T>): value is Promise<T> => typeof (value as Promise<T>)?.then === 'function';

/** The composition one group executed, with its payloads made at most once each, when first asked for. */
export class Frame {
  private bytes: Partial<Record<PayloadKind, Buffer>> = {};
  private waiting: Partial<Record<PayloadKind, Subscriber[]>> = {};

  constructor(
    private readonly group: FrameSource,
    /** Absent on a frame of a resumed subscriber's catch-up, which only ever goes out as its delta. */
    readonly composition: Composition | undefined,
    /** Set when this frame can go out as a delta to a subscriber holding `delta.baseSeq`. */
    readonly delta: StatusDelta | undefined,
  ) {}

  get seq(): number {
    return this.delta?.seq ?? this.composition!.seq;
  }

  deliver(subscriber: Subscriber, kind: PayloadKind): void {
    const ready = this.bytes[kind];
    if (ready) {
      subscriber.write(this.seq, ready);
      return;
    }
    const waiting = this.waiting[kind];
    if (waiting) {
      waiting.push(subscriber);
      return;
    }
    this.waiting[kind] = [subscriber];
    const done = (bytes: Buffer) => {
      this.bytes[kind] = bytes;
      const list = this.waiting[kind] ?? [];
      this.waiting[kind] = undefined;
      for (const s of list) s.write(this.seq, bytes);
    };
    const fail = (error: unknown) => {
      const list = this.waiting[kind] ?? [];
      this.waiting[kind] = undefined;
      for (const s of list) s.fail(error);
    };
    try {
      const produced = this.group.produce(kind === 'change' ? this.group.field.change!(this.delta!) : this.group.field.full(this.composition!));
      if (isPromise(produced)) produced.then(done, fail);
      else done(produced);
    } catch (error) {
      fail(error);
    }
  }
}

/**
 * One graphql-ws subscription served by a group. Holds at most one frame waiting behind the message
 * its socket is still sending; a newer frame replaces it. To graphql-ws it is the subscription's
 * async iterator: it yields nothing (the group writes to the socket) and ends when either side ends.
 */
export class Subscriber implements AsyncIterableIterator<never> {
  /** The seq of the composition the client holds after the last message written. */
  lastSeq: number | undefined;
  private busy = false;
  private pending: Frame | undefined;
  /** A resumed subscriber's deltas since the seq it held, sent in order before anything live. */
  private backlog: Frame[] = [];
  private closed = false;
  private readonly prefix: Buffer;
  private readonly ended: Promise<IteratorResult<never>>;
  private end!: (result: IteratorResult<never>) => void;
  private abort!: (error: unknown) => void;

  constructor(
    private readonly group: FrameSource,
    readonly socket: WebSocket,
    readonly id: string,
  ) {
    this.prefix = Buffer.from(`{"id":${JSON.stringify(id)},"type":"next","payload":`);
    this.ended = new Promise((resolve, reject) => {
      this.end = resolve;
      this.abort = reject;
    });
  }

  /** Whether a frame waits behind what the socket is still sending (at most one ever does). */
  get waiting(): boolean {
    return this.pending !== undefined;
  }

  /** Starts a resumed subscriber from `seq`, the composition it holds: `frames` (its deltas since) go out first, in order. */
  resume(seq: number, frames: Frame[]): void {
    this.lastSeq = seq;
    this.backlog = frames.slice();
    const first = this.backlog.shift();
    if (first && !this.busy) this.start(first);
    else if (first) this.backlog.unshift(first);
  }

  offer(frame: Frame): void {
    if (this.closed) return;
    if (this.busy || this.backlog.length) {
      if (this.pending) this.group.engine.counters.skipped++;
      this.pending = frame;
      return;
    }
    this.start(frame);
  }

  private start(first: Frame | undefined): void {
    for (let frame = first; frame; frame = this.nextFrame()) {
      const asDelta = frame.delta !== undefined && this.lastSeq === frame.delta.baseSeq;
      if (!asDelta && !frame.composition) continue; // a catch-up delta that no longer applies: what follows is whole
      this.busy = true;
      frame.deliver(this, asDelta ? 'change' : 'full');
      return;
    }
  }

  private nextFrame(): Frame | undefined {
    const next = this.backlog.shift() ?? this.pending;
    if (next === this.pending) this.pending = undefined;
    return next;
  }

  /** Writes one `next` message: the shared payload by reference between this subscription's prefix and suffix. */
  write(seq: number, payload: Buffer): void {
    const socket = this.socket;
    if (this.closed || socket.readyState !== WebSocket.OPEN) {
      this.busy = false;
      return;
    }
    this.lastSeq = seq;
    this.group.engine.counters.sent++;
    const raw = (socket as unknown as { _socket?: RawSocket })._socket;
    // With an extension (permessage-deflate, never offered by this server) ws must frame the message.
    if (payload.length < BY_REFERENCE_FROM_BYTES || !raw || socket.extensions !== '') {
      socket.send(Buffer.concat([this.prefix, payload, SUFFIX]), { binary: false }, this.sent);
      return;
    }
    this.writeOneFrame(raw, payload);
  }

  /**
   * The message as one frame, its payload never copied: the frame's header and this subscription's
   * prefix, the shared payload, the suffix, corked into one write. Sent as three fragments instead,
   * every client joined them again (a copy of the whole message each): the 1,000-subscriber bench
   * measured that as most of the fan-out's time beyond a bare broadcast (docs/BENCHMARKS.md). ws
   * writes an unextended frame at once, never queued, so nothing of its own comes between these writes.
   */
  private writeOneFrame(raw: RawSocket, payload: Buffer): void {
    raw.cork();
    try {
      raw.write(frameHeadWith(this.prefix.length + payload.length + SUFFIX.length, this.prefix));
      raw.write(payload);
      raw.write(SUFFIX, (error) => this.sent(error ?? undefined));
    } finally {
      raw.uncork();
    }
  }

  private readonly sent = (error?: Error): void => {
    this.busy = false;
    if (error || this.closed) {
      this.pending = undefined;
      this.backlog = [];
      return;
    }
    this.start(this.nextFrame());
  };

  /** Ends the subscription with an error (graphql-ws sends it as an `error` message). */
  fail(error: unknown): void {
    this.busy = false;
    if (this.closed) return;
    this.group.engine.logger.error({ err: error }, 'a shared subscription failed to execute');
    this.leave();
    this.abort(error);
  }

  /** Ends the subscription from the server's side (graphql-ws sends `complete`). */
  complete(): void {
    if (this.closed) return;
    this.leave();
    this.end({ done: true, value: undefined });
  }

  private leave(): void {
    this.closed = true;
    this.pending = undefined;
    this.backlog = [];
    this.group.remove(this);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<never>> {
    return this.ended;
  }

  return(): Promise<IteratorResult<never>> {
    this.complete();
    return Promise.resolve({ done: true, value: undefined });
  }

  throw(error: unknown): Promise<IteratorResult<never>> {
    this.complete();
    return Promise.reject(error);
  }
}
