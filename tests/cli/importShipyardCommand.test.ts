/**
 * `hpcjob import shipyard` as users run it: the COMPILED binary (dist/cli/index.js) as a child process, offline (no
 * stack). Exit codes (0 exact, 5 approximated or unsupported settings, 2 errors), files written and never overwritten
 * without --force, the report on stdout (table or --json), and an inline password never echoed anywhere.
 * Needs dist/ built (`npm run build`).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { defaultRecipesDir } from '../../cli/import/shipyard/recipeTable';
import { parseJobSpec } from '../../shared/core/spec';

const REPO = path.join(__dirname, '..', '..');
const CLI = path.join(REPO, 'dist', 'cli', 'index.js');
const RECIPE = path.join(defaultRecipesDir(REPO), 'mpiBench-Infiniband-OpenMPI', 'config');
let dir: string;

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first with npm run build`);
  dir = mkdtempSync(path.join(os.tmpdir(), 'hpcjob-import-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function hpcjob(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: dir }, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function write(name: string, text: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

const POOL = `pool_specification:
  id: hb
  vm_configuration:
    platform_image: { publisher: microsoft-dsvm, offer: ubuntu-hpc, sku: '2204' }
  vm_count: { dedicated: 2, low_priority: 0 }
  vm_size: Standard_HB120rs_v3
  inter_node_communication_enabled: true
`;
const JOBS = `job_specifications:
- id: lammps
  tasks:
  - docker_image: myregistry.azurecr.io/md/lammps:2023
    multi_instance:
      num_instances: pool_current_dedicated
      mpi: { runtime: openmpi, processes_per_node: 96 }
    command: lmp -in in.lj
`;

test('an exact import exits 0, writes a valid spec and prints the report table', () => {
  const out = path.join(dir, 'exact');
  const r = hpcjob(['import', 'shipyard', '--pool', write('pool.yaml', POOL), '--jobs', write('jobs.yaml', JOBS), '--out', out]);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/pool\.yaml: \d+ mapped, 0 approximated, 0 unsupported/);
  expect(r.stdout).toMatch(/mapped\s+6\s+pool_specification\.vm_size\s+pool\.vmSize/);
  expect(r.stdout).toContain(`wrote ${path.join(out, 'lammps.yaml')}`);
  const parsed = parseJobSpec(readFileSync(path.join(out, 'lammps.yaml'), 'utf8'), 'application/yaml');
  expect(parsed.ok && parsed.spec.mpi).toMatchObject({ runtime: 'openmpi', processesPerNode: 96, command: 'lmp -in in.lj' });
});

test('a recipe imports with exit 5 and --json; a second run refuses to overwrite unless --force', () => {
  const out = path.join(dir, 'recipe');
  const args = [
    'import',
    'shipyard',
    '--pool',
    path.join(RECIPE, 'pool.yaml'),
    '--jobs',
    path.join(RECIPE, 'jobs.yaml'),
    '--config',
    path.join(RECIPE, 'config.yaml'),
    '--out',
    out,
  ];
  const r = hpcjob([...args, '--json']);
  expect(r.code).toBe(5);
  expect(r.stderr).toMatch(/imported with 1 approximated and 1 unsupported setting\(s\).*\(exit 5\)/);
  const json = JSON.parse(r.stdout);
  expect(json).toMatchObject({
    outcome: 'partial',
    exitCode: 5,
    summary: { approximated: 1, unsupported: 1 },
    specs: [{ file: path.join(out, 'mpibench-openmpi-ib.yaml'), valid: true, errors: [] }],
  });
  expect(json.entries.find((e: { path: string }) => e.path === 'pool_specification.ssh')).toMatchObject({
    status: 'unsupported',
    file: path.join(RECIPE, 'pool.yaml'),
    line: 13,
  });
  expect(readdirSync(out)).toEqual(['mpibench-openmpi-ib.yaml']);

  const again = hpcjob(args);
  expect(again.code).toBe(2);
  expect(again.stderr).toContain(`would overwrite ${path.join(out, 'mpibench-openmpi-ib.yaml')}: pass --force`);
  expect(hpcjob([...args, '--force']).code).toBe(5);
});

test('missing files, YAML errors and a missing option exit 2 with the file, line and column', () => {
  const missing = hpcjob(['import', 'shipyard', '--pool', write('p2.yaml', POOL), '--jobs', path.join(dir, 'nope.yaml')]);
  expect(missing.code).toBe(2);
  expect(missing.stderr).toBe(`hpcjob: cannot read the Shipyard jobs file ${path.join(dir, 'nope.yaml')}: no such file\n`);

  const broken = hpcjob(['import', 'shipyard', '--pool', write('p3.yaml', POOL), '--jobs', write('broken.yaml', 'job_specifications:\n- id: a\n  tasks: [\n')]);
  expect(broken.code).toBe(2);
  expect(broken.stderr).toMatch(
    /^hpcjob: cannot import: 1 problem\(s\) in the Shipyard files\n {2}.*broken\.yaml: YAML syntax error: .* \(line \d+, column \d+\)\n$/,
  );
  expect(broken.stdout).toBe('');

  const option = hpcjob(['import', 'shipyard', '--pool', write('p4.yaml', POOL)]);
  expect(option.code).toBe(2);
  expect(option.stderr).toMatch(/required option '--jobs <file>' not specified/);
});

test('an inline password is reported by path and never echoed or written', () => {
  const password = 'Hunter2-Inline-Passw0rd';
  const credentials = write(
    'credentials.yaml',
    `credentials:\n  docker_registry:\n    myregistry.azurecr.io:\n      username: puller\n      password: ${password}\n`,
  );
  const out = path.join(dir, 'secret');
  const r = hpcjob(['import', 'shipyard', '--pool', write('p5.yaml', POOL), '--jobs', write('j5.yaml', JOBS), '--credentials', credentials, '--out', out]);
  expect(r.code).toBe(5);
  expect(r.stdout).toMatch(
    /Credentials found \(never copied; the values are not shown\): 1\n {2}.*credentials\.yaml:5 {2}credentials\.docker_registry\["myregistry\.azurecr\.io"\]\.password {2}\(password\)/,
  );
  const written = readFileSync(path.join(out, 'lammps.yaml'), 'utf8');
  expect(written).toMatch(/secretRef: REGISTRY_PASSWORD_MYREGISTRY_AZURECR_IO/);
  for (const text of [
    r.stdout,
    r.stderr,
    written,
    hpcjob([
      '--json',
      'import',
      'shipyard',
      '--pool',
      path.join(dir, 'p5.yaml'),
      '--jobs',
      path.join(dir, 'j5.yaml'),
      '--credentials',
      credentials,
      '--out',
      path.join(dir, 'secret-json'),
    ]).stdout,
  ]) {
    expect(text).not.toContain(password);
  }
});
