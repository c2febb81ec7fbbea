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
// The local stack's glue (its own package, local/package.json): it starts the services, wires the app's settings and
// drives jobs as a user would, so it may use the product's pure core and public adapters. Everything else under local/
// is an emulator (docs/local-stack.md "The local package and the product").
const LOCAL_GLUE = ['^local/(stack|start|demo|jobRunner|seedExamples|operatorAccess|exampleNetwork)\\.ts$', '^local/supervisor/'];
// The only product modules an emulator reads: tables of facts (VM sizes, node images, health thresholds, list prices)
// that the emulated Azure and the app must agree on. Each is pure (shared/core/).
const EMULATOR_FACTS = '^shared/core/(planning/(vmSizes|healthThresholds)|images/catalog|config/priceTable|ops/retailPrices)\\.ts$';

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
    {
      name: 'local-stack-runs-the-app-as-azure-does',
      comment:
        'The local stack loads the compiled app by path (package.json main), as the Functions host does in Azure; importing a trigger or workflow would run a different app from the one deployed.',
      severity: 'error',
      from: { path: '^local/' },
      to: { path: '^(functions|orchestrations|web|tests|bench|scripts)/' },
    },
    {
      name: 'emulators-import-only-the-facts',
      comment:
        "An emulator stands for Azure: built from the product it would agree with the product by construction and could not catch its mistakes. It may read the shared fact tables only, never the product's logic, adapters, the CLI or the examples.",
      severity: 'error',
      from: { path: '^local/', pathNot: LOCAL_GLUE },
      to: { path: '^(shared|cli|examples)/', pathNot: EMULATOR_FACTS },
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
