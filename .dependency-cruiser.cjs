// The gateway's import rules (`npm run check:imports`). Layers, outermost first; a module may
// import its own layer and the layers below it, never one above:
//
//   entry       src/main.ts, src/gateway.ts, src/migrate.ts, src/simulate.ts, src/cli/ (meshctl, a client of the API)
//   transports  src/server/, src/fanout/        (server may import fanout, not the reverse)
//   schema      src/schema/ (a folder per domain's types and root fields, support/ for what is no domain's)
//   services    src/services/
//   store/bus   src/store/, src/bus/
//   kernel      src/kernel/                      (imports nothing in src but itself)
//
// Within src/services/ and src/schema/ the domain folders import each other without a cycle, a
// folder's subfolders counted as the folder (no-folder-cycle).
//
// src/config.ts and src/logger.ts are leaves that any layer may import; in src they import only
// src/kernel/. Type-only imports count too (tsPreCompilationDeps), for cycles and for layers.

const ENTRY = '^src/((main|gateway|migrate|simulate)\\.ts$|cli/)';
const TRANSPORTS = '^src/(server|fanout)/';
const SCHEMA = '^src/schema/';
const SERVICES = '^src/services/';
const STORE_BUS = '^src/(store|bus)/';
const KERNEL = '^src/kernel/';
const LEAVES = '^src/(config|logger)\\.ts$';
/** The pure delta algebra, which the dashboard bundles too. */
const DELTA_ALGEBRA = '^src/services/status/delta/(algebra|lists|delta-chain)\\.ts$';

/** A rule that `from` (a layer) imports nothing in `above` (the layers over it). */
const notUp = (name, comment, from, above) => ({
  name,
  comment,
  severity: 'error',
  from: { path: from },
  to: { path: above },
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'A cycle of imports (type-only imports included). Break it: move the shared part down a layer.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-folder-cycle',
      comment:
        'A cycle of domain folders under src/services/ or src/schema/ (seats/ imports verbs/, which imports seats/): ' +
        'module-level no-circular does not see one made of different modules. Move the shared part to a folder ' +
        'both import (verbs/ holds the verb kit every domain declares its verbs with). Cycles among the rooms ' +
        'of one domain (status/composing/ and status/replicating/) are that domain\'s own.',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/(services|schema)/([^/]+)' },
      to: { circular: true, pathNot: '^src/$1/$2(/|$)' },
    },

    notUp('transports-not-to-entry', 'src/server/ and src/fanout/ must not import an entry file.', TRANSPORTS, ENTRY),
    {
      name: 'fanout-not-to-server',
      comment: 'src/server/ may import src/fanout/, not the reverse.',
      severity: 'error',
      from: { path: '^src/fanout/' },
      to: { path: '^src/server/' },
    },
    notUp('schema-not-up', 'src/schema/ must not import transports or entry files.', SCHEMA, [TRANSPORTS, ENTRY]),
    notUp('services-not-up', 'src/services/ must not import schema, transports or entry files.', SERVICES, [SCHEMA, TRANSPORTS, ENTRY]),
    notUp('store-bus-not-up', 'src/store/ and src/bus/ must not import services or anything above them.', STORE_BUS, [SERVICES, SCHEMA, TRANSPORTS, ENTRY]),
    {
      name: 'kernel-imports-only-kernel',
      comment: 'src/kernel/ imports nothing in src/ but src/kernel/ (node and npm packages are fine).',
      severity: 'error',
      from: { path: KERNEL },
      to: { path: '^src/', pathNot: KERNEL },
    },
    {
      name: 'leaves-import-only-kernel',
      comment: 'src/config.ts and src/logger.ts are imported by every layer, so in src/ they import only src/kernel/.',
      severity: 'error',
      from: { path: LEAVES },
      to: { path: '^src/', pathNot: KERNEL },
    },
    {
      name: 'domains-not-to-mesh',
      comment:
        'src/services/mesh.ts is the aggregate of the running gateway\'s dependencies; a domain folder ' +
        'under src/services/ takes only the capabilities it needs, never the whole Mesh. Only ' +
        'src/services/controller/ (the verb registry spans every domain) sees it.',
      severity: 'error',
      from: { path: '^src/services/[^/]+/', pathNot: '^src/services/controller/' },
      to: { path: '^src/services/mesh\\.ts$' },
    },
    {
      name: 'nothing-imports-the-cli',
      comment: 'src/cli/ (meshctl) is a client over HTTP and WebSocket: nothing in the gateway imports it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'cli-talks-graphql-only',
      comment: 'meshctl talks to a gateway, never to its store or bus: from the gateway it takes pure rules only (kernel, access, status deltas).',
      severity: 'error',
      from: { path: '^src/cli/' },
      to: { path: '^src/(store|bus|schema|server|fanout)/|^src/gateway\\.ts$' },
    },
    {
      name: 'delta-algebra-is-pure',
      comment:
        'src/services/status/delta/algebra.ts and delta-chain.ts are the delta algebra the gateway, meshctl and ' +
        'the dashboard (in the browser) all apply deltas with: they import each other, src/kernel/errors.ts and ' +
        'src/kernel/list-edits.ts only, no node module, no npm package (dashboard/ imports them; test/dashboard/dashboard-imports.test.ts ' +
        'holds the page to them).',
      severity: 'error',
      from: { path: DELTA_ALGEBRA },
      to: { pathNot: [DELTA_ALGEBRA, '^src/kernel/(errors|list-edits)\\.ts$'] },
    },
    {
      name: 'src-not-to-test-or-bench',
      comment: 'Nothing in src/ imports from test/ or bench/.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },

    {
      name: 'no-orphans',
      comment: 'A module in src/ that nothing imports and that is not an entry file: use it or remove it.',
      severity: 'error',
      from: { orphan: true, path: '^src/', pathNot: [ENTRY, '\\.d\\.(c|m)?ts$'] },
      to: {},
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that does not resolve to a file on disk.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'no-non-package-json',
      comment: 'An import of an npm package that package.json does not declare (it works only by hoisting luck).',
      severity: 'error',
      from: {},
      to: { dependencyTypes: ['npm-no-pkg', 'npm-unknown'] },
    },
    {
      name: 'not-to-dev-dep',
      comment:
        'src/ runs in production, where devDependencies are not installed: it must not import one. ' +
        '`import type` of a devDependency is fine (it is erased).',
      severity: 'error',
      from: { path: '^src/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|\\.mesh)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // "type": "module" and NodeNext: resolve as Node does for an ESM import, types included.
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
};
