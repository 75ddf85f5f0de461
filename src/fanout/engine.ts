import { type DocumentNode, type ExecutionArgs, type ExecutionResult, execute as executeEvent, type GraphQLSchema, getOperationAST, Kind } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { inSpanSync, ROOT_CONTEXT } from '../bus/trace-context.js';
import type { Composition } from '../services/status/composition.js';
import { diffCompositions, type StatusDelta } from '../services/status/delta/delta.js';
import { catchUpFrom, LivePace, type StatusChangeFeed } from '../services/status/live/subscription.js';
import { everyMsInRange, type LiveArgs, liveArgs } from './live-args.js';
import type { LiveField, MaybePromise } from './live-field.js';
import { Frame, type FrameSource, isPromise, Subscriber } from './subscriber.js';

/** What a group executes with: the enveloped `execute` and every argument but the root value. */
export interface PreparedOperation {
  execute(args: ExecutionArgs): MaybePromise<ExecutionResult | AsyncIterable<unknown>>;
  args: Omit<ExecutionArgs, 'rootValue'>;
}

export interface FanoutStats {
  groups: number;
  subscribers: number;
  /** GraphQL executions run for groups since the start. */
  executions: number;
  /** Payloads serialized since the start (one per execution). */
  serializations: number;
  /** Messages written to sockets. */
  sent: number;
  /** Compositions a subscriber never got because a newer one replaced it while its socket was busy. */
  skipped: number;
  /** Subscribers with a composition waiting behind what their socket is still sending (each holds one at most). */
  waiting: number;
  /** The most bytes any subscriber's socket has yet to hand to the kernel. */
  maxBuffered: number;
}

const LIVE_EXECUTION = Symbol('a group executing one event of a live field');

/** Marks a group's context: its executions run the selection over one event, as `subscribe` does for each. */
export function markLiveContext<T extends object>(context: T): T {
  return Object.assign(context, { [LIVE_EXECUTION]: true });
}

/**
 * Yoga's executor runs a subscription document as a subscription (calling the field's `subscribe`);
 * a group runs it over one event it already has, which is graphql-js's `execute` with the event as
 * root value (what `subscribe` does per event). Every plugin's onExecute hooks still apply.
 */
export const liveExecutionPlugin: Plugin = {
  onExecute({ args, setExecuteFn }) {
    if ((args.contextValue as unknown as Record<symbol, unknown> | undefined)?.[LIVE_EXECUTION]) setExecuteFn(executeEvent as never);
  },
};

/**
 * The subscribers of one operation for one caller: one execution and one payload per composition
 * for all. Its pace (`LivePace`, the rule every live subscription follows) sends, with `everyMs`,
 * at most one composition per interval, the latest, as the delta from the last one sent (the
 * skipped ones merged into it).
 */
export class Group implements FrameSource {
  readonly subscribers = new Set<Subscriber>();
  latest: Frame | undefined;
  readonly args: LiveArgs;
  private readonly pace: LivePace;

  constructor(
    readonly engine: Fanout,
    readonly key: string,
    readonly field: LiveField,
    private readonly operation: PreparedOperation,
  ) {
    const { schema, document, variableValues, operationName } = operation.args;
    this.args = liveArgs(schema, document, variableValues, operationName);
    this.pace = new LivePace(Math.max(0, this.args.everyMs ?? 0), field.change !== undefined, () => {
      const message = this.pace.take();
      if (message) this.send(message.composition, message.delta);
    });
  }

  get document(): DocumentNode {
    return this.operation.args.document;
  }

  get schema(): GraphQLSchema {
    return this.operation.args.schema;
  }

  /** Executes the operation over `rootValue` and serializes the result: once per frame and kind. */
  produce(rootValue: unknown): MaybePromise<Buffer> {
    this.engine.counters.executions++;
    const result = this.operation.execute({ ...this.operation.args, rootValue });
    const serialize = (r: ExecutionResult | AsyncIterable<unknown>) => {
      if (Symbol.asyncIterator in r) throw new Error('a live field executed to a stream; it must resolve to one value per root value');
      this.engine.counters.serializations++;
      return Buffer.from(JSON.stringify(r));
    };
    return isPromise(result) ? result.then(serialize) : serialize(result);
  }

  publish(composition: Composition, delta: StatusDelta | undefined): void {
    this.pace.offer(composition, delta);
  }

  private send(composition: Composition, delta: StatusDelta | undefined): void {
    const frame = new Frame(this, composition, delta);
    this.latest = frame;
    for (const subscriber of this.subscribers) subscriber.offer(frame);
  }

  /**
   * A new subscriber, sent the latest composition at once (or the first when it comes). One that
   * resumes (`after: N`) is sent the deltas since N merged into one, when this replica still keeps
   * them, then what is live; else the latest whole.
   */
  join(socket: WebSocket, id: string): Subscriber {
    const subscriber = new Subscriber(this, socket, id);
    this.subscribers.add(subscriber);
    const after = this.args.after;
    const from = after !== undefined && this.field.change ? this.engine.catchUpFrom(after) : undefined;
    if (from && after !== undefined) {
      subscriber.resume(after, from.catchUp ? [new Frame(this, undefined, from.catchUp)] : []);
      if (this.latest && this.latest.seq > from.held) subscriber.offer(this.latest);
    } else if (this.latest) subscriber.offer(this.latest);
    return subscriber;
  }

