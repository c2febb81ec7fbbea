/**
 * The preflight check's pure parts (shared/core/planning/preflight.ts): the task it builds, the parse of what its master
 * prints, and the verdict per node; and its shell and C parts (shared/core/mpi/preflightScript.ts) run for real: the master
 * script under bash with a stand-in ssh, mpicc and mpirun on PATH (no Batch, no MPI launch), and the ping-pong
 * compiled with this machine's mpicc and run by its mpirun on two ranks.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { planJob } from '../../shared/core/planning/jobPlan';
import {
  evaluatePreflight,
  parsePreflightOutput,
  preflightTaskRequest,
  preflightThresholds,
  type PreflightRun,
  type PreflightThresholds,
} from '../../shared/core/planning/preflight';
import { compactC, PINGPONG_C, preflightMasterScript } from '../../shared/core/mpi/preflightScript';
import { smallSpec } from '../ops/helpers';

function specOf(opts: Parameters<typeof smallSpec>[1] & { extra?: Record<string, unknown> }): JobSpec {
  const text =
    smallSpec('pf', opts) +
    (opts.extra
      ? Object.entries(opts.extra)
          .map(([k, v]) => `${k}: ${JSON.stringify(v)}\n`)
          .join('')
      : '');
  const parsed = parseJobSpec(text, 'application/yaml');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.spec;
}

/** The single-quoted script of `/bin/bash -c '<script>'`, unquoted as bash would. */
function scriptOf(commandLine: string): string {
  return execFileSync('bash', ['-c', `set -- ${commandLine.replace(/^\/bin\/bash -c /, '')}; printf '%s' "$1"`], { encoding: 'utf8' });
}

const NODES = [
  { id: 'n0', ipAddress: '10.9.0.1' },
  { id: 'n1', ipAddress: '10.9.0.2' },
  { id: 'n2', ipAddress: '10.9.0.3' },
];
const TH: PreflightThresholds = {
  maxSshMs: 2000,
  minFreeMB: 1024,
  requiredPaths: [],
  runsPreExecution: false,
  pingPong: { enabled: true, maxLatencyUs: 50, minBandwidthMBps: 1000 },
};
const probe = (ip: string, extra: Partial<PreflightRun['report']['probes'][number]> = {}) => ({
  ip,
  via: 'ssh' as const,
  rc: 0,
  ms: 30,
  freeKB: 50 * 1024 * 1024,
  missing: [],
  ...extra,
});
const run = (report: Partial<PreflightRun['report']>): PreflightRun => ({
  exitCode: 0,
  report: { probes: NODES.map((n) => probe(n.ipAddress)), pairs: [], ...report },
});
const ring = (lat: (a: string, b: string) => number) => {
  const ips = NODES.map((n) => n.ipAddress);
  return { ranks: ips, pairs: ips.map((a, i) => ({ a, b: ips[(i + 1) % 3], latencyUs: lat(a, ips[(i + 1) % 3]), bandwidthMBps: 5000 })) };
};

