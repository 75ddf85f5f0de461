import type { CodegenConfig } from '@graphql-codegen/cli';
import { printSchema } from 'graphql';
import { schema } from './src/schema/index.js';

// schema.graphql, meshctl's typed operations (src/cli/generated/, from src/cli/operations/) and the
// dashboard's (dashboard/src/generated/, from dashboard/src/operations/) are committed, with
// persisted-documents.json (hash → document, the manifest MESH_PERSISTED_ONLY=1 answers from): it
// holds both clients' operations, so the dashboard works on such a gateway too. Tests fail when any
// drifts from the code's schema (`npm run codegen` writes them all).
const CLI_OPERATIONS = 'src/cli/operations/**/*.graphql';
const DASHBOARD_OPERATIONS = 'dashboard/src/operations/**/*.graphql';

const config: CodegenConfig = {
  schema: printSchema(schema),
  generates: {
    'schema.graphql': { plugins: ['schema-ast'], config: { includeDirectives: false } },
    'src/cli/generated/': {
      documents: [CLI_OPERATIONS, DASHBOARD_OPERATIONS],
      preset: 'client',
      presetConfig: { fragmentMasking: false, gqlTagName: 'graphql', persistedDocuments: true },
      config: { useTypeImports: true, emitLegacyCommonJSImports: false, enumsAsTypes: true },
    },
    // The page sends each document's text (a string, no graphql-js in the bundle); DateTime is the
    // ISO string the gateway serializes it as.
    'dashboard/src/generated/': {
      documents: [DASHBOARD_OPERATIONS],
      preset: 'client',
      presetConfig: { fragmentMasking: false, gqlTagName: 'graphql' },
      config: { documentMode: 'string', useTypeImports: true, emitLegacyCommonJSImports: false, enumsAsTypes: true, scalars: { DateTime: 'string' } },
    },
  },
};

export default config;
