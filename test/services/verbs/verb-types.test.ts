import { expect, expectTypeOf, test } from 'vitest';
import type { pushVerb } from '../../../src/services/plans/verbs.js';
import { type ArgsOf, actingVerb } from '../../../src/services/verbs/verb.js';

// These assertions are type-checked by `npm run typecheck:gateway` (tsconfig.json includes test/),
// which `npm test` runs beside the files: an `expectTypeOf` that no longer holds, or an
// `@ts-expect-error` that no longer errors, fails `npm test`, so the verb typing cannot silently loosen.

test("a verb handler's arguments are typed from the verb's declaration", () => {
  type PushArgs = ArgsOf<(typeof pushVerb)['args']>;
  expectTypeOf<PushArgs['seat']>().toEqualTypeOf<string>();
  expectTypeOf<PushArgs['why']>().toEqualTypeOf<string>();
  expectTypeOf<PushArgs['tiers']>().toEqualTypeOf<string[][] | null | undefined>();
  const verb = actingVerb('probe', 'act', { seat: { type: 'String', required: true }, count: { type: 'Int' } }, async (_mesh: unknown, args) => {
    // @ts-expect-error a name the verb does not declare is a type error
    void args.seet;
    // @ts-expect-error a declared String is not a number
    const n: number = args.seat;
    return { seat: args.seat, count: args.count ?? 0, why: args.why, n };
  });
  expect(Object.keys(verb.args)).toEqual(['seat', 'count', 'why', 'cause', 'condition']);
  expect(verb.acting).toBe(true);
});