describe('the preflight task', () => {
  it("goes through the job's own launch path: one rank per node, the forwarded ping-pong path, the check's wall clock, never retried by Batch", () => {
    const spec = specOf({ nodes: 2, command: 'app', extra: { preflight: { timeout: 'PT2M' } } });
    const t = preflightTaskRequest(planJob('pf', spec), spec, NODES.slice(0, 2), 'hpc-pf', 'preflight-1-1');
    expect(t).toMatchObject({
      batchJobId: 'hpc-pf',
      taskId: 'preflight-1-1',
      numberOfInstances: 2,
      maxWallClockSeconds: 120,
      maxTaskRetryCount: 0,
      commonResourceFiles: [],
    });
    const app = scriptOf(t.applicationCommandLine);
    // The user's launcher options first, then ours; the path of the program forwarded to every rank.
    expect(app).toMatch(
      /exec mpirun --mca btl_tcp_if_include lo -np "\$MPIJOB_NP" --host "\$MPIJOB_HOSTS" --map-by "ppr:\$\{MPIJOB_PPN\}:node" .*-x MPIJOB_PINGPONG_BIN .*\/bin\/bash -c 'exec "\$MPIJOB_PINGPONG_BIN"'$/,
    );
    expect(app).toContain('export MPIJOB_PPN=1');
    expect(spawnSync('bash', ['-n', '-c', app]).status).toBe(0);
    // No single quote in what the check adds: nested quoting would multiply them (the user's own command may have some).
    expect(
      preflightMasterScript({ sshPort: 23, maxSshMs: 1000, requiredPaths: ['/mnt/scratch'], pingPong: true, openmpi: true, launcher: 'mpirun' }),
    ).not.toContain("'");
    expect(t.applicationCommandLine.length).toBeLessThan(8_000);
  });

  it("docker: the job's container with its sshd on port 23 (coordination), the launcher inside it, ssh probes with -p 23", () => {
    const spec = specOf({ nodes: 2, command: 'app', container: { runtime: 'docker', images: ['reg.example.com/app:1'] } });
    const t = preflightTaskRequest(planJob('pf', spec), spec, NODES.slice(0, 2), 'hpc-pf', 'preflight-1-1');
    expect(scriptOf(t.coordinationCommandLine)).toMatch(/docker run .*--name mpijob-pf .*reg\.example\.com\/app:1 \/usr\/sbin\/sshd -D -p 23/);
    const app = scriptOf(t.applicationCommandLine);
    expect(app).toContain('exec docker exec');
    expect(app).toContain('-p 23');
    expect(app).toContain('--mca plm_rsh_args');
  });

  it('singularity: the check runs on the host (its launcher and MPI), not in the image', () => {
    const spec = specOf({ nodes: 2, command: 'app', container: { runtime: 'singularity', images: ['docker://reg.example.com/app:1'] } });
    const app = scriptOf(preflightTaskRequest(planJob('pf', spec), spec, NODES.slice(0, 2), 'hpc-pf', 'p').applicationCommandLine);
    expect(app).not.toContain('singularity exec');
  });

  it("thresholds: the spec's, else the RDMA defaults (unless the deployment turned them off), none on TCP", () => {
    const tcp = specOf({ command: 'x' });
    expect(preflightThresholds(tcp, 'Standard_D8s_v5').pingPong).toEqual({ enabled: true });
    const rdma = { ...tcp, mpi: { ...tcp.mpi, fabric: 'auto' as const } };
    expect(preflightThresholds(rdma, 'Standard_HB120rs_v3').pingPong).toEqual({ enabled: true, maxLatencyUs: 20, minBandwidthMBps: 4000 });
    expect(preflightThresholds(rdma, 'Standard_HB120rs_v3', false).pingPong).toEqual({ enabled: true });
    const own = { ...rdma, preflight: { ...rdma.preflight, pingPong: { enabled: true, maxLatencyUs: 7 } } };
    expect(preflightThresholds(own, 'Standard_HB120rs_v3', false).pingPong).toEqual({ enabled: true, maxLatencyUs: 7 });
    expect(preflightThresholds(own, 'Standard_HB120rs_v3').pingPong).toEqual({ enabled: true, maxLatencyUs: 7, minBandwidthMBps: 4000 });
  });

  it("checks the pool's mounts on every node where the ranks run: native and singularity, not inside a docker container", () => {
    const mounts = [
      { name: 'home', nfs: { source: '10.0.0.4:/exports/home' } },
      { name: 'data', nfs: { source: '10.0.0.5:/exports/data' } },
    ];
    const native = specOf({ command: 'x', extra: { mounts } });
    expect(preflightThresholds(native, 'Standard_D8s_v5').requiredPaths).toEqual(['mount:home', 'mount:data']);
    const t = preflightTaskRequest(planJob('pf', native), native, NODES.slice(0, 2), 'hpc-pf', 'preflight-1-1');
    expect(scriptOf(t.applicationCommandLine)).toContain('mount:home mount:data');
    const docker = specOf({ command: 'x', container: { runtime: 'docker', images: ['registry.example.com/hpc/app:1.0'] }, extra: { mounts } });
    expect(preflightThresholds(docker, 'Standard_D8s_v5').requiredPaths).toEqual([]);
    expect(preflightThresholds(specOf({ command: 'x' }), 'Standard_D8s_v5').requiredPaths).toEqual([]);
    expect(() =>
      preflightMasterScript({ sshPort: 22, maxSshMs: 1000, requiredPaths: ['mount:a b'], pingPong: false, openmpi: true, launcher: 'mpirun' }),
    ).toThrow(/not an absolute path/);
  });
});

