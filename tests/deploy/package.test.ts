/**
 * The deployment package as Azure gets it. The test builds it with the real command (scripts/package.ts, the
 * `npm run package` script, into a temporary folder so a developer's dist-package/ is left alone), unzips it into an
 * empty folder, checks what is in it and what is not, and runs a real MPI job through the local stack with the app
 * loaded from that folder by the local Functions host in its own Node process (Node's require, as the Functions worker
 * loads it, not jest's module registry): Azurite, the Batch emulator running real processes and real Open MPI, the
 * Durable engine replaying the packaged orchestration. Keyless, as the stack runs by default and as in Azure: the
 * packaged app's own @azure/identity (from the package's production node_modules) gets the managed identity's tokens
 * from the App Service identity endpoint, and Azurite and the Batch emulator take nothing else.
 *
 * Cost, measured on 2 cores: building the package ~25 s (tsc of the product tree, `npm ci --omit=dev` from the npm
 * cache, zip), the two-node job over 4 MB of input ~10 s; the file about 45 s.
 */
import { spawnSync } from 'node:child_process';
import { builtinModules } from 'node:module';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, type WriteStream } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import picomatch from 'picomatch';
import { parse as parseYaml, stringify } from 'yaml';
import { expandEntryPoints } from '../../local/host/entryPoints';
import { localAppSettings, REPO_ROOT } from '../../local/stack';
import { startServices, type Services } from '../../local/supervisor/services';
import { asOperator, checkCleanup, checkResult, mpiOutput, submitSpec, uploadDemoInputs, watchJob, type StackClient } from '../../local/jobRunner';
import { ChildHost } from '../helpers/childHost';

type Manifest = {
  name: string;
  version: string;
  main: string;
  scripts?: unknown;
  bin?: unknown;
  dependencies: Record<string, string>;
  devDependencies?: Record<string, string>;
};

const repoManifest = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as Manifest;
/** What tsconfig.build.json compiles: the only folders the package's dist/ may hold. */
const PRODUCT_FOLDERS = (JSON.parse(readFileSync(path.join(REPO_ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] }).include;

let work: string;
let zipFile: string;
let app: string;

beforeAll(() => {
  work = mkdtempSync(path.join(os.tmpdir(), 'hpc-package-'));
  const build = spawnSync('nice', [process.execPath, '--import', 'tsx', path.join(REPO_ROOT, 'scripts', 'package.ts'), '--out', path.join(work, 'build')], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  if (build.status !== 0) throw new Error(`npm run package failed:\n${build.stdout}${build.stderr}`);
  zipFile = path.join(work, 'build', 'app.zip');
  app = path.join(work, 'extracted');
  mkdirSync(app);
  const unzip = spawnSync('unzip', ['-q', zipFile, '-d', app], { encoding: 'utf8' });
  if (unzip.status !== 0) throw new Error(`unzip failed: ${unzip.stderr}`);
}, 300_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Files under `dir`, relative to it with / separators; `skip` names folders not entered (at any depth). */
function files(dir: string, skip: string[] = []): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) {
        if (!skip.includes(e.name)) walk(path.join(d, e.name));
      } else {
        out.push(path.relative(dir, path.join(d, e.name)).split(path.sep).join('/'));
      }
    }
  };
  walk(dir);
  return out.sort();
}

/**
 * .funcignore read with gitignore rules (the ones it uses): a leading / anchors to the root, a trailing / matches
 * directories, `!` re-includes, the last matching line wins.
 */
