/* eslint-disable */
import * as types from './graphql.js';
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';

/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "query Seats {\n  seats {\n    name\n    scope\n    replicated\n    aliases\n    serves {\n      name\n      acting\n      args {\n        name\n        type\n        required\n      }\n    }\n    holders {\n      module\n      site\n      derived\n      machine {\n        name\n      }\n    }\n  }\n}\n\nmutation RenameSeat($from: String!, $to: String!) {\n  renameSeat(from: $from, to: $to) {\n    __typename\n    ... on MutationRenameSeatSuccess {\n      data {\n        name\n        aliases\n      }\n    }\n    ... on Error {\n      message\n      code\n    }\n  }\n}": typeof types.SeatsDocument,
};
const documents: Documents = {
    "query Seats {\n  seats {\n    name\n    scope\n    replicated\n    aliases\n    serves {\n      name\n      acting\n      args {\n        name\n        type\n        required\n      }\n    }\n    holders {\n      module\n      site\n      derived\n      machine {\n        name\n      }\n    }\n  }\n}\n\nmutation RenameSeat($from: String!, $to: String!) {\n  renameSeat(from: $from, to: $to) {\n    __typename\n    ... on MutationRenameSeatSuccess {\n      data {\n        name\n        aliases\n      }\n    }\n    ... on Error {\n      message\n      code\n    }\n  }\n}": types.SeatsDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 *
 *
 * @example
 * ```ts
 * const query = graphql(`query GetUser($id: ID!) { user(id: $id) { name } }`);
 * ```
 *
 * The query argument is unknown!
 * Please regenerate the types.
 */
export function graphql(source: string): unknown;

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query Seats {\n  seats {\n    name\n    scope\n    replicated\n    aliases\n    serves {\n      name\n      acting\n      args {\n        name\n        type\n        required\n      }\n    }\n    holders {\n      module\n      site\n      derived\n      machine {\n        name\n      }\n    }\n  }\n}\n\nmutation RenameSeat($from: String!, $to: String!) {\n  renameSeat(from: $from, to: $to) {\n    __typename\n    ... on MutationRenameSeatSuccess {\n      data {\n        name\n        aliases\n      }\n    }\n    ... on Error {\n      message\n      code\n    }\n  }\n}"): (typeof documents)["query Seats {\n  seats {\n    name\n    scope\n    replicated\n    aliases\n    serves {\n      name\n      acting\n      args {\n        name\n        type\n        required\n      }\n    }\n    holders {\n      module\n      site\n      derived\n      machine {\n        name\n      }\n    }\n  }\n}\n\nmutation RenameSeat($from: String!, $to: String!) {\n  renameSeat(from: $from, to: $to) {\n    __typename\n    ... on MutationRenameSeatSuccess {\n      data {\n        name\n        aliases\n      }\n    }\n    ... on Error {\n      message\n      code\n    }\n  }\n}"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;