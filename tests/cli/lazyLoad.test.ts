/**
 * What each hpcjob command loads: `--help`, `--version` and a command's own `--help` load no command, and the heavy
 * npm packages (the identity and storage-blob SDKs, cli-progress) are loaded only by the commands that use them
 * (cli/index.ts imports each command when its action runs; docs/cli.md, "Start-up cost"). Exact facts, no timings:
 * the CLI runs as a child process with a preload (`NODE_OPTIONS=--require`) that writes the files Node loaded
 * (require.cache) when it exits. Both forms users run are checked: the compiled tree (dist/cli/index.js, needs
 * `npm run build`) and the esbuild bundle (cli/build.ts), whose own modules are inlined, so there the
 * facts are about the npm packages it requires.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { closedPort } from '../helpers/closedPort';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildCli } from '../../cli/build';

const REPO_ROOT = path.resolve(__dirname, '..', '..');
const COMPILED = path.join(REPO_ROOT, 'dist', 'cli', 'index.js');
const SPEC = path.join(REPO_ROOT, 'examples', 'demo', 'native-openmpi.yaml');
/** The packages this file is about: each costs tens of modules, and most commands need none of them. */
const HEAVY = ['@azure/identity', '@azure/storage-blob', 'cli-progress'] as const;
type Heavy = (typeof HEAVY)[number];

let dir: string;
let preload: string;
let bundle: string;
/** An endpoint where nothing listens: the API commands end with "cannot reach the API" (exit 3). */
let down: string;

beforeAll(async () => {
  if (!existsSync(COMPILED)) throw new Error(`${COMPILED} is missing: build first with npm run build`);
  dir = mkdtempSync(path.join(os.tmpdir(), 'hpcjob-lazy-'));
  preload = path.join(dir, 'recordLoaded.cjs');
  writeFileSync(
    preload,
    "process.on('exit', () => require('node:fs').writeFileSync(process.env.HPCJOB_LOADED_OUT, JSON.stringify(Object.keys(require.cache))));\n",
  );
  writeFileSync(path.join(dir, 'data.txt'), 'some input\n');
  // Beside the package's own bundle (so its npm imports resolve from the repository's node_modules), under a name of
  // its own: tests/deploy/cliPackage.test.ts may be writing dist/hpcjob.cjs at the same time.
  bundle = await buildCli(path.join(REPO_ROOT, 'cli', 'dist', `lazyLoad-${process.pid}.cjs`));
  down = `http://127.0.0.1:${await closedPort()}`;
}, 60_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  if (bundle) rmSync(bundle, { force: true });
});

interface Loaded {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Every file loaded through require(), absolute paths. */
  files: string[];
  /** The npm packages among them. */
  packages: Set<string>;
}

function packageOf(file: string): string | undefined {
  const at = file.lastIndexOf('/node_modules/');
  if (at < 0) return undefined;
  const [scope, name] = file.slice(at + '/node_modules/'.length).split('/');
  return scope.startsWith('@') ? `${scope}/${name}` : scope;
}

/** Runs `bin args` with the preload; with `tty`, under script(1), so stdin, stdout and stderr are a terminal. */
function run(bin: string, args: string[], options: { env?: Record<string, string>; tty?: boolean } = {}): Loaded {
  const out = path.join(dir, `loaded-${Math.random().toString(36).slice(2)}.json`);
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    XDG_CONFIG_HOME: path.join(dir, 'config'),
    ...(process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {}),
    NODE_OPTIONS: `--require ${preload}`,
    HPCJOB_LOADED_OUT: out,
    ...options.env,
  };
  const argv = [process.execPath, bin, ...args];
  const r = options.tty
    ? spawnSync('script', ['-qec', argv.map((a) => `'${a}'`).join(' '), '/dev/null'], { cwd: dir, env, encoding: 'utf8' })
    : spawnSync(argv[0], argv.slice(1), { cwd: dir, env, encoding: 'utf8' });
  if (r.error) throw r.error;
  if (!existsSync(out)) throw new Error(`hpcjob ${args.join(' ')} wrote no list of loaded files (exit ${r.status}): ${r.stderr}`);
  const files = JSON.parse(readFileSync(out, 'utf8')) as string[];
  const packages = new Set(files.map(packageOf).filter((p): p is string => p !== undefined));
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, files, packages };
}