describe("the job's pre-execution command in the check", () => {
  const spec = (preflight: Record<string, unknown>) =>
    parseJobSpec(
      JSON.stringify({
        name: 'pf-pre',
        pool: { vmSize: 'Standard_D8s_v5', nodes: 2 },
        mpi: { runtime: 'openmpi', command: './app', preExecutionCommand: 'module load mpi/hpcx', coordinationCommand: 'make app' },
        preflight,
      }),
      'application/json',
    );
  it('runs first by default (the environment it sets up), and not at all with runPreExecutionCommand: false', () => {
    const on = spec({});
    const off = spec({ runPreExecutionCommand: false });
    if (!on.ok || !off.ok) throw new Error(JSON.stringify([on, off]));
    const plan = planJob('pf-pre', on.spec);
    const line = (s: typeof on.spec) => JSON.stringify(preflightTaskRequest(plan, s, [{ id: 'a' }, { id: 'b' }], 'bj', 'preflight-1-1'));
    expect(line(on.spec)).toContain('module load mpi/hpcx');
    expect(line(off.spec)).not.toContain('module load mpi/hpcx');
    expect(preflightThresholds(on.spec, 'Standard_D8s_v5').runsPreExecution).toBe(true);
    expect(preflightThresholds(off.spec, 'Standard_D8s_v5').runsPreExecution).toBe(false);
  });
});

describe('parsePreflightOutput', () => {
  it('reads probes, their output, the ranks and the pairs; ignores everything else', () => {
    const out = [
      'MPIJOB_PREFLIGHT begin nodes=3 port=22 max_ssh_ms=2000',
      'MPIJOB_PREFLIGHT node 10.9.0.1 via=local rc=0 ms=4',
      'MPIJOB_PREFLIGHT out 10.9.0.1 free_kb=1048576',
      'MPIJOB_PREFLIGHT node 10.9.0.2 via=ssh rc=0 ms=35',
      'MPIJOB_PREFLIGHT out 10.9.0.2 free_kb=2048',
      'MPIJOB_PREFLIGHT out 10.9.0.2 missing=/mnt/scratch',
      'MPIJOB_PREFLIGHT node 10.9.0.3 via=ssh rc=255 ms=12',
      'MPIJOB_PREFLIGHT out 10.9.0.3 ssh: connect to host 10.9.0.3 port 22: Connection refused',
      'Warning: Permanently added 10.9.0.2 (ED25519) to the list of known hosts.',
      'MPIJOB_PREFLIGHT ranks 10.9.0.1,10.9.0.2',
      'MPIJOB_PINGPONG 0 1 3.41 1234.5 1000 50',
      'MPIJOB_PINGPONG 9 1 1.00 1.0 1 1',
      '',
    ].join('\n');
    expect(parsePreflightOutput(out)).toEqual({
      probes: [
        { ip: '10.9.0.1', via: 'local', rc: 0, ms: 4, freeKB: 1048576, missing: [] },
        { ip: '10.9.0.2', via: 'ssh', rc: 0, ms: 35, freeKB: 2048, missing: ['/mnt/scratch'] },
        { ip: '10.9.0.3', via: 'ssh', rc: 255, ms: 12, missing: [], message: 'ssh: connect to host 10.9.0.3 port 22: Connection refused' },
      ],
      ranks: ['10.9.0.1', '10.9.0.2'],
      // A pair naming a rank the ranks line does not have is dropped.
      pairs: [{ a: '10.9.0.1', b: '10.9.0.2', latencyUs: 3.41, bandwidthMBps: 1234.5 }],
    });
    expect(parsePreflightOutput('MPIJOB_PREFLIGHT pingpong skipped=no-mpicc\nMPIJOB_PREFLIGHT cc x.c:1: error')).toEqual({
      probes: [],
      pairs: [],
      skipped: 'no-mpicc',
      compiler: ['x.c:1: error'],
    });
  });
});

