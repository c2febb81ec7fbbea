/**
 * The repository's three npm packages (issue 25): the app (the root package.json: what Azure runs, deployed as the
 * zip `npm run package` builds, never published), `hpcjob` (cli/: the CLI a user installs from its tarball) and
 * `@hpc-mpi/local-stack` (local/: the embedded stack, development and tests only). The checks: each manifest says
 * what the package is; the app's production dependency closure (what the zip installs) holds none of the local
 * stack's packages; the local package declares every package its sources import and nothing they do not; and the
 * local stack's boundary with the product is a dependency-cruiser rule that fails on a back-import.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { productionLock, productionManifest } from '../../scripts/package';
import { bareImports, sourceFiles } from '../helpers/bareImports';

const ROOT = path.resolve(__dirname, '..', '..');

type Manifest = {
  name: string;
  private?: boolean;
  main?: string;
  bin?: Record<string, string>;
  files?: string[];
  engines?: Record<string, string>;
  workspaces?: string[];
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};
const read = (folder: string): Manifest => JSON.parse(readFileSync(path.join(ROOT, folder, 'package.json'), 'utf8')) as Manifest;
const app = read('.');
const cli = read('cli');
const local = read('local');

/** Packages the local stack needs at run time that are not of the app's dependencies: the zip must hold none. */
const localOnly = Object.keys(local.dependencies ?? {}).filter((name) => !(name in (app.dependencies ?? {})));

describe('the three packages', () => {
  it('are the root (the app), cli/ (hpcjob) and local/ (the local stack), all on Node 22', () => {
    expect(app.workspaces).toEqual(['cli', 'local']);
    expect([app.name, cli.name, local.name]).toEqual(['hpc-mpi-control-plane', 'hpcjob', '@hpc-mpi/local-stack']);
    for (const m of [app, cli, local]) expect({ name: m.name, engines: m.engines }).toEqual({ name: m.name, engines: { node: '>=22' } });
  });

  it('the app is private (deployed as the zip, never published) and has no bin: the CLI is its own package', () => {
    expect(app.private).toBe(true);
    expect(app.bin).toBeUndefined();
    expect(app.main).toBe('dist/functions/*.js');
  });

  it('hpcjob is publishable and its tarball holds the one bundled file and its README', () => {
    expect(cli.private).toBeUndefined();
    expect(cli.files).toEqual(['dist/hpcjob.cjs', 'README.md']);
    expect(cli.bin).toEqual({ hpcjob: 'dist/hpcjob.cjs' });
  });

  it('the local stack is private (npm refuses to publish it), has no bin and no devDependencies of its own', () => {
    expect(local.private).toBe(true);
    expect(local.bin).toBeUndefined();
    expect(local.devDependencies).toBeUndefined();
  });
});

describe('dependencies', () => {
  it("the app's production closure (what the zip installs) holds none of the local stack's packages", () => {
    expect(localOnly).toEqual(expect.arrayContaining(['azurite', 'pino', 'tar', 'cron-parser']));
    const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as Parameters<typeof productionLock>[0];
    const installed = Object.keys(productionLock(lock, productionManifest(app)).packages).map((key) => key.replace(/^.*node_modules\//, ''));
    expect(installed.length).toBeGreaterThan(50);
    expect(installed.filter((name) => localOnly.includes(name))).toEqual([]);
  });

  it('the app declares only what the deployed tree imports: nothing only the local stack or tests use', () => {
    const deployed = new Set(['functions', 'orchestrations', 'shared'].flatMap((f) => sourceFiles(path.join(ROOT, f)).flatMap(bareImports)));
    expect(Object.keys(app.dependencies ?? {}).filter((name) => !deployed.has(name))).toEqual([]);
  });

  it('the local package declares every package its sources import, and each of its dependencies is used', () => {
    // @azure/functions-core is provided by the Functions worker (local/host/coreModule.ts stands in for it); tsx is
    // not imported but loaded with `node --import tsx` (local/supervisor/hostProcess.ts, the node tools' launcher).
    const provided = new Set(['@azure/functions-core']);
    const notImported = new Set(['tsx']);
    const declared = new Set(Object.keys(local.dependencies ?? {}));
    const imported = new Map<string, string>();
    for (const file of sourceFiles(path.join(ROOT, 'local')))
      for (const pkg of bareImports(file)) if (!provided.has(pkg)) imported.set(pkg, path.relative(ROOT, file));
    expect(Object.fromEntries([...imported].filter(([pkg]) => !declared.has(pkg)))).toEqual({});
    expect([...declared].filter((pkg) => !imported.has(pkg) && !notImported.has(pkg))).toEqual([]);
  });

  it("the local package pins the root's versions, so each package is installed once, at the root", () => {
    const pinned = { ...app.dependencies, ...app.devDependencies };
    const differing = Object.entries(local.dependencies ?? {}).filter(([name, version]) => name in pinned && pinned[name] !== version);
    expect(differing).toEqual([]);
    const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
    expect(Object.keys(lock.packages).filter((key) => key.startsWith('local/node_modules/'))).toEqual([]);
    expect(lock.packages['node_modules/@hpc-mpi/local-stack']).toEqual({ resolved: 'local', link: true });
  });
});

describe("the local stack's boundary with the product (.dependency-cruiser.cjs)", () => {
  it('a glue file importing a trigger and an emulator importing product logic or an adapter each fail their rule', () => {
    const fixture = path.join(ROOT, 'tests', 'fixtures', 'localBoundary');
    const r = spawnSync(
      process.execPath,
      [
        path.join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs'),
        '--config',
        path.join(ROOT, '.dependency-cruiser.cjs'),
        '--output-type',
        'json',
        'local',
      ],
      { cwd: fixture, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );
    if (r.error) throw r.error;
    const { violations } = (JSON.parse(r.stdout) as { summary: { violations: { rule: { name: string }; from: string; to: string }[] } }).summary;
    // Allowed and so absent: the emulator's fact table (local/batch/model/quota.ts), the glue's adapter (local/operatorAccess.ts).
    expect(violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).sort()).toEqual([
      'emulators-import-only-the-facts: local/batch/model/pools.ts → shared/core/planning/provisioning.ts',
      'emulators-import-only-the-facts: local/prices/client.ts → shared/adapters/batch/client.ts',
      'local-stack-runs-the-app-as-azure-does: local/stack.ts → functions/trigger.ts',
    ]);
  }, 60_000);
});