const heavyIn = (loaded: Loaded): Heavy[] => HEAVY.filter((p) => loaded.packages.has(p));

describe.each([
  ['the compiled CLI (dist/cli/index.js)', () => COMPILED],
  ['the bundle (cli/build.ts)', () => bundle],
])('%s', (_form, binary) => {
  it("--help, --version and a command's --help load no command and none of the heavy packages, zod or yaml", () => {
    for (const args of [['--help'], ['--version'], ['validate', '--help'], ['upload', '--help'], ['login', '--help']]) {
      const loaded = run(binary(), args);
      expect({ args, code: loaded.code }).toEqual({ args, code: 0 });
      expect({ args, heavy: heavyIn(loaded), zod: loaded.packages.has('zod'), yaml: loaded.packages.has('yaml') }).toEqual({
        args,
        heavy: [],
        zod: false,
        yaml: false,
      });
      // The compiled tree shows the CLI's own modules too: not one command was loaded to print the help.
      expect(loaded.files.filter((f) => f.includes('/dist/cli/commands/'))).toEqual([]);
    }
  });

  it('validate and explain --offline load the spec parser, not the Azure SDKs, cli-progress or the Shipyard importer', () => {
    const validate = run(binary(), ['validate', SPEC]);
    expect(validate.code).toBe(0);
    expect(validate.stdout).toContain('is valid');
    expect(heavyIn(validate)).toEqual([]);
    expect(validate.packages.has('zod')).toBe(true);
    const explain = run(binary(), ['explain', '--offline', SPEC]);
    expect(explain.code).toBe(0);
    expect(explain.stdout).toContain('pool');
    expect(heavyIn(explain)).toEqual([]);
    for (const loaded of [validate, explain]) expect(loaded.files.filter((f) => f.includes('/dist/cli/import/'))).toEqual([]);
  });

  it('an API call without a sign-in scope (status) loads no SDK and no zod schema', () => {
    const status = run(binary(), ['--endpoint', down, 'status', 'job-x']);
    expect(status.code).toBe(3);
    expect(status.stderr).toMatch(/cannot reach the API at .*ECONNREFUSED/);
    expect(heavyIn(status)).toEqual([]);
    expect(status.packages.has('zod')).toBe(false);
  });

  it('upload loads @azure/storage-blob, login loads @azure/identity, each only its own', () => {
    const upload = run(binary(), ['--endpoint', down, 'upload', 'data.txt']);
    expect(upload.code).toBe(3);
    expect(upload.stderr).toMatch(/cannot reach the API/);
    expect(heavyIn(upload)).toEqual(['@azure/storage-blob']);
    // A sign-in that fails before any request: @azure/identity refuses an authority host that is not https.
    const signIn = { HPCJOB_SCOPE: 'api://hpc-jobs/.default', HPCJOB_TENANT_ID: 'tenant', HPCJOB_CLIENT_ID: 'client', HPCJOB_AUTHORITY_HOST: down };
    const login = run(binary(), ['--endpoint', down, 'login'], { env: signIn });
    expect(login.code).toBe(3);
    expect(login.stderr).toMatch(/sign-in failed/);
    expect(heavyIn(login)).toEqual(['@azure/identity']);
  });

  it('watch loads cli-progress only when it draws bars on a terminal', () => {
    const args = ['--endpoint', down, 'watch', 'job-x', '--interval', '1'];
    const piped = run(binary(), args);
    expect(piped.code).toBe(3);
    expect(piped.stderr).toMatch(/cannot reach the API/);
    expect(heavyIn(piped)).toEqual([]);
    const terminal = run(binary(), args, { tty: true });
    // script(1) gives the terminal's output on stdout. The same API error, not an "unexpected error" of the bars.
    expect(terminal.code).toBe(3);
    expect(terminal.stdout).toMatch(/hpcjob: cannot reach the API at .*ECONNREFUSED/);
    expect(heavyIn(terminal)).toEqual(['cli-progress']);
  });
});
