import type { JetStreamManager } from '@nats-io/jetstream';
import type { KV, KvEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import { streamOf } from './buckets.js';

/** How long a view waits for a bucket's present entries before it serves what it has. */
const VIEW_READY_TIMEOUT_MS = 15_000;

export interface ViewEntry<T> {
  key: string;
  value: T;
  revision: number;
  created: Date;
}

export interface ViewOptions<T> {
  /** Reads an entry's value; undefined drops the entry (unreadable or not ours). */
  decode(entry: KvEntry): T | undefined;
  /** Mirrors the stream's own limits, which remove entries without a delete marker. */
  limits?: { maxEntries?: number; maxAgeMs?: number };
  logger?: Logger;
}

/**
 * One replica's in-memory copy of a bucket, kept by a watch so every replica lists what every other
 * wrote, within milliseconds. Writes made here are applied at once (`apply`), so a writer reads its
 * own writes. Authoritative reads by key still go to the bucket.
 */
export class KvView<T> {
  private readonly entries = new Map<string, ViewEntry<T>>();
  private stopped = false;
  private stopWatch: () => void = () => undefined;
  private readonly listeners = new Set<(entry: KvEntry) => void>();

  private constructor(private readonly options: ViewOptions<T>) {}

  /** Starts watching; resolves once the entries present at start are loaded (or after a bounded wait). */
  static async start<T>(kv: KV, bucket: string, jsm: JetStreamManager, options: ViewOptions<T>): Promise<KvView<T>> {
    const view = new KvView<T>(options);
    const info = await jsm.streams.info(streamOf(bucket));
    const lastSeq = info.state.messages > 0 ? info.state.last_seq : 0;
    const watch = await kv.watch();
    view.stopWatch = () => watch.stop();
    let markReady: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    if (lastSeq === 0) markReady();
    (async () => {
      for await (const entry of watch) {
        for (const listener of view.listeners) listener(entry);
        if (entry.operation === 'PUT') {
          const value = options.decode(entry);
          if (value !== undefined) view.apply(entry.key, value, entry.revision, entry.created);
          else view.remove(entry.key, entry.revision);
        } else {
          view.remove(entry.key, entry.revision);
        }
        if (entry.revision >= lastSeq) markReady();
      }
    })().catch((err) => {
      if (!view.stopped) options.logger?.error({ err, bucket }, 'bucket watch ended');
    });
    const timer = new Promise<void>((resolve) => setTimeout(resolve, VIEW_READY_TIMEOUT_MS).unref());
    await Promise.race([ready, timer]);
    return view;
  }

  /** Takes an entry unless a newer revision of its key is already here. */
  apply(key: string, value: T, revision: number, created: Date = new Date()): void {
    const present = this.entries.get(key);
    if (present && present.revision >= revision) return;
    this.entries.delete(key);
    this.entries.set(key, { key, value, revision, created });
    const max = this.options.limits?.maxEntries;
    if (max !== undefined && this.entries.size > max) this.evictOldest(this.entries.size - max);
  }

  remove(key: string, revision: number): void {
    const present = this.entries.get(key);
    if (present && present.revision < revision) this.entries.delete(key);
  }

  get(key: string): ViewEntry<T> | undefined {
    const entry = this.entries.get(key);
    return entry && !this.expired(entry, Date.now()) ? entry : undefined;
  }

  /** Every live entry, in no particular order. */
  values(): ViewEntry<T>[] {
    const now = Date.now();
    const out: ViewEntry<T>[] = [];
    for (const entry of this.entries.values()) {
      if (this.expired(entry, now)) this.entries.delete(entry.key);
      else out.push(entry);
    }
    return out;
  }

  /**
   * Hears every entry the bucket's watch delivers from here on, written by any replica, once each
   * and in revision order (a write made here too, when the watch brings it back). Answers the
   * function that stops hearing.
   */
  onEntry(listener: (entry: KvEntry) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get size(): number {
    return this.entries.size;
  }

  stop(): void {
    this.stopped = true;
    this.listeners.clear();
    this.stopWatch();
  }

  private expired(entry: ViewEntry<T>, now: number): boolean {
    const maxAge = this.options.limits?.maxAgeMs;
    return maxAge !== undefined && now - entry.created.getTime() > maxAge;
  }

  // The stream discards by sequence (oldest first), and a key's sequence is its revision.
  private evictOldest(count: number): void {
    const sorted = [...this.entries.values()].sort((a, b) => a.revision - b.revision);
    for (const entry of sorted.slice(0, count)) this.entries.delete(entry.key);
  }
}
