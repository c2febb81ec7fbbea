/**
 * The layering of the source tree, checked by `npm run lint` (and so by `npm test` and CI). Each rule says why.
 * Folder roles (README "Source layout"): shared/core/ is the pure core (decisions, request bodies, the typed contract,
 * state lists, cost arithmetic), shared/adapters/ the I/O (Azure SDKs, storage, the network, settings), shared/services.ts
 * wires the adapters, functions/ is the composition root and the triggers, orchestrations/ the deterministic workflows,
 * cli/ the client, local/ the embedded stack (never deployed), web/ the dashboard.
 */
// Folder rules: where a file lives says what it may import (the split was computed from the imports).
const PURE = ['^shared/core/'];
const ADAPTERS = '^shared/adapters/';
const IO_CORE_MODULES = '^(node:)?(fs|fs/promises|net|http|https|http2|dns|child_process|cluster|dgram|tls|worker_threads|readline)$';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import cycle (type-only imports included) means two modules are one; break it by moving the shared part down.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'shared-imports-nothing-above',
      comment: 'shared/ is the bottom of the tree: it may not know the triggers, workflows, client, local stack or tests.',
      severity: 'error',
      from: { path: '^shared/' },
      to: { path: '^(functions|orchestrations|cli|local|web|bench|scripts|tests|examples)/' },
    },
    {
      name: 'product-never-imports-the-local-stack',
      comment: 'What Azure runs (functions/, orchestrations/, shared/) must not depend on the emulators, tests or tools.',
      severity: 'error',
      from: { path: '^(functions|orchestrations|shared)/' },
      to: { path: '^(local|tests|bench|scripts|examples)/' },
    },
    {
      name: 'pure-core-does-no-io',
      comment:
        'The pure core is unit- and property-tested without I/O: at run time it imports no adapter, no SDK and no I/O module (types may name adapter types).',
      severity: 'error',
      from: { path: PURE },
      to: {
        dependencyTypesNot: ['type-only'],
        path: [ADAPTERS, '^node_modules/(?!(zod|yaml)/)', IO_CORE_MODULES],
        pathNot: PURE,
      },
    },
    {
      name: 'orchestrations-are-deterministic',
      comment: 'Orchestrators replay: they decide through the pure core and act through activities, never through an adapter or I/O.',
      severity: 'error',
      from: { path: '^orchestrations/', pathNot: ['^orchestrations/activities/', '^orchestrations/register\\.ts$'] },
      to: {
        dependencyTypesNot: ['type-only'],
        path: [ADAPTERS, '^shared/services\\.ts$', '^orchestrations/activities/', '^functions/', '^node_modules/(?!(durable-functions|zod)/)', IO_CORE_MODULES],
        pathNot: PURE,
      },
    },
    {
      name: 'cli-talks-to-the-api',
      comment: 'hpcjob is installed without the app: it may bundle the pure core and the contract, never triggers, workflows or the local stack.',
      severity: 'error',
      from: { path: '^cli/' },
      to: { path: '^(functions|orchestrations|local|tests|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|node_modules|test-artifacts)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