function funcignoreMatcher(text: string): (file: string) => boolean {
  const rules = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((line) => {
      const negate = line.startsWith('!');
      let pattern = negate ? line.slice(1) : line;
      const anchored = pattern.startsWith('/');
      const dirOnly = pattern.endsWith('/');
      pattern = pattern.replace(/^\//, '').replace(/\/$/, '');
      const glob = anchored ? pattern : `**/${pattern}`;
      const match = picomatch(dirOnly ? `${glob}/**` : [glob, `${glob}/**`], { dot: true });
      return { negate, match };
    });
  return (file) => rules.reduce((ignored, r) => (r.match(file) ? !r.negate : ignored), false);
}

describe('what the package holds', () => {
  it('is the app and nothing else: dist/ (the product tree), host.json, the production package.json and lock, node_modules', () => {
    expect(readdirSync(app).sort()).toEqual(['dist', 'host.json', 'node_modules', 'package-lock.json', 'package.json']);
    const roots = new Set(PRODUCT_FOLDERS.map((f) => f.split('/')[0]));
    expect(readdirSync(path.join(app, 'dist')).sort()).toEqual([...roots].sort());
    for (const f of files(path.join(app, 'dist'))) expect({ f, product: PRODUCT_FOLDERS.some((p) => f.startsWith(`${p}/`)) }).toEqual({ f, product: true });
    expect(readFileSync(path.join(app, 'host.json'), 'utf8')).toBe(readFileSync(path.join(REPO_ROOT, 'host.json'), 'utf8'));
  });

  it('holds no local/, tests/, bench/, TypeScript sources, source maps or local settings outside node_modules', () => {
    const ours = files(app, ['node_modules']);
    expect(ours.length).toBeGreaterThan(50);
    const banned = ours.filter(
      (f) =>
        f.split('/').some((seg) => ['local', 'tests', 'bench', 'examples', 'cli', 'scripts', 'infra', 'src'].includes(seg)) ||
        /\.(ts|map)$/.test(f) ||
        /local\.settings/.test(f),
    );
    expect(banned).toEqual([]);
    // The compiled app is all there: each function's entry point and the generated dashboard page.
    expect(ours).toEqual(expect.arrayContaining(['dist/functions/jobsHttp.js', 'dist/orchestrations/register.js', 'dist/web/generated/dashboardPage.js']));
  });

  it('matches nothing .funcignore excludes (outside the production node_modules)', () => {
    const ignored = funcignoreMatcher(readFileSync(path.join(REPO_ROOT, '.funcignore'), 'utf8'));
    // The matcher itself: it must catch what it is meant to catch.
    expect(['tests/x.test.ts', 'local/stack.js', 'dist/local/stack.js', 'shared/a.ts', 'README.md'].every(ignored)).toBe(true);
    expect(['dist/shared/a.js', 'node_modules/x/index.d.ts', 'host.json', 'package.json'].some(ignored)).toBe(false);
    expect(files(app, ['node_modules']).filter(ignored)).toEqual([]);
  });

  it('installs no devDependency, and its package.json is the production manifest', () => {
    const manifest = JSON.parse(readFileSync(path.join(app, 'package.json'), 'utf8')) as Manifest;
    expect(manifest.scripts).toBeUndefined();
    expect(manifest.devDependencies).toBeUndefined();
    expect(manifest.bin).toBeUndefined();
    expect(manifest.main).toBe(repoManifest.main);
    expect(manifest.dependencies).toEqual(repoManifest.dependencies);
    const devNames = Object.keys(repoManifest.devDependencies ?? {});
    expect(devNames.length).toBeGreaterThan(10);
    expect(devNames.filter((name) => existsSync(path.join(app, 'node_modules', name)))).toEqual([]);
    for (const name of Object.keys(manifest.dependencies))
      expect({ name, installed: existsSync(path.join(app, 'node_modules', name, 'package.json')) }).toEqual({ name, installed: true });
    // No native addons: the package is the same on any Linux x64 or arm64 Flex Consumption instance.
    expect(files(path.join(app, 'node_modules')).filter((f) => f.endsWith('.node'))).toEqual([]);
  });

  it('"main" names the entry points the worker loads: one per function module', () => {
    const expected = readdirSync(path.join(REPO_ROOT, 'functions'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => `dist/functions/${f.replace(/\.ts$/, '.js')}`)
      .sort();
    const entries = expandEntryPoints(app, repoManifest.main).map((f) => path.relative(app, f).split(path.sep).join('/'));
    expect(entries).toEqual(expected);
  });

  it('every module the compiled app requires is a Node built-in or a declared dependency installed in the package', () => {
    const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
    const used = new Set<string>();
    for (const f of files(path.join(app, 'dist'))) {
      const text = readFileSync(path.join(app, 'dist', f), 'utf8');
      for (const m of text.matchAll(/require\("([^".][^"]*)"\)/g)) {
        const spec = m[1];
        if (builtins.has(spec)) continue;
        const pkg = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
        used.add(pkg);
        const resolved = require.resolve(spec, { paths: [path.join(app, 'dist', path.dirname(f))] });
        expect({ spec, inPackage: resolved.startsWith(path.join(app, 'node_modules') + path.sep) }).toEqual({ spec, inPackage: true });
      }
    }
    // Packages the product sources import for their types only (`import type`): nothing requires them at run time,
    // but the code is typed against them, so they are declared (not left to be hoisted by chance) and ship anyway as
    // dependencies of the SDKs that use them.
    const typeOnly = new Set<string>();
    for (const folder of PRODUCT_FOLDERS.map((p) => p.replace(/\/\*\*.*$/, ''))) {
      for (const f of files(path.join(REPO_ROOT, folder)).filter((x) => x.endsWith('.ts'))) {
        for (const m of readFileSync(path.join(REPO_ROOT, folder, f), 'utf8').matchAll(/^import type [^;]*? from '([^'.][^']*)'/gm)) {
          const pkg = m[1].startsWith('@') ? m[1].split('/').slice(0, 2).join('/') : m[1].split('/')[0];
          if (!used.has(pkg) && !builtins.has(m[1])) typeOnly.add(pkg);
        }
      }
    }
    for (const pkg of typeOnly) expect({ pkg, installed: existsSync(path.join(app, 'node_modules', pkg, 'package.json')) }).toEqual({ pkg, installed: true });
    // Declared and used are the same set: no undeclared import, no dependency shipped for nothing.
    expect([...used, ...typeOnly].sort()).toEqual(Object.keys(repoManifest.dependencies).sort());
  });

  it('the build leaves the repository alone: its output folder is git-ignored', () => {
    const r = spawnSync('git', ['check-ignore', '-q', 'dist-package/app.zip'], { cwd: REPO_ROOT });
    expect(r.status).toBe(0);
  });
});

describe('the packaged app runs a real MPI job on the local stack', () => {
  let services: Services | undefined;
  let host: ChildHost | undefined;
  let log: WriteStream | undefined;
  const KEYS = { functionKey: 'package-test-function-key', masterKey: 'package-test-master-key' };
  const PACKAGED_VERSION = `${repoManifest.version}-packaged`;

  beforeAll(async () => {
    const logs = path.join(REPO_ROOT, 'test-artifacts');
    mkdirSync(logs, { recursive: true });
    log = createWriteStream(path.join(logs, 'deploy-package-host.log'), { flags: 'w' });
    // A version only the extracted package.json has: /api/health proves which package.json the app read.
    const manifestFile = path.join(app, 'package.json');
    writeFileSync(manifestFile, JSON.stringify({ ...JSON.parse(readFileSync(manifestFile, 'utf8')), version: PACKAGED_VERSION }, null, 2));
    services = await startServices({ repoRoot: REPO_ROOT, demoImage: false });
  }, 120_000);

  afterAll(async () => {
    await host?.kill();
    await services?.stop();
    await new Promise((r) => log?.end(r));
  }, 60_000);

  it('serves the API from the extracted package and runs a two-node Open MPI job over staged shards to Succeeded, leaving nothing behind', async () => {
    const s = services as Services;
    expect(s.keyless).toBe(true);
    // No bearer auth for the API here: the test is the operator (its function key is the app's operator key).
    const settings = { ...localAppSettings(s.azurite, s.batch), OPERATOR_API_KEYS: KEYS.functionKey };
    host = await ChildHost.start({
      appDir: app,
      settings,
      keys: KEYS,
      log: log as WriteStream,
      timeoutMs: 90_000,
      identityEndpoint: s.identity.appServiceIdentity,
      caFile: s.identity.caFile,
    });
    const stack: StackClient = { baseUrl: host.baseUrl, host: { keys: KEYS }, operator: s.operator };
    const operator = asOperator(stack);

    const health = (await (await fetch(`${host.baseUrl}/api/health`)).json()) as { version?: string };
    expect(health.version).toBe(PACKAGED_VERSION);
    const dashboard = await fetch(`${host.baseUrl}/api/dashboard`);
    expect(dashboard.status).toBe(200);
    expect(await dashboard.text()).toMatch(/<html/i);

    const expected = await uploadDemoInputs(stack, 4);
    const spec = parseDemoSpec();
    const id = await submitSpec(
      stack,
      stringify({
        ...spec,
        id: 'packaged-app',
        pool: { ...(spec.pool as object), nodes: 2 },
        data: { ...(spec.data as object), shardSizeMB: { min: 1, max: 2 } },
      }),
      operator,
    );
    const view = await watchJob(stack, id, 240_000, undefined, operator);
    if (view.state !== 'Succeeded') throw new Error(`job ended ${view.state}: ${view.error?.message}\n${await mpiOutput(stack, view)}`);
    expect(checkResult(view, expected)).toEqual([]);
    expect(view.result?.mpi?.stdoutTail ?? '').toMatch(/"ranks":4,"nodes":2/);
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 300_000);
});

/** The demo job (examples/demo/native-openmpi.yaml): the program is compiled on every node by the pool's start task. */
function parseDemoSpec(): Record<string, unknown> {
  return parseYaml(readFileSync(path.join(REPO_ROOT, 'examples', 'demo', 'native-openmpi.yaml'), 'utf8')) as Record<string, unknown>;
}