  remove(subscriber: Subscriber): void {
    this.subscribers.delete(subscriber);
    if (this.subscribers.size === 0) {
      this.pace.close();
      this.engine.drop(this);
    }
  }
}

export interface FanoutOptions {
  feed: StatusChangeFeed;
  /** The root subscription fields served by groups, by name. */
  fields: Record<string, LiveField>;
  logger: Logger;
}

/**
 * Serves live subscriptions of the status feed to many sockets: subscribers whose operation and
 * access are the same share one group, so each composition is executed and serialized once per
 * group, and the bytes are written to every socket as they are. Other operations are not its.
 */
export class Fanout {
  readonly logger: Logger;
  readonly counters = { executions: 0, serializations: 0, sent: 0, skipped: 0 };
  private readonly groups = new Map<string, Group>();
  private readonly fields: Record<string, LiveField>;
  private readonly feed: StatusChangeFeed;
  private readonly unsubscribe: () => void;
  private last: Composition | undefined;

  constructor(options: FanoutOptions) {
    this.logger = options.logger;
    this.fields = options.fields;
    this.feed = options.feed;
    this.last = options.feed.current();
    this.unsubscribe = options.feed.subscribe((composition, delta) => this.traced(composition, () => this.publish(composition, delta)));
  }

  /** The live field an operation subscribes to, when it is a subscription of exactly one live root field. */
  liveField(document: DocumentNode, operationName?: string | null, variables?: unknown): string | undefined {
    const operation = getOperationAST(document, operationName);
    if (operation?.operation !== 'subscription') return undefined;
    const selections = operation.selectionSet.selections;
    if (selections.length !== 1) return undefined;
    const [selection] = selections;
    if (selection.kind !== Kind.FIELD || selection.directives?.length) return undefined;
    // An everyMs out of range is left to the field's own subscribe, which refuses it with a clear error.
    if (!everyMsInRange(selection, variables)) return undefined;
    return Object.hasOwn(this.fields, selection.name.value) ? selection.name.value : undefined;
  }

  group(key: string): Group | undefined {
    return this.groups.get(key);
  }

  /** The group for `key`, made with `operation` when there is none yet (a racing subscriber may have made it). */
  open(key: string, field: string, operation: PreparedOperation): Group {
    let group = this.groups.get(key);
    if (group) return group;
    group = new Group(this, key, this.fields[field], operation);
    this.groups.set(key, group);
    const current = this.feed.current() ?? this.last;
    if (current) group.publish(current, undefined);
    return group;
  }

  /** Where a subscriber resuming from `after` starts (`catchUpFrom`): the deltas since merged into one, when the feed still keeps them. */
  catchUpFrom(after: number): ReturnType<typeof catchUpFrom> {
    return catchUpFrom(this.feed, after);
  }

  drop(group: Group): void {
    if (this.groups.get(group.key) === group) this.groups.delete(group.key);
  }

  /** Delivery to the groups in a span of its own (their executions its children), when there are groups. */
  private traced(composition: Composition, deliver: () => void): void {
    if (this.groups.size === 0) {
      deliver();
      return;
    }
    const attributes = { 'mesh.status.seq': composition.seq, 'mesh.fanout.groups': this.groups.size };
    inSpanSync('fanout delivery', { parent: ROOT_CONTEXT, attributes }, deliver);
  }

  private publish(composition: Composition, given?: StatusDelta): void {
    const previous = this.last;
    if (previous && composition.seq <= previous.seq) return;
    this.last = composition;
    // The feed's delta, when it brings the composition before to this one, saves diffing the mesh again.
    let delta: StatusDelta | undefined = given && previous && given.baseSeq === previous.seq ? given : undefined;
    let diffed = delta !== undefined;
    for (const group of this.groups.values()) {
      if (group.field.change && !diffed) {
        diffed = true;
        delta = previous ? diffCompositions(previous, composition) : undefined;
      }
      group.publish(composition, delta);
    }
  }

  stats(): FanoutStats {
    let subscribers = 0;
    let waiting = 0;
    let maxBuffered = 0;
    for (const group of this.groups.values()) {
      subscribers += group.subscribers.size;
      for (const s of group.subscribers) {
        if (s.waiting) waiting++;
        maxBuffered = Math.max(maxBuffered, s.socket.bufferedAmount);
      }
    }
    return { groups: this.groups.size, subscribers, ...this.counters, waiting, maxBuffered };
  }

  /** Stops listening to the feed and completes every subscription. */
  close(): void {
    this.unsubscribe();
    for (const group of [...this.groups.values()]) for (const subscriber of [...group.subscribers]) subscriber.complete();
  }
}
