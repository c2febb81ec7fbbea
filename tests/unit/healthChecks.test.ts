/**
 * The node health checks (docs/pipeline.md "Node health checks"): the per-size thresholds (AzNHC's figures), which
 * checks a job runs, the judging of each node's figures, the refusal of a privileged site check, the deployment
 * setting, the timeline's replacement notes read back; and the probe run for real under bash with the emulator's
 * hardware tools (local/batch/nodeimage/bin) on PATH, so a modelled slow link, down port or low STREAM fails exactly
 * that node with the measured figure and the threshold.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { planJob } from '../../shared/core/planning/jobPlan';
import { healthThresholdsFor } from '../../shared/core/planning/healthThresholds';
import { healthPlan, judgeHealth, parseHealthLine } from '../../shared/core/planning/health';
import { evaluatePreflight, parsePreflightOutput, preflightTaskRequest, preflightThresholds } from '../../shared/core/planning/preflight';
import { healthProbeArgs } from '../../shared/core/mpi/healthProbe';
import { healthChecksSetting, loadConfig } from '../../shared/adapters/config';
import { checkContainerPolicy } from '../../shared/core/intake/containerPolicy';
import { nodeReplacements, replacementLine } from '../../shared/core/contract/nodeReplacements';
import { HEALTH_CHECKS } from '../../shared/core/spec/sections/preflight';
import { hardwareLine, nodeHardware } from '../../local/batch/model/hardware';
import { NODE_IMAGE_BIN_DIR } from '../../local/batch/runner/env';
import { smallSpec } from '../ops/helpers';

const ALL = [...HEALTH_CHECKS];

function specOf(pool: Record<string, unknown>, preflight?: Record<string, unknown>): JobSpec {
  const text = smallSpec('hc', { command: 'app', pool }) + (preflight ? `preflight: ${JSON.stringify(preflight)}\n` : '');
  const parsed = parseJobSpec(text, 'application/yaml');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.spec;
}
const HB = { vmSize: 'Standard_HB120rs_v3', nodes: 3 };

describe('per-size thresholds (AzNHC v0.4.5 conf files)', () => {
  it('carries the figures of the conf files, each with its source', () => {
    expect(healthThresholdsFor('Standard_HB120rs_v3')).toEqual({
      source: 'conf/hb120rs_v3.conf',
      cpus: 120,
      memKB: 470_543_164,
      memTolerancePct: 3,
      ib: { ports: ['mlx5_ib0:1'], rateGbps: 200 },
      ibWriteGbps: 190,
      streamMBps: 320_000,
      linkFlaps: 5,
    });
    expect(healthThresholdsFor('standard_hb176rs_v4')).toMatchObject({ cpus: 176, ib: { rateGbps: 400 }, ibWriteGbps: 390, streamMBps: 665_500 });
    expect(healthThresholdsFor('Standard_HC44rs')).toMatchObject({ memKB: 354_691 * 1024, memTolerancePct: 4, ibWriteGbps: 95 });
    expect(healthThresholdsFor('Standard_HC44rs')?.streamMBps).toBeUndefined();
    expect(healthThresholdsFor('Standard_ND96isr_H100_v5')).toMatchObject({ gpus: 8, ib: { ports: expect.arrayContaining(['mlx5_ib7:1']), rateGbps: 400 } });
    expect(healthThresholdsFor('Standard_D8s_v5')).toBeUndefined();
  });
});

describe('which checks a job runs', () => {
  it("the size's checks the deployment runs, less the spec's skips; the site check when there is one", () => {
    expect(healthPlan(specOf(HB), HB.vmSize, ALL).checks).toEqual(['cpu', 'memory', 'ib', 'ibbw', 'stream', 'linkflap']);
    expect(healthPlan(specOf(HB), HB.vmSize, ['ib', 'ibbw', 'stream']).checks).toEqual(['ib', 'ibbw', 'stream']);
    expect(healthPlan(specOf(HB, { health: { skip: ['stream', 'cpu'] } }), HB.vmSize, ALL).checks).toEqual(['memory', 'ib', 'ibbw', 'linkflap']);
    expect(healthPlan(specOf(HB, { health: { enabled: false }, siteCheck: { script: 'true' } }), HB.vmSize, ALL).checks).toEqual(['site']);
    expect(healthPlan(specOf({ vmSize: 'Standard_D8s_v5', nodes: 2 }), 'Standard_D8s_v5', ALL).checks).toEqual([]);
    expect(healthPlan(specOf({ vmSize: 'Standard_ND96isr_H100_v5', nodes: 2 }), 'Standard_ND96isr_H100_v5', ALL).checks).toEqual([
      'cpu',
      'memory',
      'ib',
      'gpu',
      'gdr',
      'linkflap',
    ]);
    // Older runs (no setting): nothing.
    expect(healthPlan(specOf(HB), HB.vmSize, []).checks).toEqual([]);
  });

  it('the spec refuses unknown checks and a site check with both or neither of script and image', () => {
    const bad = (preflight: unknown) => {
      const r = parseJobSpec(smallSpec('hc', { command: 'app', pool: HB }) + `preflight: ${JSON.stringify(preflight)}\n`, 'application/yaml');
      return r.ok ? [] : r.errors.map((e) => e.path);
    };
    expect(bad({ health: { skip: ['fans'] } })).toEqual(['preflight.health.skip[0]']);
    expect(bad({ siteCheck: { script: 'x', image: 'y' } })).toEqual(['preflight.siteCheck']);
    expect(bad({ siteCheck: {} })).toEqual(['preflight.siteCheck']);
    expect(bad({ siteCheck: { script: 'x', privileged: true } })).toEqual(['preflight.siteCheck.privileged']);
    expect(bad({ siteCheck: { image: 'contoso.azurecr.io/nodecheck:1', privileged: true } })).toEqual([]);
  });

  it('a privileged site image only where the deployment allows privileged containers', () => {
    const spec = specOf(HB, { siteCheck: { image: 'contoso.azurecr.io/nodecheck:1', privileged: true } });
    const data = { accounts: [] } as unknown as Parameters<typeof checkContainerPolicy>[2];
    expect(checkContainerPolicy(spec, { allowPrivileged: false }, data).map((e) => e.path)).toContain('preflight.siteCheck.privileged');
    expect(checkContainerPolicy(spec, { allowPrivileged: true }, data).map((e) => e.path)).not.toContain('preflight.siteCheck.privileged');
  });

  it('PREFLIGHT_HEALTH_CHECKS: all by default, none, or a list; anything else refused with the setting named', () => {
    expect(healthChecksSetting(undefined)).toEqual(ALL);
    expect(healthChecksSetting('none')).toEqual([]);
    expect(healthChecksSetting('stream, ib')).toEqual(['ib', 'stream']);
    const base = {
      BATCH_ACCOUNT_URL: 'https://batch.invalid',
      BATCH_ACCOUNT_NAME: 'batch',
      AzureWebJobsStorage__accountName: 'host',
      STAGING_ACCOUNTS: 'staging',
    };
    expect(loadConfig({ ...base, PREFLIGHT_HEALTH_CHECKS: 'ib,ibbw' }).pipeline.preflightHealthChecks).toEqual(['ib', 'ibbw']);
    expect(() => loadConfig({ ...base, PREFLIGHT_HEALTH_CHECKS: 'ib,fans' })).toThrow(/PREFLIGHT_HEALTH_CHECKS/);
  });
});

describe("judging a node's figures", () => {
  const plan = healthPlan(specOf(HB, { siteCheck: { script: 'true' } }), HB.vmSize, ALL);
  const lines = (...text: string[]) => text.map((t) => parseHealthLine(t)!);
  const healthy = [
    'health cpu 120',
    'health memory 470000000',
    'health ib mlx5_ib0:1 Active LinkUp 200',
    'health ibbw mlx5_ib0 196.5',
    'health stream Copy=330000.0 Scale=331000.0 Add=335000.0 Triad=336000.0',
    'health linkflap 0',
    'health site 0 ok',
  ];

  it('a healthy HBv3 node passes every check', () => {
    const r = judgeHealth(lines(...healthy), plan);
    expect(r.map((x) => [x.check, x.ok])).toEqual([
      ['cpu', true],
      ['memory', true],
      ['ib', true],
      ['ibbw', true],
      ['stream', true],
      ['linkflap', true],
      ['site', true],
    ]);
  });

  it('a slow link, a down port, low STREAM, missing memory and a failing site check: each with measured vs threshold', () => {
    const slow = judgeHealth(
      lines(...healthy.filter((l) => !/ib|ibbw/.test(l.split(' ')[1])), 'health ib mlx5_ib0:1 Active LinkUp 100', 'health ibbw mlx5_ib0 97.5'),
      plan,
    ).filter((x) => !x.ok);
    expect(slow).toEqual([
      {
        check: 'ib',
        device: 'mlx5_ib0:1',
        ok: false,
        measured: 'Active/LinkUp, 100 Gb/s',
        threshold: 'Active/LinkUp, ≥ 200 Gb/s',
        source: 'AzNHC v0.4.5 conf/hb120rs_v3.conf check_hw_ib',
      },
      {
        check: 'ibbw',
        device: 'mlx5_ib0',
        ok: false,
        measured: '97.5 Gb/s',
        threshold: '≥ 190 Gb/s (ib_write_bw loopback, 1 MiB)',
        source: 'AzNHC v0.4.5 conf/hb120rs_v3.conf check_ib_bw_non_gdr',
      },
    ]);
    const down = judgeHealth(lines('health ib mlx5_ib0:1 Down Polling 10', 'health ibbw mlx5_ib0 failed'), plan).filter((x) => !x.ok);
    expect(down.map((x) => x.measured)).toEqual(expect.arrayContaining(['Down/Polling, 10 Gb/s', 'ib_write_bw failed']));
    const mem = judgeHealth(
      lines('health stream Copy=150000.0 Scale=151000.0 Add=160000.0 Triad=155000.0', 'health memory 400000000', 'health site 3 /scratch is not mounted'),
      plan,
    ).filter((x) => !x.ok);
    expect(mem.find((x) => x.check === 'stream')).toMatchObject({
      measured: '150,000 MB/s (Copy, the lowest of 4)',
      threshold: '≥ 320,000 MB/s each of Copy, Scale, Add, Triad',
    });
    expect(mem.find((x) => x.check === 'memory')).toMatchObject({ measured: '400,000,000 kB', threshold: '≥ 456,426,869 kB (470,543,164 kB − 3%)' });
    expect(mem.find((x) => x.check === 'site')).toMatchObject({ measured: 'exit 3: /scratch is not mounted', threshold: 'exit 0' });
    // A check that ran and printed nothing fails; an InfiniBand size with no port fails the port count.
    expect(judgeHealth(lines('health ib none'), plan).filter((x) => x.check === 'ib')).toEqual([
      expect.objectContaining({ ok: false, measured: '0 InfiniBand port(s)', threshold: '1 (mlx5_ib0:1)' }),
    ]);
    expect(judgeHealth([], plan).every((x) => !x.ok && x.measured === 'no answer')).toBe(true);
  });

  it('a tool the node lacks is recorded, not judged', () => {
    const r = judgeHealth(lines('health stream notool=stream', 'health ib notool=ibstat'), plan);
    expect(r.filter((x) => x.check === 'stream' || x.check === 'ib')).toEqual([
      { check: 'ib', ok: true, measured: 'not measured', skipped: 'ibstat not on the node' },
      { check: 'stream', ok: true, measured: 'not measured', skipped: 'stream not on the node' },
    ]);
  });
});

describe("the probe under bash with the emulator's hardware tools", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'hc-'));
    mkdirSync(path.join(dir, 'bin'));
    mkdirSync(path.join(dir, 'wd'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const NODES = [
    { id: 'n0', ipAddress: '10.9.0.1' },
    { id: 'n1', ipAddress: '10.9.0.2' },
    { id: 'n2', ipAddress: '10.9.0.3' },
  ];

  it('a slow link on n1 and low memory bandwidth on n2 fail exactly those nodes, with measured vs threshold', () => {
    writeFileSync(
      path.join(dir, 'hardware'),
      [
        hardwareLine('10.9.0.1', nodeHardware(HB.vmSize, undefined)),
        hardwareLine('10.9.0.2', nodeHardware(HB.vmSize, { ibRateGbps: 100 })),
        hardwareLine('10.9.0.3', nodeHardware(HB.vmSize, { streamMBps: 150_000 })),
      ].join('\n') + '\n',
    );
    // ssh runs the command here as that node (its IP is what the emulated tools look themselves up by).
    writeFileSync(
      path.join(dir, 'bin', 'ssh'),
      `#!/bin/bash\nwhile [ $# -gt 0 ]; do case "$1" in -o|-p) shift 2 ;; -*) shift ;; *) break ;; esac; done\nh="$1"; shift\nAZ_BATCH_EMULATOR_NODE_IP=$h exec bash -c "$*"\n`,
    );
    chmodSync(path.join(dir, 'bin', 'ssh'), 0o755);
    const spec = specOf(HB, { pingPong: { enabled: false } });
    const checks = ['ib', 'ibbw', 'stream'];
    const t = preflightTaskRequest(planJob('hc', spec), spec, NODES, 'hpc-hc', 'preflight-1-1', undefined, checks);
    const script = execFileSync('bash', ['-c', `set -- ${t.applicationCommandLine.replace(/^\/bin\/bash -c /, '')}; printf '%s' "$1"`], { encoding: 'utf8' });
    const env = {
      PATH: `${dir}/bin:${NODE_IMAGE_BIN_DIR}:/usr/bin:/bin`,
      HOME: dir,
      AZ_BATCH_HOST_LIST: NODES.map((n) => n.ipAddress).join(','),
      AZ_BATCH_TASK_WORKING_DIR: `${dir}/wd`,
      AZ_BATCH_NODE_ROOT_DIR: dir,
      AZ_BATCH_EMULATOR_HARDWARE: path.join(dir, 'hardware'),
      AZ_BATCH_EMULATOR_NODE_IP: '10.9.0.1',
    };
    const r = spawnSync('bash', ['-c', script], { cwd: `${dir}/wd`, env, encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    const verdict = evaluatePreflight(
      { exitCode: r.status ?? undefined, report: parsePreflightOutput(r.stdout) },
      NODES,
      preflightThresholds(spec, HB.vmSize, true, checks),
    );
    expect(verdict.outliers).toEqual(['n1', 'n2']);
    expect(verdict.nodes.n0.health?.map((x) => [x.check, x.ok, x.measured])).toEqual([
      ['ib', true, 'Active/LinkUp, 200 Gb/s'],
      ['ibbw', true, '195 Gb/s'],
      ['stream', true, '336,000 MB/s (Copy, the lowest of 4)'],
    ]);
    expect(verdict.nodes.n1.problems).toEqual([
      'health ib mlx5_ib0:1: measured Active/LinkUp, 100 Gb/s, threshold Active/LinkUp, ≥ 200 Gb/s (AzNHC v0.4.5 conf/hb120rs_v3.conf check_hw_ib)',
      'health ibbw mlx5_ib0: measured 97.5 Gb/s, threshold ≥ 190 Gb/s (ib_write_bw loopback, 1 MiB) (AzNHC v0.4.5 conf/hb120rs_v3.conf check_ib_bw_non_gdr)',
    ]);
    expect(verdict.nodes.n2.problems).toEqual([
      'health stream: measured 150,000 MB/s (Copy, the lowest of 4), threshold ≥ 320,000 MB/s each of Copy, Scale, Add, Triad (AzNHC v0.4.5 conf/hb120rs_v3.conf check_cpu_stream)',
    ]);
  });

  it('a down port: ibstat shows it Down and ib_write_bw fails', () => {
    writeFileSync(path.join(dir, 'hardware'), hardwareLine('10.9.0.1', nodeHardware(HB.vmSize, { ibPortDown: true })) + '\n');
    const env = { PATH: `${NODE_IMAGE_BIN_DIR}:/usr/bin:/bin`, AZ_BATCH_EMULATOR_HARDWARE: path.join(dir, 'hardware'), AZ_BATCH_EMULATOR_NODE_IP: '10.9.0.1' };
    expect(spawnSync('ibstat', [], { env, encoding: 'utf8' }).stdout).toMatch(/State: Down\n\t\tPhysical state: Polling\n\t\tRate: 10\n/);
    expect(spawnSync('ib_write_bw', ['-d', 'mlx5_ib0', 'localhost'], { env, encoding: 'utf8' }).status).toBe(1);
  });

  it("the site check: a script's exit status and last line, passed through every quoting level", () => {
    const args = healthProbeArgs(['site'], { script: 'echo "it\'s $((1+2))"; echo "no /scratch" >&2; exit 3' });
    expect(args).toEqual([expect.stringMatching(/^site:[A-Za-z0-9+/=]+$/)]);
    expect(healthProbeArgs(['site'], { image: 'contoso.azurecr.io/check:1', privileged: true })).toEqual([
      `siteimage:P:${Buffer.from('contoso.azurecr.io/check:1').toString('base64')}`,
    ]);
    const spec = specOf(
      { vmSize: 'Standard_D8s_v5', nodes: 1 },
      { pingPong: { enabled: false }, siteCheck: { script: 'echo "it\'s $((1+2))"; echo "no /scratch" >&2; exit 3' } },
    );
    const t = preflightTaskRequest(planJob('hc', spec), spec, [NODES[0]], 'hpc-hc', 'p', undefined, ['site']);
    const script = execFileSync('bash', ['-c', `set -- ${t.applicationCommandLine.replace(/^\/bin\/bash -c /, '')}; printf '%s' "$1"`], { encoding: 'utf8' });
    const r = spawnSync('bash', ['-c', script], {
      cwd: dir,
      env: { PATH: '/usr/bin:/bin', AZ_BATCH_HOST_LIST: '10.9.0.1', AZ_BATCH_NODE_ROOT_DIR: dir },
      encoding: 'utf8',
      timeout: 60_000,
    });
    const verdict = evaluatePreflight(
      { exitCode: r.status ?? undefined, report: parsePreflightOutput(r.stdout) },
      [NODES[0]],
      preflightThresholds(spec, 'Standard_D8s_v5', true, ['site']),
    );
    expect(verdict.nodes.n0.problems).toEqual(['health site: measured exit 3: no /scratch, threshold exit 0 (preflight.siteCheck)']);
  });
});

describe('replacements on the timeline', () => {
  it('reads the replaced nodes and their reasons back, oldest first; other notes left out', () => {
    const timeline = [
      {
        at: '2026-11-27T10:05:00Z',
        kind: 'note',
        reason: 'preflight …',
        data: {
          kind: 'nodesReplaced',
          stage: 'StagingData',
          nodes: [{ node: 'n1', cause: 'preflight', reasons: ['health ib mlx5_ib0:1: measured Down/Polling, 10 Gb/s, threshold Active/LinkUp, ≥ 200 Gb/s'] }],
        },
      },
      {
        at: '2026-11-27T10:01:00Z',
        kind: 'note',
        reason: 'replacing …',
        data: { kind: 'nodesReplaced', stage: 'Provisioning', nodes: [{ node: 'n4', cause: 'startTask', reasons: ['node n4: start task exit 1'] }] },
      },
      { at: '2026-11-27T10:00:00Z', kind: 'transition', reason: 'submitted' },
      { at: '2026-11-27T10:02:00Z', kind: 'note', reason: 'old run', data: { replaced: ['n9'] } },
    ];
    expect(nodeReplacements(timeline).map(replacementLine)).toEqual([
      'n4 (startTask, Provisioning): node n4: start task exit 1',
      'n1 (preflight, StagingData): health ib mlx5_ib0:1: measured Down/Polling, 10 Gb/s, threshold Active/LinkUp, ≥ 200 Gb/s',
    ]);
  });
});