describe('evaluatePreflight', () => {
  it('all healthy: passes with per-node figures (worst pair of each node)', () => {
    const v = evaluatePreflight(run(ring((a) => (a === '10.9.0.2' ? 4 : 2))), NODES, TH);
    expect(v).toMatchObject({ pass: true, outliers: [], pingPong: 'measured over 3 pair(s)' });
    expect(v.nodes.n1).toEqual({ ok: true, ip: '10.9.0.2', sshMs: 30, freeGB: 50, latencyUs: 4, bandwidthMBps: 5000, problems: [] });
    expect(v.nodes.n0.latencyUs).toBe(2);
  });

  it('unreachable (refused, timed out, too slow), short of disk, a path missing: each named on its node', () => {
    const v = evaluatePreflight(
      run({
        probes: [
          probe('10.9.0.1', { via: 'local', freeKB: 100 * 1024, missing: ['/mnt/data'] }),
          probe('10.9.0.2', { rc: 124, ms: 2005 }),
          probe('10.9.0.3', { ms: 2500 }),
        ],
      }),
      NODES,
      { ...TH, pingPong: { enabled: false } },
    );
    expect(v.pass).toBe(false);
    expect(v.outliers).toEqual(['n0', 'n1', 'n2']);
    expect(v.nodes.n0.problems).toEqual(['free disk 0.1 GB < 1 GB', 'missing /mnt/data']);
    expect(v.nodes.n1.problems).toEqual(["no answer on the launcher's ssh port within 2000 ms"]);
    expect(v.nodes.n2.problems).toEqual(['ssh round trip 2500 ms > 2000 ms']);
    expect(v.pingPong).toBe('skipped: disabled');
  });

  it('a slow node of three is told from its partners: only it is replaced', () => {
    const v = evaluatePreflight(run(ring((a, b) => ([a, b].includes('10.9.0.3') ? 900 : 2))), NODES, TH);
    expect(v.outliers).toEqual(['n2']);
    expect(v.nodes.n2.problems).toEqual(['slow fabric: latency 900 µs, bandwidth 5000 MB/s (thresholds: latency 50 µs, bandwidth 1000 MB/s)']);
    expect(v.nodes.n0).toMatchObject({ ok: true, latencyUs: 900 });
  });

  it('two nodes: a slow pair cannot be pinned on one, both are replaced', () => {
    const two = NODES.slice(0, 2);
    const v = evaluatePreflight(
      {
        exitCode: 0,
        report: {
          probes: two.map((n) => probe(n.ipAddress)),
          ranks: two.map((n) => n.ipAddress),
          pairs: [{ a: '10.9.0.1', b: '10.9.0.2', latencyUs: 3, bandwidthMBps: 20 }],
        },
      },
      two,
      TH,
    );
    expect(v.outliers).toEqual(['n0', 'n1']);
    expect(v.nodes.n0.problems[0]).toMatch(/with two nodes the slow pair cannot be pinned on one$/);
  });

  it('every pair slow on three nodes, no output at all, a ping-pong that did not complete: failures no node is blamed for', () => {
    expect(evaluatePreflight(run(ring(() => 900)), NODES, TH)).toMatchObject({
      pass: false,
      outliers: [],
      unattributed: expect.stringMatching(/^every ping-pong pair is over the thresholds/),
    });
    expect(evaluatePreflight({ exitCode: 137, failure: 'MaxWallClockTimeExceeded: …', report: { probes: [], pairs: [] } }, NODES, TH)).toMatchObject({
      pass: false,
      outliers: [],
      unattributed: 'the check printed nothing (task exit 137: MaxWallClockTimeExceeded: …)',
    });
    // When the job's pre-execution command ran first, the verdict says how to keep it out of the check.
    expect(evaluatePreflight({ exitCode: 127, report: { probes: [], pairs: [] } }, NODES, { ...TH, runsPreExecution: true }).unattributed).toMatch(
      /^the check printed nothing \(task exit 127\); the job's mpi.preExecutionCommand ran first: .*set preflight.runPreExecutionCommand: false$/,
    );
    expect(
      evaluatePreflight({ exitCode: 1, report: { probes: NODES.map((n) => probe(n.ipAddress)), ranks: NODES.map((n) => n.ipAddress), pairs: [] } }, NODES, TH),
    ).toMatchObject({ pass: false, pingPong: 'did not complete', unattributed: 'the ping-pong did not complete (task exit 1)' });
  });

  it('no thresholds: figures recorded, never judged; a skipped ping-pong is said, not failed', () => {
    const v = evaluatePreflight(run(ring(() => 90_000)), NODES, { ...TH, pingPong: { enabled: true } });
    expect(v).toMatchObject({ pass: true, pingPong: 'measured over 3 pair(s) (no thresholds: recorded, not judged)' });
    expect(evaluatePreflight(run({ skipped: 'no-mpicc' }), NODES, TH)).toMatchObject({ pass: true, pingPong: 'skipped: no-mpicc' });
  });
});

