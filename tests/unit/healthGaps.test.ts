/**
 * Health-check gaps (issue 27, item 4): a GPUDirect RDMA check on the GPU sizes AzNHC runs its GDR checks on (the
 * peer-memory module loaded, read as AzNHC's azure_gdr_detect.nhc reads it), with the emulator's fault that removes
 * the module from one node; link flaps counted over the last 24 h of syslog, not the whole file. The probe runs for
 * real under bash with the emulator's hardware tools on PATH, as in healthChecks.test.ts. Each failed on the old code:
 * there was no `gdr` check, and a month-old flap counted like one of today.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { planJob } from '../../shared/core/planning/jobPlan';
import { healthThresholdsFor, LINK_FLAP_WINDOW_HOURS } from '../../shared/core/planning/healthThresholds';
import { healthPlan, judgeHealth, parseHealthLine } from '../../shared/core/planning/health';
import { evaluatePreflight, parsePreflightOutput, preflightTaskRequest, preflightThresholds } from '../../shared/core/planning/preflight';
import { HEALTH_CHECKS } from '../../shared/core/spec/sections/preflight';
import { hostHealthScript } from '../../shared/core/mpi/healthProbe';
import { preflightMasterScript } from '../../shared/core/mpi/preflightScript';
import { hardwareLine, nodeHardware } from '../../local/batch/model/hardware';
import { NODE_IMAGE_BIN_DIR } from '../../local/batch/runner/env';
import { smallSpec } from '../ops/helpers';

const ND = { vmSize: 'Standard_ND96asr_v4', nodes: 2 };
const HB = { vmSize: 'Standard_HB120rs_v3', nodes: 1 };
const NODES = [
  { id: 'n0', ipAddress: '10.9.0.1' },
  { id: 'n1', ipAddress: '10.9.0.2' },
];

function specOf(
  pool: Record<string, unknown>,
  preflight: Record<string, unknown> = { pingPong: { enabled: false } },
  container?: Record<string, unknown>,
): JobSpec {
  const parsed = parseJobSpec(
    smallSpec('hg', { command: 'app', pool, ...(container ? { container } : {}) }) + `preflight: ${JSON.stringify(preflight)}\n`,
    'application/yaml',
  );
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.spec;
}

/** Runs the preflight task's master script under bash, `nodes` reached through an ssh stand-in that runs as that node. */
function runProbe(dir: string, spec: JobSpec, vmSize: string, nodes: typeof NODES, checks: string[], env: Record<string, string> = {}, sshHome = false) {
  // sshHome: the session starts in $HOME, as a real ssh login does.
  writeFileSync(
    path.join(dir, 'bin', 'ssh'),
    `#!/bin/bash\nwhile [ $# -gt 0 ]; do case "$1" in -o|-p) shift 2 ;; -*) shift ;; *) break ;; esac; done\nh="$1"; shift\n${sshHome ? 'cd "$HOME"\n' : ''}AZ_BATCH_EMULATOR_NODE_IP=$h exec bash -c "$*"\n`,
  );
  chmodSync(path.join(dir, 'bin', 'ssh'), 0o755);
  const t = preflightTaskRequest(planJob('hg', spec), spec, nodes, 'hpc-hg', 'preflight-1-1', undefined, checks);
  const script = execFileSync('bash', ['-c', `set -- ${t.applicationCommandLine.replace(/^\/bin\/bash -c /, '')}; printf '%s' "$1"`], { encoding: 'utf8' });
  const r = spawnSync('bash', ['-c', script], {
    cwd: `${dir}/wd`,
    encoding: 'utf8',
    timeout: 60_000,
    env: {
      PATH: `${dir}/bin:${NODE_IMAGE_BIN_DIR}:/usr/bin:/bin`,
      HOME: dir,
      AZ_BATCH_HOST_LIST: nodes.map((n) => n.ipAddress).join(','),
      AZ_BATCH_TASK_WORKING_DIR: `${dir}/wd`,
      AZ_BATCH_NODE_ROOT_DIR: dir,
      AZ_BATCH_EMULATOR_HARDWARE: path.join(dir, 'hardware'),
      AZ_BATCH_EMULATOR_NODE_IP: nodes[0].ipAddress,
      ...env,
    },
  });
  expect(r.stderr).toBe('');
  return evaluatePreflight({ exitCode: r.status ?? undefined, report: parsePreflightOutput(r.stdout) }, nodes, preflightThresholds(spec, vmSize, true, checks));
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'hg-'));
  mkdirSync(path.join(dir, 'bin'));
  mkdirSync(path.join(dir, 'wd'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('GPUDirect RDMA (gdr)', () => {
  it('runs on the ND A100 v4 / ND H100 v5 sizes, not on HB or plain sizes', () => {
    expect(HEALTH_CHECKS).toContain('gdr');
    for (const size of ['Standard_ND96asr_v4', 'Standard_ND96amsr_A100_v4', 'Standard_ND96isr_H100_v5']) {
      expect({ size, gdr: healthThresholdsFor(size)?.gdr }).toEqual({ size, gdr: true });
      expect(healthPlan(specOf({ vmSize: size, nodes: 2 }), size, [...HEALTH_CHECKS]).checks).toContain('gdr');
    }
    expect(healthPlan(specOf(HB), HB.vmSize, [...HEALTH_CHECKS]).checks).not.toContain('gdr');
    expect(healthPlan(specOf(ND, { health: { skip: ['gdr'] } }), ND.vmSize, [...HEALTH_CHECKS]).checks).not.toContain('gdr');
  });

  it('judges the module loaded, missing, and a node without lsmod (recorded, not judged)', () => {
    const plan = healthPlan(specOf(ND), ND.vmSize, ['gdr']);
    const judge = (text: string) => judgeHealth([parseHealthLine(text)!], plan)[0];
    expect(judge('health gdr peermem nvidia_peermem')).toMatchObject({ check: 'gdr', ok: true, measured: 'peer memory nvidia_peermem' });
    expect(judge('health gdr peermem memory_peers')).toMatchObject({ ok: true });
    expect(judge('health gdr none')).toMatchObject({
      ok: false,
      threshold: 'nvidia_peermem or nv_peer_mem loaded',
      source: expect.stringContaining('conf/nd96asr_v4.conf check_ib_bw_gdr'),
    });
    expect(judge('health gdr notool=lsmod')).toMatchObject({ ok: true, skipped: 'lsmod not on the node' });
  });

  it("the emulator's gdrMissing fault on n1 fails exactly n1, with what was measured", () => {
    // The machine running the test must not have the peer-memory ABI itself (it would answer for every node).
    if (existsSync('/sys/kernel/mm/memory_peers')) return;
    writeFileSync(
      path.join(dir, 'hardware'),
      [hardwareLine('10.9.0.1', nodeHardware(ND.vmSize, undefined)), hardwareLine('10.9.0.2', nodeHardware(ND.vmSize, { gdrMissing: true }))].join('\n') + '\n',
    );
    const spec = specOf(ND);
    const verdict = runProbe(dir, spec, ND.vmSize, NODES, ['gdr']);
    expect(verdict.outliers).toEqual(['n1']);
    expect(verdict.nodes.n0.health?.map((h) => [h.check, h.ok, h.measured])).toEqual([['gdr', true, 'peer memory nvidia_peermem']]);
    expect(verdict.nodes.n1.problems).toEqual([
      'health gdr: measured no peer-memory module (nvidia_peermem / nv_peer_mem not loaded), threshold nvidia_peermem or nv_peer_mem loaded (AzNHC v0.4.5 conf/nd96asr_v4.conf check_ib_bw_gdr (azure_gdr_detect.nhc))',
    ]);
  });
});

describe('link flaps in the last 24 h', () => {
  const iso = (msAgo: number) => new Date(Date.now() - msAgo).toISOString().replace('Z', '+00:00');
  const traditional = (msAgo: number) => {
    const d = new Date(Date.now() - msAgo);
    const mon = d.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' });
    return `${mon} ${String(d.getUTCDate()).padStart(2, ' ')} ${d.toISOString().slice(11, 19)}`;
  };
  const HOUR = 3_600_000;

  it('counts only the lost-carrier events of ib devices within the window, in both syslog time formats', () => {
    writeFileSync(path.join(dir, 'hardware'), hardwareLine('10.9.0.1', nodeHardware(HB.vmSize, undefined)) + '\n');
    const lines = [
      // 12 old flaps (two days and a month ago): would fail the node if counted.
      ...Array.from({ length: 10 }, (_, i) => `${iso(48 * HOUR + i * 1000)} node kernel: [1.0] mlx5_core 0000:00:02.0 ib0: Lost carrier`),
      `${iso(30 * 24 * HOUR)} node kernel: ib0: Lost carrier`,
      `${traditional(26 * HOUR)} node kernel: ib0: Lost carrier`,
      // 3 recent ones, one in the traditional format; an Ethernet flap that is not counted.
      `${iso(1 * HOUR)} node kernel: ib0: Lost carrier`,
      `${iso(2 * HOUR)} node kernel: ib1: lost carrier`,
      `${traditional(3 * HOUR)} node kernel: ib0: Lost carrier`,
      `${iso(1 * HOUR)} node kernel: eth0: Lost carrier`,
    ];
    writeFileSync(path.join(dir, 'syslog'), lines.join('\n') + '\n');
    const spec = specOf(HB);
    const verdict = runProbe(dir, spec, HB.vmSize, [NODES[0]], ['linkflap'], { MJPF_SYSLOG: path.join(dir, 'syslog'), TZ: 'UTC' });
    expect(verdict.outliers).toEqual([]);
    expect(verdict.nodes.n0.health).toEqual([
      expect.objectContaining({
        check: 'linkflap',
        ok: true,
        measured: '3 lost-carrier events',
        threshold: `< 5 in the last ${LINK_FLAP_WINDOW_HOURS} h of syslog`,
      }),
    ]);
  });

  it('fails a node with 5 flaps within the window', () => {
    writeFileSync(path.join(dir, 'hardware'), hardwareLine('10.9.0.1', nodeHardware(HB.vmSize, undefined)) + '\n');
    writeFileSync(path.join(dir, 'syslog'), Array.from({ length: 5 }, (_, i) => `${iso((i + 1) * HOUR)} node kernel: ib0: Lost carrier`).join('\n') + '\n');
    const verdict = runProbe(dir, specOf(HB), HB.vmSize, [NODES[0]], ['linkflap'], { MJPF_SYSLOG: path.join(dir, 'syslog'), TZ: 'UTC' });
    expect(verdict.nodes.n0.problems).toEqual([
      expect.stringMatching(/^health linkflap: measured 5 lost-carrier events, threshold < 5 in the last 24 h of syslog/),
    ]);
  });
});

describe('the site script finds `files` on every node', () => {
  it("runs in the task's working directory of each node, not in the ssh session's home", () => {
    writeFileSync(path.join(dir, 'hardware'), NODES.map((n) => hardwareLine(n.ipAddress, nodeHardware(HB.vmSize, undefined))).join('\n') + '\n');
    // What `files` puts on every node: a script in the working directory (the nodes share the root here, as on Azure
    // every node's is /mnt/batch/tasks).
    writeFileSync(path.join(dir, 'wd', 'nodecheck.sh'), '#!/bin/bash\necho "checked $(basename "$PWD")"\n');
    chmodSync(path.join(dir, 'wd', 'nodecheck.sh'), 0o755);
    mkdirSync(path.join(dir, 'home'));
    const spec = specOf({ vmSize: 'Standard_D8s_v5', nodes: 2 }, { pingPong: { enabled: false }, siteCheck: { script: './nodecheck.sh' } });
    // A real ssh session starts in the user's home directory.
    const verdict = runProbe(dir, spec, 'Standard_D8s_v5', NODES, ['site'], { HOME: path.join(dir, 'home') }, true);
    expect(verdict.outliers).toEqual([]);
    expect(NODES.map((n) => verdict.nodes[n.id].health?.map((h) => h.measured))).toEqual([['exit 0: checked wd'], ['exit 0: checked wd']]);
  });
});

describe('docker jobs: the health checks run on the host', () => {
  const DOCKER = { runtime: 'docker', images: ['contoso.azurecr.io/app:1'] };
  it('puts the checks in the coordination step (the host) and has the probe in the container read their lines', () => {
    const spec = specOf(HB, { pingPong: { enabled: false }, siteCheck: { image: 'contoso.azurecr.io/nodecheck:1' } }, DOCKER);
    const t = preflightTaskRequest(planJob('hg', spec), spec, [NODES[0]], 'hpc-hg', 'preflight-1-1', undefined, ['ib', 'stream', 'site']);
    expect(t.coordinationCommandLine).toContain('mjpf_hh health:ib health:stream siteimage:U:');
    // The coordination step runs before `docker run` (the container is started after the checks).
    expect(t.coordinationCommandLine.indexOf('mjpf_hh health:ib')).toBeLessThan(t.coordinationCommandLine.indexOf('docker run -d --name'));
    // The probe in the container is given only `hosthealth` (the case arms of every check are in its function).
    expect(t.applicationCommandLine).toContain('"taskwd:$PWD" hosthealth)');
    expect(t.applicationCommandLine).not.toMatch(/mjpf_args=[^;]*health:ib/);
  });

  it("the host's lines reach the verdict: a slow link measured on the host fails the node", () => {
    writeFileSync(path.join(dir, 'hardware'), hardwareLine('10.9.0.1', nodeHardware(HB.vmSize, { ibRateGbps: 100 })) + '\n');
    const env = {
      PATH: `${NODE_IMAGE_BIN_DIR}:/usr/bin:/bin`,
      AZ_BATCH_EMULATOR_HARDWARE: path.join(dir, 'hardware'),
      AZ_BATCH_EMULATOR_NODE_IP: '10.9.0.1',
      AZ_BATCH_NODE_ROOT_DIR: dir,
    };
    // The host (coordination step, in the working directory) ...
    const host = spawnSync('bash', ['-c', hostHealthScript(['health:ib', 'health:stream'])], { cwd: `${dir}/wd`, env, encoding: 'utf8' });
    expect(host.status).toBe(0);
    // ... then the probe where the tools are not (the container: no emulated tools on PATH).
    const probe = preflightMasterScript({
      health: ['hosthealth'],
      sshPort: 23,
      maxSshMs: 5000,
      requiredPaths: [],
      pingPong: false,
      openmpi: true,
      launcher: 'mpirun',
    });
    const r = spawnSync('bash', ['-c', probe], { cwd: `${dir}/wd`, env: { ...env, PATH: '/usr/bin:/bin', AZ_BATCH_HOST_LIST: '10.9.0.1' }, encoding: 'utf8' });
    const spec = specOf(HB, { pingPong: { enabled: false } }, DOCKER);
    const verdict = evaluatePreflight(
      { exitCode: r.status ?? undefined, report: parsePreflightOutput(r.stdout) },
      [NODES[0]],
      preflightThresholds(spec, HB.vmSize, true, ['ib', 'stream']),
    );
    expect(verdict.nodes.n0.health?.map((h) => [h.check, h.ok, h.measured])).toEqual([
      ['ib', false, 'Active/LinkUp, 100 Gb/s'],
      ['stream', true, '336,000 MB/s (Copy, the lowest of 4)'],
    ]);
  });

  it('a missing host file is no answer (fails), not a skip', () => {
    const probe = preflightMasterScript({
      health: ['hosthealth'],
      sshPort: 23,
      maxSshMs: 5000,
      requiredPaths: [],
      pingPong: false,
      openmpi: true,
      launcher: 'mpirun',
    });
    const r = spawnSync('bash', ['-c', probe], {
      cwd: `${dir}/wd`,
      env: { PATH: '/usr/bin:/bin', AZ_BATCH_HOST_LIST: '10.9.0.1', AZ_BATCH_NODE_ROOT_DIR: dir },
      encoding: 'utf8',
    });
    const spec = specOf(HB, { pingPong: { enabled: false } }, DOCKER);
    const verdict = evaluatePreflight(
      { exitCode: r.status ?? undefined, report: parsePreflightOutput(r.stdout) },
      [NODES[0]],
      preflightThresholds(spec, HB.vmSize, true, ['ib']),
    );
    expect(verdict.nodes.n0.health).toEqual([expect.objectContaining({ check: 'ib', ok: false, measured: 'no answer' })]);
  });
});
