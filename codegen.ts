import type { CodegenConfig } from '@graphql-codegen/cli';
import { printSchema } from 'graphql';
import { schema } from './src/schema/index.js';

// schema.graphql and meshctl's typed operations (src/cli/generated/, from src/cli/operations/) are
// committed, with persisted-documents.json (hash → document, the manifest MESH_PERSISTED_ONLY=1
// answers from); tests fail when either drifts from the code's schema (`npm run codegen` writes both).
const config: CodegenConfig = {
  schema: printSchema(schema),
  documents: ['src/cli/operations/**/*.graphql'],
  generates: {
    'schema.graphql': { plugins: ['schema-ast'], config: { includeDirectives: false } },
    'src/cli/generated/': {
      preset: 'client',
      presetConfig: { fragmentMasking: false, gqlTagName: 'graphql', persistedDocuments: true },
      config: { useTypeImports: true, emitLegacyCommonJSImports: false, enumsAsTypes: true },
    },
  },
};

export default config;
