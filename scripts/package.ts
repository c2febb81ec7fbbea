/**
 * Builds the deployment package: exactly what Azure runs, and nothing else.
 *
 *   npm run package                                    → dist-package/app/ and dist-package/app.zip
 *   node --import tsx scripts/package.ts --out <dir>   → <dir>/app/ and <dir>/app.zip
 *
 * The staged folder (app/) holds
 *   dist/           the product tree compiled with tsconfig.build.json (functions/, orchestrations/, shared/,
 *                   web/generated/): package.json "main" (dist/functions/*.js) points into it
 *   host.json
 *   package.json    the production manifest: no devDependencies, no scripts, no bin (the CLI is not deployed)
 *   package-lock.json  the repository's lock without its dev-only entries
 *   node_modules/   `npm ci --omit=dev` of that pair, so the versions are exactly the lock's
 * and app.zip is that folder zipped. Publish the zip (or the folder), never the repository root: the root's
 * node_modules holds the development tools and its dist/ the local stack and the tests.
 *
 * The source tree is never written: a stale generated dashboard fails the build instead of being regenerated.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
const BUILD_CONFIG = path.join(ROOT, 'tsconfig.build.json');

/** package.json fields the deployed manifest keeps; everything else (scripts, devDependencies, bin) stays home. */
const MANIFEST_FIELDS = ['name', 'version', 'private', 'description', 'main', 'engines', 'dependencies'] as const;

export interface PackageResult {
  /** The staged folder, laid out as the Function App's wwwroot. */
  appDir: string;
  zipFile: string;
  /** Files in the package (node_modules included). */
  files: number;
  zipBytes: number;
}

type Json = Record<string, unknown>;
type Lock = { lockfileVersion?: number; packages: Record<string, Json & { dev?: boolean }> } & Json;

/** The deployed package.json: the repository's, less what only development uses. */
export function productionManifest(pkg: Json): Json {
  const out: Json = {};
  for (const field of MANIFEST_FIELDS) if (pkg[field] !== undefined) out[field] = pkg[field];
  return out;
}

/**
 * The lock for the production manifest: the same resolved versions, only the packages the app's `dependencies`
 * reach. Walking the graph (rather than dropping entries npm marks `dev`) also leaves out the workspaces (the `hpcjob`
 * CLI in cli/) and what only they use: their dependencies are production dependencies of theirs, not of the app.
 * `npm ci` on the repository's full lock would install them; `npm install --omit=dev` could re-resolve; `npm ci`
 * on this pair cannot.
 */
export function productionLock(lock: Lock, manifest: Json): Lock {
  if (lock.lockfileVersion !== 3) throw new Error(`package-lock.json: lockfileVersion ${lock.lockfileVersion} (expected 3; regenerate with this npm)`);
  const rootDeps = (manifest.dependencies ?? {}) as Record<string, string>;
  const keep = new Set<string>();
  const queue: { from: string; name: string }[] = Object.keys(rootDeps).map((name) => ({ from: '', name }));
  while (queue.length > 0) {
    const { from, name } = queue.shift()!;
    const key = resolveInLock(lock, from, name);
    if (key === undefined) {
      throw new Error(`package-lock.json: ${name} (needed by ${from || 'the app'}) is not in the lock; run npm install`);
    }
    if (keep.has(key)) continue;
    keep.add(key);
    const entry = lock.packages[key];
    for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies'] as const) {
      const deps = (entry[field] ?? {}) as Record<string, string>;
      const optional = field === 'optionalDependencies' || field === 'peerDependencies';
      const peerMeta = (entry.peerDependenciesMeta ?? {}) as Record<string, { optional?: boolean }>;
      for (const dep of Object.keys(deps)) {
        // npm does not install optional peers; optional dependencies and peers may be absent for this platform.
        if (field === 'peerDependencies' && peerMeta[dep]?.optional) continue;
        if (optional && resolveInLock(lock, key, dep) === undefined) continue;
        queue.push({ from: key, name: dep });
      }
    }
  }
  const packages: Lock['packages'] = {};
  const root: Json = { ...lock.packages[''] };
  delete root.devDependencies;
  delete root.bin;
  delete root.workspaces;
  root.dependencies = manifest.dependencies;
  packages[''] = root;
  for (const [key, entry] of Object.entries(lock.packages)) if (keep.has(key)) packages[key] = entry;
  return { ...lock, packages };
}

