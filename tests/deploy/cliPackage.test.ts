/**
 * The `hpcjob` CLI as a user installs it: `npm pack` of the cli/ workspace (its prepack builds the one-file bundle),
 * then `npm install -g` of the tarball into an empty prefix with production dependencies only — from the npm cache
 * when it has the packages, else the registry, as any user's install. The installed command runs in a folder with
 * nothing of this repository beside it: `--help`, `validate` and `explain --offline` of a committed example.
 *
 * Cost, measured on 2 cores: pack ~5 s (esbuild), install ~10–20 s from the npm cache; the file ~30 s.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const REPO_ROOT = path.resolve(__dirname, '..', '..');
const EXAMPLE = path.join(REPO_ROOT, 'examples', 'jobs', 'native-openmpi.yaml');
const cliManifest = JSON.parse(readFileSync(path.join(REPO_ROOT, 'cli', 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  devDependencies?: unknown;
};

let work: string;
let prefix: string;
let bin: string;
let userDir: string;

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false', ...env } });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}`, stdout: r.stdout ?? '' };
}

beforeAll(() => {
  work = mkdtempSync(path.join(os.tmpdir(), 'hpcjob-pack-'));
  const packed = run('npm', ['pack', '-w', 'hpcjob', '--pack-destination', work, '--loglevel=error'], REPO_ROOT);
  if (packed.status !== 0) throw new Error(`npm pack -w hpcjob failed:\n${packed.out}`);
  const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error(`npm pack wrote no tarball into ${work}: ${packed.out}`);
  prefix = path.join(work, 'prefix');
  mkdirSync(prefix);
  const installed = run(
    'npm',
    ['install', '-g', '--prefix', prefix, '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', path.join(work, tarball)],
    work,
  );
  if (installed.status !== 0) throw new Error(`npm install -g of ${tarball} failed:\n${installed.out}`);
  bin = path.join(prefix, 'bin', 'hpcjob');
  // The user's folder: the example spec and nothing else of the repository.
  userDir = path.join(work, 'user');
  mkdirSync(userDir);
  copyFileSync(EXAMPLE, path.join(userDir, 'job.yaml'));
}, 300_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

const hpcjob = (args: string[]) => run(bin, args, userDir, { HOME: userDir, HPCJOB_ENDPOINT: '', HPCJOB_KEY: '' });

test('the tarball holds the bundle and its manifest, and installs only the declared dependencies', () => {
  const pkgDir = path.join(prefix, 'lib', 'node_modules', cliManifest.name);
  expect(
    readdirSync(pkgDir)
      .filter((f) => f !== 'node_modules')
      .sort(),
  ).toEqual(['README.md', 'dist', 'package.json']);
  expect(readdirSync(path.join(pkgDir, 'dist'))).toEqual(['hpcjob.cjs']);
  // Development tools of the repository never come along.
  for (const devTool of ['typescript', 'tsx', 'jest', 'esbuild', 'azurite']) {
    expect(existsSync(path.join(pkgDir, 'node_modules', devTool))).toBe(false);
  }
  for (const dep of Object.keys(cliManifest.dependencies)) {
    expect(existsSync(path.join(pkgDir, 'node_modules', dep, 'package.json'))).toBe(true);
  }
});

test('hpcjob --help and --version work from the installed command', () => {
  const help = hpcjob(['--help']);
  expect(help.status).toBe(0);
  for (const command of ['submit', 'status', 'watch', 'validate', 'explain', 'upload', 'download']) expect(help.stdout).toContain(command);
  const version = hpcjob(['--version']);
  expect(version.status).toBe(0);
  expect(version.stdout.trim()).toBe(cliManifest.version);
});

test('validate accepts the example and refuses a broken spec with its field path', () => {
  const ok = hpcjob(['validate', 'job.yaml']);
  expect(ok.out).toContain('is valid');
  expect(ok.status).toBe(0);
  const broken = readFileSync(path.join(userDir, 'job.yaml'), 'utf8').replace(/vmSize: .*/, 'vmSize: 12');
  require('node:fs').writeFileSync(path.join(userDir, 'broken.yaml'), broken);
  const bad = hpcjob(['validate', 'broken.yaml']);
  expect(bad.status).not.toBe(0);
  expect(bad.out).toMatch(/pool\.vmSize/);
});

test('explain --offline prints the Batch requests without an endpoint', () => {
  const r = hpcjob(['explain', '--offline', 'job.yaml', '--json']);
  expect(r.status).toBe(0);
  const doc = JSON.parse(r.stdout) as {
    jobId: string;
    pool: { request: { vmSize: string } };
    mpiTask: { numberOfInstances: number; request: { commandLine: string } };
  };
  expect(doc.jobId).toBe('native-openmpi-demo');
  expect(doc.pool.request.vmSize).toBe('Standard_D8s_v5');
  expect(doc.mpiTask.numberOfInstances).toBe(4);
  expect(doc.mpiTask.request.commandLine).toContain('mpirun');
});
