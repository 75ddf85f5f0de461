import { readFileSync } from 'node:fs';
import { buildSchema, lexicographicSortSchema, parse, printSchema, validate } from 'graphql';
import { expect, test } from 'vitest';
import * as dashboard from '../../dashboard/src/generated/graphql.js';
import { RenameSeatDocument, SeatsDocument } from '../../src/cli/generated/graphql.js';
import { schema } from '../../src/schema/index.js';

const committed = readFileSync(new URL('../../schema.graphql', import.meta.url), 'utf8');

test('the committed schema.graphql is the schema the code builds (run npm run codegen when this fails)', () => {
  expect(printSchema(lexicographicSortSchema(buildSchema(committed)))).toBe(printSchema(lexicographicSortSchema(schema)));
});

test('mutations answer with the errors plugin default names and every error implements Error', () => {
  const renamed = schema.getType('MutationRenameSeatResult');
  expect(renamed?.toString()).toBe('MutationRenameSeatResult');
  const success = schema.getType('MutationRenameSeatSuccess') as import('graphql').GraphQLObjectType;
  expect(Object.keys(success.getFields())).toEqual(['data']);
  const errorInterface = schema.getType('Error') as import('graphql').GraphQLInterfaceType;
  expect(Object.keys(errorInterface.getFields()).sort()).toEqual(['code', 'message']);
  for (const name of ['NotFoundError', 'ConflictError', 'InvalidError', 'ForbiddenError']) {
    const type = schema.getType(name) as import('graphql').GraphQLObjectType;
    expect(type.getInterfaces().map((i) => i.name)).toContain('Error');
  }
});

test('the typed operations generated for tools are valid against the schema (run npm run codegen when this fails)', () => {
  for (const document of [SeatsDocument, RenameSeatDocument]) expect(validate(schema, document)).toEqual([]);
  // The dashboard's are strings (dashboard/src/generated/): every one it sends.
  const sent = Object.entries(dashboard).filter(([name]) => name.endsWith('Document'));
  expect(sent.length).toBeGreaterThan(10);
  for (const [name, document] of sent) expect(validate(schema, parse(String(document))), name).toEqual([]);
});

test("meshctl's and the dashboard's typed operations, and the manifest, are what codegen makes from the schema (run npm run codegen when this fails)", async () => {
  // Codegen run here, over the schema this worker already built, writing nothing: as a process of
  // its own (`--check`) it loaded tsx and the schema again, 7 CPU-seconds of its own.
  const [{ generate }, { default: config }] = await Promise.all([import('@graphql-codegen/cli'), import('../../codegen.js')]);
  const outputs: { filename: string; content: string }[] = await generate(config, false);
  expect(outputs.length).toBeGreaterThan(6);
  for (const { filename, content } of outputs) expect(readFileSync(filename, 'utf8'), filename).toBe(content);
}, 90_000);
