import type { CodegenConfig } from '@graphql-codegen/cli';
import { printSchema } from 'graphql';
import { schema } from './src/schema/index.js';

// schema.graphql, meshctl's typed operations (src/cli/generated/, from src/cli/operations/) and the
// dashboard's (dashboard/src/generated/, from dashboard/src/operations/) are committed, each with
// its persisted-documents.json (hash → document): MESH_PERSISTED_ONLY=1 answers from both, so the
// dashboard works on such a gateway too. Tests fail when any drifts from the code's schema
// (`npm run codegen` writes them all).
const CLI_OPERATIONS = 'src/cli/operations/**/*.graphql';
const DASHBOARD_OPERATIONS = 'dashboard/src/operations/**/*.graphql';

const config: CodegenConfig = {
  schema: printSchema(schema),
  generates: {
    'schema.graphql': { plugins: ['schema-ast'], config: { includeDirectives: false } },
    'src/cli/generated/': {
      documents: [CLI_OPERATIONS],
      preset: 'client',
      presetConfig: { fragmentMasking: false, gqlTagName: 'graphql', persistedDocuments: true },
      config: { useTypeImports: true, emitLegacyCommonJSImports: false, enumsAsTypes: true },
    },
    // The page sends each document's text (a string, no graphql-js in the bundle); DateTime is the
    // ISO string the gateway serializes it as.
    'dashboard/src/generated/': {
      documents: [DASHBOARD_OPERATIONS],
      preset: 'client',
      presetConfig: { fragmentMasking: false, gqlTagName: 'graphql', persistedDocuments: true },
      config: { documentMode: 'string', useTypeImports: true, emitLegacyCommonJSImports: false, enumsAsTypes: true, scalars: { DateTime: 'string' } },
    },
  },
};

export default config;
