import { z } from 'zod';
import { canonical } from '../../kernel/canonical-json.js';
import { Invalid } from '../../kernel/errors.js';
import { isName, NAME_RULE } from '../../kernel/names.js';

/** The argument types a verb can declare; a call's arguments are judged against them. */
export const ARG_TYPES = ['String', 'Int', 'Float', 'Boolean', 'ID', 'JSON', 'DateTime', '[String]', '[[String]]'] as const;
export type ArgType = (typeof ARG_TYPES)[number];

export interface VerbArg {
  name: string;
  type: ArgType;
  required: boolean;
}

export interface Verb {
  name: string;
  acting: boolean;
  args: VerbArg[];
}

/** What a seat speaks: the message kinds it accepts and emits, and the verbs it serves. */
export interface Protocol {
  accepts: string[];
  emits: string[];
  serves: Verb[];
}

const token = z.string().refine(isName, NAME_RULE);

const verbArgSchema = z.object({
  name: token,
  type: z.enum(ARG_TYPES),
  required: z.boolean().default(false),
});

const verbSchema = z
  .object({
    name: token,
    acting: z.boolean().default(false),
    args: z.array(verbArgSchema).max(100).default([]),
  })
  .refine((v) => new Set(v.args.map((a) => a.name)).size === v.args.length, 'an argument is named twice');

const protocolSchema = z.object({
  accepts: z.array(token).max(1000).default([]),
  emits: z.array(token).max(1000).default([]),
  serves: z
    .array(verbSchema)
    .max(1000)
    .default([])
    .refine((verbs) => new Set(verbs.map((v) => v.name)).size === verbs.length, 'a verb is named twice'),
});

/** Reads a protocol from JSON text or a value; throws Invalid naming the first thing wrong. */
export function parseProtocol(input: unknown, what = 'protocol'): Protocol {
  let value = input;
  if (typeof input === 'string') {
    try {
      value = JSON.parse(input);
    } catch (error) {
      throw new Invalid(`${what} is not JSON: ${(error as Error).message}`, what);
    }
  }
  const parsed = protocolSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = [what, ...issue.path.map(String)].join('.');
    throw new Invalid(`${path}: ${issue.message}`, what);
  }
  return parsed.data;
}

/**
 * Rows written before a column held data, or by hand, are read leniently: what is unreadable is
 * empty. The list schemas are built once: a seat read builds none (issue 13's profile found
 * building them per seat among the costs of a nested read), and an empty list is not parsed at all.
 */
function listReader<T>(schema: z.ZodType<T>): (value: unknown) => T[] {
  const list = z.array(schema);
  return (value) => {
    if (Array.isArray(value) && value.length === 0) return [];
    const parsed = list.safeParse(value);
    return parsed.success ? parsed.data : [];
  };
}

export const readVerbs: (value: unknown) => Verb[] = listReader(verbSchema as unknown as z.ZodType<Verb>);
export const readNames: (value: unknown) => string[] = listReader(z.string());

const sameVerb = (a: Verb, b: Verb): boolean => canonical(a) === canonical(b);

/**
 * Widens `row` with what `binary` names and the row lacks, by name; nothing the row has is lost.
 * With `binaryDefinesVerbs` (the controller's own seat) a verb both define takes the binary's form.
 */
export function widenProtocol(row: Protocol, binary: Protocol, binaryDefinesVerbs: boolean): { protocol: Protocol; changed: boolean } {
  let changed = false;
  const union = (have: string[], want: string[]) => {
    const out = [...have];
    for (const w of want) if (!out.includes(w)) out.push(w), (changed = true);
    return out;
  };
  const accepts = union(row.accepts, binary.accepts);
  const emits = union(row.emits, binary.emits);
  const serves = [...row.serves];
  for (const verb of binary.serves) {
    const at = serves.findIndex((v) => v.name === verb.name);
    if (at < 0) {
      serves.push(verb);
      changed = true;
    } else if (binaryDefinesVerbs && !sameVerb(serves[at]!, verb)) {
      serves[at] = verb;
      changed = true;
    }
  }
  return { protocol: { accepts, emits, serves }, changed };
}