/** Where npm finds `name` for the package at lock key `from`: the nearest node_modules up the tree. */
function resolveInLock(lock: Lock, from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const key = base ? `${base}/node_modules/${name}` : `node_modules/${name}`;
    if (lock.packages[key]) return key;
    if (!base) return undefined;
    const cut = base.lastIndexOf('/node_modules/');
    base = cut >= 0 ? base.slice(0, cut) : '';
  }
}

function run(cmd: string, args: string[], cwd: string, what: string): void {
  const r = spawnSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' } });
  if (r.error) throw new Error(`${what}: ${cmd} could not run: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${what} failed (${cmd} ${args.join(' ')}, exit ${r.status}):\n${(r.stdout + r.stderr).trim().slice(-4000)}`);
}

function walk(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) walk(full, out);
    else out.push(full);
  }
  return out;
}

/** The folders tsconfig.build.json compiles: declared there once, checked here against what tsc emitted. */
function productFolders(): string[] {
  const config = JSON.parse(readFileSync(BUILD_CONFIG, 'utf8')) as { include: string[] };
  return config.include;
}

export function buildPackage(outDir: string): PackageResult {
  const appDir = path.join(outDir, 'app');
  const zipFile = path.join(outDir, 'app.zip');
  rmSync(appDir, { recursive: true, force: true });
  rmSync(zipFile, { force: true });
  mkdirSync(appDir, { recursive: true });

  // The dashboard page is a generated, committed module; the package must carry the current one.
  run(process.execPath, ['--import', 'tsx', path.join(ROOT, 'web', 'build.ts'), '--check'], ROOT, 'dashboard check (run `node --import tsx web/build.ts`)');
  run('bash', [path.join(ROOT, 'scripts', 'tsc.sh'), '-p', BUILD_CONFIG, '--outDir', path.join(appDir, 'dist')], ROOT, 'tsc -p tsconfig.build.json');

  // tsc follows imports: a product file importing local/, tests/ or examples/ would pull them in. Refuse that.
  const folders = productFolders();
  const strays = walk(path.join(appDir, 'dist'))
    .map((f) => path.relative(path.join(appDir, 'dist'), f).split(path.sep).join('/'))
    .filter((rel) => !folders.some((folder) => rel.startsWith(`${folder}/`)));
  if (strays.length > 0) throw new Error(`the product tree imports files outside ${folders.join(', ')}: ${strays.slice(0, 10).join(', ')}`);

  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Json;
  const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as Lock;
  const manifest = productionManifest(pkg);
  writeFileSync(path.join(appDir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  writeFileSync(path.join(appDir, 'package-lock.json'), `${JSON.stringify(productionLock(lock, manifest), null, 2)}\n`);
  copyFileSync(path.join(ROOT, 'host.json'), path.join(appDir, 'host.json'));

  // From the local npm cache when it has the packages; otherwise from the npm registry. No install scripts run.
  // --no-bin-links: no node_modules/.bin symbolic links, which a zip deployment need not carry faithfully.
  run(
    'npm',
    ['ci', '--omit=dev', '--ignore-scripts', '--no-bin-links', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'],
    appDir,
    'npm ci --omit=dev',
  );

  // -X: no extra file attributes (uid/gid).
  run('zip', ['-q', '-r', '-X', zipFile, '.'], appDir, 'zip');
  const files = walk(appDir).length;
  return { appDir, zipFile, files, zipBytes: statSync(zipFile).size };
}

function main(argv: string[]): void {
  const i = argv.indexOf('--out');
  const outDir = path.resolve(i >= 0 && argv[i + 1] ? argv[i + 1] : path.join(ROOT, 'dist-package'));
  if (!existsSync(path.dirname(outDir))) throw new Error(`--out ${outDir}: parent folder does not exist`);
  const started = Date.now();
  const r = buildPackage(outDir);
  process.stdout.write(
    `[package] ${path.relative(process.cwd(), r.zipFile) || r.zipFile}: ${(r.zipBytes / 1e6).toFixed(1)} MB, ${r.files} files ` +
      `(staged in ${path.relative(process.cwd(), r.appDir) || r.appDir}) in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
}

if (require.main === module) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`[package] ${(err as Error).message}\n`);
    process.exit(1);
  }
}
