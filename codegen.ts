import type { CodegenConfig } from '@graphql-codegen/cli';
import { printSchema } from 'graphql';
import { schema } from './src/schema/index.js';

// schema.graphql is committed and a test compares it with the code's schema; the typed operations
// under src/generated/ serve the tests and meshctl.
const config: CodegenConfig = {
  schema: printSchema(schema),
  documents: ['test/operations/**/*.graphql'],
  ignoreNoDocuments: true,
  generates: {
    'schema.graphql': { plugins: ['schema-ast'], config: { includeDirectives: false } },
    'test/generated/': {
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: { useTypeImports: true, emitLegacyCommonJSImports: false },
    },
  },
};

export default config;