describe('the master script, run under bash with stand-ins for ssh, mpicc and mpirun', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'pf-script-'));
    mkdirSync(path.join(dir, 'bin'));
    mkdirSync(path.join(dir, 'wd'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function stub(name: string, body: string): void {
    writeFileSync(path.join(dir, 'bin', name), `#!/bin/bash\n${body}\n`);
    chmodSync(path.join(dir, 'bin', name), 0o755);
  }

  it('probes every node, copies the program to the reachable ones and launches the ping-pong on those only', () => {
    // ssh: 10.9.0.3 refuses; others run the command here (stdin passed), each call logged.
    stub(
      'ssh',
      `while [ $# -gt 0 ]; do case "$1" in -o|-p) shift 2 ;; -*) shift ;; *) break ;; esac; done
h="$1"; shift; echo "$h $*" >> "${dir}/ssh.log"
if [ "$h" = 10.9.0.3 ]; then echo "ssh: connect to host $h port 22: Connection refused" >&2; exit 255; fi
exec bash -c "$*"`,
    );
    stub(
      'mpicc',
      `o=""; while [ $# -gt 0 ]; do if [ "$1" = -o ]; then o="$2"; shift; fi; shift; done; printf '#!/bin/sh\\necho pingpong\\n' > "$o"; chmod +x "$o"`,
    );
    stub('mpirun', `echo "mpirun $*" > "${dir}/mpirun.log"; echo "MPIJOB_PINGPONG 0 1 3.25 2048.0 1000 50"`);
    const spec = specOf({ nodes: 3, command: 'app' });
    const t = preflightTaskRequest(planJob('pf', spec), spec, NODES, 'hpc-pf', 'preflight-1-1');
    const env = {
      PATH: `${dir}/bin:/usr/bin:/bin`,
      HOME: dir,
      AZ_BATCH_HOST_LIST: NODES.map((n) => n.ipAddress).join(','),
      AZ_BATCH_TASK_WORKING_DIR: `${dir}/wd`,
      AZ_BATCH_NODE_ROOT_DIR: dir,
    };
    const r = spawnSync('bash', ['-c', scriptOf(t.applicationCommandLine)], { cwd: `${dir}/wd`, env, encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const report = parsePreflightOutput(r.stdout);
    expect(report.probes.map((p) => [p.ip, p.via, p.rc, p.freeKB !== undefined])).toEqual([
      ['10.9.0.1', 'local', 0, true],
      ['10.9.0.2', 'ssh', 0, true],
      ['10.9.0.3', 'ssh', 255, false],
    ]);
    expect(report.probes[2].message).toBe('ssh: connect to host 10.9.0.3 port 22: Connection refused');
    expect(report.ranks).toEqual(['10.9.0.1', '10.9.0.2']);
    expect(report.pairs).toEqual([{ a: '10.9.0.1', b: '10.9.0.2', latencyUs: 3.25, bandwidthMBps: 2048 }]);
    // The program went to the reachable node only, under a temporary name renamed into place.
    const copies = readFileSync(`${dir}/ssh.log`, 'utf8')
      .split('\n')
      .filter((l) => l.includes('cat >'));
    expect(copies).toEqual([
      expect.stringMatching(
        /^10\.9\.0\.2 mkdir -p .*\/mpijob-preflight && cat > .*\/pingpong\.10\.9\.0\.2 && chmod \+x .* && mv -f .*\/pingpong\.10\.9\.0\.2 .*\/mpijob-preflight\/pingpong$/,
      ),
    ]);
    // The launcher got the narrowed host list and one rank per node.
    expect(readFileSync(`${dir}/mpirun.log`, 'utf8')).toMatch(/-np 2 --host 10\.9\.0\.1:1,10\.9\.0\.2:1 --map-by ppr:1:node/);
    expect(readFileSync(`${dir}/wd/mpijob.hosts`, 'utf8')).toBe('10.9.0.1 slots=1\n10.9.0.2 slots=1\n');
  });

  it('copies the program to many nodes at once, in waves of 16; a node it did not reach leaves the ring and is named', () => {
    // A copy waits (up to 20 s) until the whole of its wave of 16 has started: copies sent one after another would each
    // wait out the 20 s and fail. 20 nodes: 19 copies, a wave of 16 and one of 3; 10.9.1.7's copy fails.
    const hosts = Array.from({ length: 20 }, (_, i) => `10.9.1.${i + 1}`);
    stub(
      'ssh',
      `while [ $# -gt 0 ]; do case "$1" in -o|-p) shift 2 ;; -*) shift ;; *) break ;; esac; done
h="$1"; shift
case "$*" in *"cat >"*) ;; *) exec bash -c "$*" ;; esac
echo "$h" >> "${dir}/started"
want=16; [ "$(wc -l < "${dir}/started")" -gt 16 ] && want=19
for i in $(seq 200); do [ "$(wc -l < "${dir}/started")" -ge "$want" ] && break; sleep 0.1; done
[ "$(wc -l < "${dir}/started")" -ge "$want" ] || { echo "$h" >> "${dir}/alone"; exit 1; }
[ "$h" = 10.9.1.7 ] && exit 1
exec bash -c "$*"`,
    );
    stub(
      'mpicc',
      `o=""; while [ $# -gt 0 ]; do if [ "$1" = -o ]; then o="$2"; shift; fi; shift; done; printf '#!/bin/sh\\necho pingpong\\n' > "$o"; chmod +x "$o"`,
    );
    stub('mpirun', 'echo "MPIJOB_PINGPONG 0 1 3.25 2048.0 1000 50"');
    const script = preflightMasterScript({ sshPort: 22, maxSshMs: 30_000, requiredPaths: [], pingPong: true, openmpi: true, launcher: 'mpirun' });
    const r = spawnSync('bash', ['-c', script], {
      cwd: `${dir}/wd`,
      env: { PATH: `${dir}/bin:/usr/bin:/bin`, AZ_BATCH_HOST_LIST: hosts.join(','), AZ_BATCH_NODE_ROOT_DIR: dir },
      encoding: 'utf8',
      timeout: 90_000,
    });
    expect(r.status).toBe(0);
    expect(spawnSync('test', ['-e', `${dir}/alone`]).status).toBe(1);
    expect(readFileSync(`${dir}/started`, 'utf8').trim().split('\n').sort()).toEqual(hosts.slice(1).sort());
    expect(r.stdout.split('\n').filter((l) => l.includes('copy-failed'))).toEqual(['MPIJOB_PREFLIGHT copy-failed 10.9.1.7']);
    // The node the program did not reach is left out of the ring and named by the verdict, so it is replaced.
    // (The launcher line that follows the master's part prints the ring's figures; one pair stands in for them.)
    const report = parsePreflightOutput(`${r.stdout}MPIJOB_PINGPONG 0 1 3.25 2048.0 1000 50\n`);
    expect(report.ranks).toEqual(hosts.filter((h) => h !== '10.9.1.7'));
    const verdict = evaluatePreflight(
      { exitCode: 0, report },
      hosts.map((ipAddress, i) => ({ id: `n${i}`, ipAddress })),
      { ...TH, pingPong: { enabled: true } },
    );
    expect(verdict.outliers).toEqual(['n6']);
    expect(verdict.nodes.n6.problems).toEqual(["the ping-pong program could not be copied to it over the launcher's ssh port"]);
    expect(verdict.unattributed).toBeUndefined();
  }, 120_000);

  it('no mpicc where the launcher runs: the probes are printed, the ping-pong is skipped and the launcher never runs', () => {
    stub('ssh', 'while [ $# -gt 0 ]; do case "$1" in -o|-p) shift 2 ;; -*) shift ;; *) break ;; esac; done; shift; exec bash -c "$*"');
    stub('mpirun', `touch "${dir}/mpirun.ran"`);
    const script = preflightMasterScript({
      sshPort: 22,
      maxSshMs: 5000,
      requiredPaths: ['/no/such/path', 'mount:home', 'mount:gone'],
      pingPong: true,
      openmpi: true,
      launcher: 'mpirun',
    });
    // A PATH without any mpicc: the stand-ins, and the few tools the script needs linked in.
    mkdirSync(`${dir}/tools`);
    for (const tool of ['bash', 'date', 'df', 'tail', 'tr', 'cut', 'head', 'cat', 'mkdir', 'rm', 'timeout', 'touch', 'ls']) {
      execFileSync('ln', ['-s', execFileSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim(), `${dir}/tools/${tool}`]);
    }
    // The node's mounts directory holds "home" (a link, as the emulator makes it) but not "gone".
    mkdirSync(`${dir}/fsmounts`);
    mkdirSync(`${dir}/nfs-home`);
    execFileSync('ln', ['-s', `${dir}/nfs-home`, `${dir}/fsmounts/home`]);
    const r = spawnSync('/bin/bash', ['-c', script], {
      cwd: `${dir}/wd`,
      env: {
        PATH: `${dir}/bin:${dir}/tools`,
        AZ_BATCH_HOST_LIST: '10.9.0.1,10.9.0.2',
        AZ_BATCH_NODE_ROOT_DIR: dir,
        AZ_BATCH_NODE_MOUNTS_DIR: `${dir}/fsmounts`,
      },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status).toBe(0);
    const report = parsePreflightOutput(r.stdout);
    expect(report.skipped).toBe('no-mpicc');
    // Mounts resolve under the node's mounts directory; the missing one is named by its path on the node.
    expect(report.probes.map((p) => p.missing)).toEqual([
      ['/no/such/path', `${dir}/fsmounts/gone`],
      ['/no/such/path', `${dir}/fsmounts/gone`],
    ]);
    expect(spawnSync('test', ['-e', `${dir}/mpirun.ran`]).status).toBe(1);
  });

  it('the ping-pong compiles with mpicc and measures a real pair with mpirun', () => {
    // The compacted source, as the check writes it on the master.
    writeFileSync(`${dir}/pp.c`, compactC(PINGPONG_C));
    execFileSync('mpicc', ['-O2', '-o', `${dir}/pp`, `${dir}/pp.c`]);
    const out = execFileSync('mpirun', ['--oversubscribe', '-np', '2', '--mca', 'btl', 'self,tcp', '--mca', 'btl_tcp_if_include', 'lo', `${dir}/pp`], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, OMPI_ALLOW_RUN_AS_ROOT: '1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1' },
    });
    const report = parsePreflightOutput(`MPIJOB_PREFLIGHT ranks a,b\n${out}`);
    expect(report.pairs).toHaveLength(1);
    expect(report.pairs[0].latencyUs).toBeGreaterThan(0);
    expect(report.pairs[0].bandwidthMBps).toBeGreaterThan(0);
    // Rings of 4 and 5: every pair (r, r+1 mod n) once, measured in phases of disjoint pairs (an odd ring needs three).
    for (const n of [4, 5]) {
      const ring = execFileSync('mpirun', ['--oversubscribe', '-np', String(n), '--mca', 'btl', 'self,tcp', '--mca', 'btl_tcp_if_include', 'lo', `${dir}/pp`], {
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, OMPI_ALLOW_RUN_AS_ROOT: '1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1' },
      });
      const lines = ring
        .split('\n')
        .filter((l) => l.startsWith('MPIJOB_PINGPONG '))
        .map((l) => l.split(' ').slice(1, 3).join('-'));
      expect(lines.sort()).toEqual(Array.from({ length: n }, (_, r) => `${r}-${(r + 1) % n}`).sort());
      const figures = parsePreflightOutput(`MPIJOB_PREFLIGHT ranks ${'abcde'.slice(0, n).split('').join(',')}\n${ring}`);
      expect(figures.pairs.every((p) => p.latencyUs > 0 && p.bandwidthMBps > 0)).toBe(true);
    }
  }, 120_000);
});
