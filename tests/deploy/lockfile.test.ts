/**
 * The lock file installs anywhere and says everything the code imports.
 * - `npm ci` (what scripts/ensure-deps.sh runs) fails when package.json and the lock disagree, and an `npm install`
 *   that has to add entries rewrites the lock, which leaves a fresh clone dirty. The check here is the cheap form of
 *   "npm ci leaves the tree clean": npm recomputes the lock from package.json and the registry metadata in a copy
 *   (`--package-lock-only`: no node_modules, no scripts) and the result must be byte for byte the committed lock. That
 *   includes every platform's optional binaries (@swc/core-darwin-*, -win32-*), which an older lock lacked, so a macOS
 *   or Windows contributor gets an swc binary.
 * - Every package a source file imports is declared in package.json (a transitive dependency that happens to be
 *   hoisted is not a contract: it can move or vanish on any update of the package that brings it).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { bareImports, sourceFiles } from '../helpers/bareImports';

const ROOT = path.resolve(__dirname, '..', '..');
type Manifest = { dependencies: Record<string, string>; devDependencies?: Record<string, string>; workspaces?: string[] };
const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Manifest;
/** The workspaces' manifests (cli/ is the `hpcjob` package, local/ the local stack's), by folder. */
const workspaces = new Map((manifest.workspaces ?? []).map((ws) => [ws, JSON.parse(readFileSync(path.join(ROOT, ws, 'package.json'), 'utf8')) as Manifest]));
const SOURCE_FOLDERS = ['functions', 'orchestrations', 'shared', 'local', 'cli', 'scripts', 'bench', 'tests', 'web', 'examples'];

describe('package-lock.json', () => {
  it('is what npm computes from package.json (so npm ci and npm install leave it unchanged)', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hpc-lock-'));
    try {
      copyFileSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
      copyFileSync(path.join(ROOT, 'package-lock.json'), path.join(dir, 'package-lock.json'));
      for (const ws of workspaces.keys()) {
        mkdirSync(path.join(dir, ws), { recursive: true });
        copyFileSync(path.join(ROOT, ws, 'package.json'), path.join(dir, ws, 'package.json'));
      }
      const run = spawnSync('npm', ['install', '--package-lock-only', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], {
        cwd: dir,
        encoding: 'utf8',
        timeout: 180_000,
      });
      expect(run.status).toBe(0);
      expect(readFileSync(path.join(dir, 'package-lock.json'), 'utf8')).toBe(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 200_000);

  it('carries the optional native binaries of every platform', () => {
    const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
    const swc = Object.keys(lock.packages).filter((k) => k.startsWith('node_modules/@swc/core-'));
    for (const platform of ['darwin-arm64', 'darwin-x64', 'linux-x64-gnu', 'linux-arm64-gnu', 'win32-x64-msvc']) {
      expect(swc).toContain(`node_modules/@swc/core-${platform}`);
    }
  });
});

describe('package.json', () => {
  it('declares every package the sources import', () => {
    // A workspace's files may import its own dependencies too (cli/ bundles with its declared ones: cli/build.ts).
    const declaredIn = (file: string): Set<string> => {
      const names = [...Object.keys(manifest.dependencies), ...Object.keys(manifest.devDependencies ?? {})];
      for (const [ws, m] of workspaces)
        if (path.relative(ROOT, file).startsWith(`${ws}/`)) names.push(...Object.keys(m.dependencies ?? {}), ...Object.keys(m.devDependencies ?? {}));
      return new Set(names);
    };
    // @azure/functions-core is provided by the Functions worker at run time (local/host/coreModule.ts here), never installed.
    const provided = new Set(['@azure/functions-core']);
    const missing = new Map<string, string>();
    for (const folder of SOURCE_FOLDERS) {
      for (const file of sourceFiles(path.join(ROOT, folder))) {
        for (const pkg of bareImports(file)) {
          if (!declaredIn(file).has(pkg) && !provided.has(pkg) && !missing.has(pkg)) missing.set(pkg, path.relative(ROOT, file));
        }
      }
    }
    expect(Object.fromEntries(missing)).toEqual({});
  });
});
