import { Forbidden } from '../../kernel/errors.js';
import type { Scope } from '../access/caller.js';
import type { ArgType, Verb } from './protocol.js';

/** One argument a controller verb declares: its type, whether it must be given, what it means. */
export interface ArgSpec {
  readonly type: ArgType;
  readonly required?: boolean;
  /** Shown on the GraphQL argument; the seat row keeps name, type and required only. */
  readonly description?: string;
}

export type ArgSpecs = Readonly<Record<string, ArgSpec>>;

/** The value a judged argument of each declared type holds (judgeArgs guarantees it). */
interface ArgValues {
  String: string;
  ID: string;
  DateTime: string;
  Int: number;
  Float: number;
  Boolean: boolean;
  JSON: unknown;
  '[String]': string[];
  '[[String]]': string[][];
}

type RequiredKeys<A extends ArgSpecs> = { [K in keyof A]: A[K] extends { required: true } ? K : never }[keyof A];

/**
 * The arguments a verb's handler receives, derived from its declaration: required ones present,
 * optional ones possibly absent (null counts as absent). A name the verb does not declare is a
 * type error, so `args.seet` fails `tsc`.
 */
export type ArgsOf<A extends ArgSpecs> = { [K in RequiredKeys<A>]: ArgValues[A[K]['type']] } & {
  [K in Exclude<keyof A, RequiredKeys<A>>]?: ArgValues[A[K]['type']] | null;
};

/** What every acting verb takes besides its own arguments: the hand-act it leaves. */
const ACTING_ARGS = {
  why: { type: 'String', required: true, description: 'Why this is done, in a sentence: required, never blank. It is kept in the hand-act log.' },
  cause: { type: 'String', description: 'What made it necessary, as a short label; repeatedCauses groups hand-acts by it.' },
  condition: { type: 'String', description: 'The state of the mesh that was seen when acting.' },
} as const satisfies ArgSpecs;

type ActingArgs = typeof ACTING_ARGS;

/** The doors a call comes through: the GraphQL API or the NATS request subjects. */
export const CALL_DOORS = ['GRAPHQL', 'NATS'] as const;
export type CallDoor = (typeof CALL_DOORS)[number];

/** Who asked, with which scopes, through which door, and the call that records it. */
export interface VerbCall {
  caller: string;
  /** The caller's scopes: a forwarding verb passes them on, so a call to the controller's own seat runs with them. */
  scopes: ReadonlySet<Scope>;
  door: CallDoor;
  callId: string;
}

/**
 * One controller verb, defined once: its name (its GraphQL field's and its NATS subject's last
 * token), whether it acts, its arguments (the source of the seat row, the GraphQL arguments and
 * the NATS judge) and its handler. `D` is what the handler needs of the running mesh.
 */
export interface ControllerVerb<D, A extends ArgSpecs, R> {
  readonly name: string;
  readonly acting: boolean;
  /** The scope a caller needs to run it, through any door: `invokeVerb` refuses a caller without it. */
  readonly scope: Scope;
  readonly args: A;
  /** A forwarding verb (callVerb) records its own call, under the seat it calls; the dispatcher records none. */
  readonly recordsItsOwnCall?: boolean;
  /**
   * An acting verb whose act commits in its own transaction and then sends on NATS (a plan's
   * applies): it cannot run inside the dispatcher's transaction, so it writes its hand-act and its
   * call's end (`mesh.outbox.endCall`) in its own, just before it commits: they commit together.
   */
  readonly commitsItsOwnAct?: boolean;
  /**
   * An acting verb whose act is JetStream's, not the store's (resetConsumer): no transaction can
   * hold both, so its hand-act and its call's end are written to the outbox just after its act.
   */
  readonly actsOutsideTheStore?: boolean;
  /** Its answer shows other callers' calls (their arguments and answers): never answered to a caller nobody named. */
  readonly showsOthersCalls?: boolean;
  run(mesh: D, args: ArgsOf<A>, call: VerbCall): Promise<R>;
}

/** Any verb of the registry, as the NATS door looks one up by name. */
// biome-ignore lint/suspicious/noExplicitAny: the registry holds verbs of every argument shape; each is typed where it is defined.
export type AnyControllerVerb<D> = ControllerVerb<D, any, unknown>;

/**
 * A verb that changes the mesh: it takes why, cause and condition besides `args`, and leaves a
 * hand-act. The dispatcher runs it in one transaction with its hand-act and its call's end (the
 * `db` its handler gets is that transaction), unless it `commitsItsOwnAct` (then its records go in
 * its own) or `actsOutsideTheStore` (then they are written just after its act).
 */
export function actingVerb<D, const A extends ArgSpecs, R>(
  name: string,
  scope: 'act' | 'admin',
  args: A,
  run: (mesh: D, args: ArgsOf<A & ActingArgs>, call: VerbCall) => Promise<R>,
  options: { commitsItsOwnAct?: boolean; actsOutsideTheStore?: boolean } = {},
): ControllerVerb<D, A & ActingArgs, R> {
  return { name, acting: true, scope, args: { ...args, ...ACTING_ARGS }, run, ...options };
}

/** A verb that reads the mesh and changes nothing. */
export function readingVerb<D, const A extends ArgSpecs, R>(
  name: string,
  scope: Scope,
  args: A,
  run: (mesh: D, args: ArgsOf<A>, call: VerbCall) => Promise<R>,
  options: { recordsItsOwnCall?: boolean; showsOthersCalls?: boolean } = {},
): ControllerVerb<D, A, R> {
  return { name, acting: false, scope, args, run, ...options };
}

/** Whether scopes allow a verb: the one rule every door applies, for callers from any source (tokens, NATS users, JWT). */
export const mayRun = (verb: { scope: Scope }, scopes: ReadonlySet<Scope>): boolean => scopes.has(verb.scope);

/** The refusal of a caller without the scope a verb (or a field) needs, naming the scope: the same words on every door. */
export const scopeRefusal = (caller: string, what: string, scope: string): Forbidden =>
  new Forbidden(`${caller} may not run ${what}: it needs the ${scope} scope`);

/** A verb as a seat row keeps it: name, acting, and each argument's name, type and whether it is required. */
export function protocolOf(verb: AnyControllerVerb<never>): Verb {
  const args = Object.entries(verb.args as ArgSpecs).map(([name, spec]) => ({ name, type: spec.type, required: spec.required ?? false }));
  return { name: verb.name, acting: verb.acting, args };
}
