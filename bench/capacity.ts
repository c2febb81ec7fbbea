/**
 * Capacity model of a real deployment (issue 30 items 2 and 3, docs/capacity.md): a discrete-event simulation that
 * drives the project's own planners and decisions (bench/lib/capacity/jobModel.ts, dayModel.ts) with Azure-documented
 * inputs (bench/lib/capacity/azureInputs.ts), checked against this machine's benches (bench/capacity-calibration.json),
 * and the control plane's own cost per job (CPU-seconds measured here on the local host, priced by
 * shared/core/ops/controlPlaneCost.ts).
 * Run: npm run bench -- capacity      node --import tsx bench/capacity.ts [--cpu-runs 1] [--measure-cpu yes|no] [--jobs 1000]
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { numberArg, textArg } from './lib/args';
import { printGoal } from './lib/goal';
import { simulateJob, type JobDesign, type JobFigures, type JobInputs } from './lib/capacity/jobModel';
import { simulateDay } from './lib/capacity/dayModel';
import { AZURE_DAY, AZURE_JOB, IMAGE_BYTES, ONE_TB } from './lib/capacity/azureInputs';
import { CONSERVATIVE_ACCOUNT_LIMITS } from '../shared/core/planning/stagingModel';
import { controlPlaneCost, estimateControlPlaneUsage } from '../shared/core/ops/controlPlaneCost';
import { CONTROL_PLANE_PRICES } from '../shared/core/ops/controlPlanePrices';
import { DEFAULT_PRICES_PER_HOUR } from '../shared/core/config/priceTable';
import { HB_NODE } from './lib/capacity/azureInputs';

/** `--measure-cpu no` skips the local run (the model alone takes a second). */
const CPU_RUNS = textArg('measure-cpu', 'yes') === 'no' ? 0 : numberArg('cpu-runs', 1);
const JOBS = numberArg('jobs', 1000);
const MiB = 1024 * 1024;

const DESIGNS: (JobDesign & { label: string })[] = [
  { label: 'sequential + window(10)', staging: 'sequential', distribution: 'window' },
  { label: 'sequential + tree', staging: 'sequential', distribution: 'tree' },
  { label: 'overlapped + window(10)', staging: 'overlapped', distribution: 'window' },
  { label: 'overlapped + tree', staging: 'overlapped', distribution: 'tree' },
];

const pad = (s: string | number, n: number) => String(s).padEnd(n);
const min = (s: number) => `${(s / 60).toFixed(1)} min`;

function oneJob(): void {
  console.log('## 100 nodes, 1 TB input, 10 GB image (HB120rs_v3, Azure inputs)\n');
  console.log(
    `${pad('design', 26)}${pad('submit→MPI', 13)}${pad('idle node-min', 15)}${pad('registry GB', 13)}${pad('pulls', 7)}${pad('images', 10)}${pad('copy', 10)}bottlenecks`,
  );
  const out = new Map<string, JobFigures>();
  for (const d of DESIGNS) {
    const f = simulateJob({ ...AZURE_JOB, nodes: 100, inputBytes: ONE_TB, imageBytes: IMAGE_BYTES }, d);
    out.set(d.label, f);
    const img = f.phases.images.end - f.phases.images.start;
    const copy = f.phases.copy.end - f.phases.copy.start;
    console.log(
      `${pad(d.label, 26)}${pad(min(f.submitToMpiS), 13)}${pad(f.idleNodeMinutes.toFixed(0), 15)}${pad((f.registryBytes / 1e9).toFixed(0), 13)}${pad(f.registryPulls, 7)}${pad(min(img), 10)}${pad(min(copy), 10)}copy: ${f.copyBottleneck}, downloads: ${f.downloadBottleneck}`,
    );
  }
  const base = out.get('sequential + window(10)')!;
  const best = out.get('overlapped + tree')!;
  console.log();
  printGoal({ name: 'capacity-idle-100n-1tb', measured: best.idleNodeMinutes / base.idleNodeMinutes, target: 0.5, compare: '<=' });
  console.log();
}

interface Calibration {
  overlap: Record<string, number> & { targets: Record<'sequential' | 'overlapped', { submitToMpiS: number; idleNodeMinutes: number }> };
  stagger: Record<string, number> & { targets: Record<string, Record<'window' | 'tree', number>> };
  measuredOn: string;
}

function calibration(): void {
  const cal = JSON.parse(readFileSync(path.join(__dirname, 'capacity-calibration.json'), 'utf8')) as Calibration;
  console.log(`## Calibration against the local benches (inputs: bench/capacity-calibration.json, measured ${cal.measuredOn})\n`);
  const o = cal.overlap;
  const local: Omit<JobInputs, 'nodes' | 'inputBytes' | 'imageBytes'> = {
    inputFileBytes: 3_000_000, // bench/overlap.ts uploads 100 files for its input
    intakeS: o.intakeS,
    allocationFirstS: o.allocationFirstS,
    allocationLastS: o.allocationLastS,
    poll: { baseMs: o.pollInitialMs, maxMs: o.pollMaxMs, factor: 2 },
    registryBps: 1e12,
    perPullBps: 1e12,
    pullOverheadS: o.pullOverheadS,
    peerBps: 4 * MiB,
    peerOverheadS: 2.5,
    copyS: o.copyS,
    copyOverheadS: 0,
    stagingAccounts: 4,
    accountLimits: CONSERVATIVE_ACCOUNT_LIMITS,
    nodeBps: 1e12,
    downloadOverheadS: 0,
    downloadS: o.downloadS,
    preflightS: o.preflightS,
    mpiStartS: o.mpiStartS,
    pullConcurrency: 10,
  };
  const rows: { what: string; model: number; measured: number }[] = [];
  for (const staging of ['sequential', 'overlapped'] as const) {
    const f = simulateJob({ ...local, nodes: o.nodes, inputBytes: o.inputBytes, imageBytes: o.imageMiB * MiB }, { staging, distribution: 'window' });
    rows.push({ what: `overlap 12 nodes, ${staging}: submit→MPI s`, model: f.submitToMpiS, measured: o.targets[staging].submitToMpiS });
    rows.push({ what: `overlap 12 nodes, ${staging}: idle node-min`, model: f.idleNodeMinutes, measured: o.targets[staging].idleNodeMinutes });
  }
  const s = cal.stagger;
  for (const nodes of Object.keys(s.targets)) {
    for (const distribution of ['window', 'tree'] as const) {
      const f = simulateJob(
        {
          ...local,
          nodes: Number(nodes),
          inputBytes: 0,
          imageBytes: s.imageMiB * MiB,
          allocationFirstS: 0,
          allocationLastS: 0,
          registryBps: s.registryMiBps * MiB,
          pullOverheadS: s.pullOverheadS,
          peerBps: s.peerMiBps * MiB,
          peerOverheadS: s.peerOverheadS,
          poll: { baseMs: s.pollInitialMs, maxMs: s.pollMaxMs, factor: 2 },
        },
        { staging: 'sequential', distribution },
      );
      rows.push({ what: `stagger ${nodes} nodes, ${distribution}: ready s`, model: f.imagesReadyS, measured: s.targets[nodes][distribution] });
    }
  }
  let worst = 0;
  console.log(`${pad('figure', 46)}${pad('model', 9)}${pad('measured', 10)}error`);
  for (const r of rows) {
    const err = Math.abs(r.model - r.measured) / r.measured;
    worst = Math.max(worst, err);
    console.log(`${pad(r.what, 46)}${pad(r.model.toFixed(2), 9)}${pad(r.measured.toFixed(2), 10)}${(err * 100).toFixed(1)}%`);
  }
  console.log();
  printGoal({ name: 'capacity-calibration', measured: worst, target: 0.25, compare: '<=' });
  console.log();
}

function day(): void {
  console.log(
    `## A day of ${JOBS} mixed jobs (${AZURE_DAY.classes.map((c) => `${c.share}% ${c.nodes} nodes/${c.inputBytes / 1e9} GB`).join(', ')}; ${AZURE_DAY.burstShare * 100}% in one burst at 09:00)\n`,
  );
  const days = DESIGNS.map((d) => ({ d, f: simulateDay({ ...AZURE_DAY, jobs: JOBS }, AZURE_JOB, d) }));
  console.log(`${pad('design', 26)}${pad('admission wait mean', 21)}${pad('submit→MPI mean', 17)}${pad('idle node-hours', 17)}registry TB`);
  for (const { d, f } of days) {
    console.log(
      `${pad(d.label, 26)}${pad(min(f.waitForAdmissionS.mean), 21)}${pad(min(f.submitToMpiS.mean), 17)}${pad((f.idleNodeMinutes / 60).toFixed(0), 17)}${(f.registryBytes / 1e12).toFixed(2)}`,
    );
  }
  console.log();
  for (const { d, f } of [days[0], days[3]]) {
    console.log(`### ${d.label}`);
    console.log(
      `admission wait: mean ${min(f.waitForAdmissionS.mean)}, p95 ${min(f.waitForAdmissionS.p95)}, max ${min(f.waitForAdmissionS.max)} (core quota ${AZURE_DAY.limits.coreQuota.total}, peak in use ${f.peakCoresInUse})`,
    );
    console.log(
      `submit→MPI after admission: mean ${min(f.submitToMpiS.mean)}, p95 ${min(f.submitToMpiS.p95)}; billed idle before MPI ${(f.idleNodeMinutes / 60).toFixed(0)} node-hours; registry ${(f.registryBytes / 1e12).toFixed(2)} TB`,
    );
    console.log(`${pad('service', 50)}${pad('peak/s', 12)}${pad('target/s', 12)}${pad('use', 8)}then`);
    for (const l of [...f.loads].sort((a, b) => b.utilization - a.utilization)) {
      const bytes = (v: number) => (l.service.includes('bytes') ? `${(v / 1e6).toFixed(0)} MB` : v.toFixed(1));
      const lim = Number.isFinite(l.limitPerSecond) ? bytes(l.limitPerSecond) : 'unpublished';
      console.log(
        `${pad(l.service, 50)}${pad(bytes(l.peakPerSecond), 12)}${pad(lim, 12)}${pad(Number.isFinite(l.limitPerSecond) ? `${(l.utilization * 100).toFixed(1)}%` : '–', 8)}${l.then}`,
      );
    }
    console.log(
      `first limit: ${f.quotaBound ? `the core quota (${AZURE_DAY.limits.coreQuota.total} cores): jobs wait in the admission queue, in order, with their position shown` : 'no quota wait'}; first rate limit: ${f.firstRateLimit.service}, reached at ${f.firstRateLimit.atLoadFactor.toFixed(1)}× this day's load\n`,
    );
  }
}

async function cpuPerJob(): Promise<number | undefined> {
  if (CPU_RUNS < 1) return undefined;
  // The Functions host, the Durable engine and the Batch emulator's HTTP side run in this process (Azurite and the nodes'
  // processes are children): process.cpuUsage around a job is the host's CPU plus the emulator's, an upper bound.
  const { startStack, REPO_ROOT } = await import('../local/stack');
  const { submitSpec, uploadDemoInputs, watchJob } = await import('../local/jobRunner');
  const { parse, stringify } = await import('yaml');
  const stack = await startStack({ port: 0, logLevel: 'warn' });
  try {
    await uploadDemoInputs(stack, 20);
    const text = readFileSync(path.join(REPO_ROOT, 'examples', 'demo', 'native-openmpi.yaml'), 'utf8');
    const samples: number[] = [];
    for (let r = 0; r < CPU_RUNS; r++) {
      const spec = parse(text) as Record<string, unknown>;
      spec.id = `bench-capacity-cpu-${r}`;
      const before = process.cpuUsage();
      await submitSpec(stack, stringify(spec));
      const view = await watchJob(stack, String(spec.id), 600_000);
      if (view.state !== 'Succeeded') throw new Error(`job ${String(spec.id)} ended ${view.state}`);
      const d = process.cpuUsage(before);
      samples.push((d.user + d.system) / 1e6);
    }
    return samples.reduce((s, x) => s + x, 0) / samples.length;
  } finally {
    await stack.stop();
  }
}

async function controlPlane(): Promise<void> {
  console.log('## Control-plane cost per job\n');
  const measured = await cpuPerJob();
  if (measured !== undefined)
    console.log(`measured: ${measured.toFixed(2)} CPU-s of the local host (+ in-process emulator) per 4-node native demo job (mean of ${CPU_RUNS})`);
  console.log(`prices: ${CONTROL_PLANE_PRICES.source} (as of ${CONTROL_PLANE_PRICES.asOf}${CONTROL_PLANE_PRICES.fallback ? ', dated fallback' : ''})\n`);
  const nodePrice = DEFAULT_PRICES_PER_HOUR[HB_NODE.vmSize];
  console.log(
    `${pad('job', 30)}${pad('CPU-s', 8)}${pad('executions', 12)}${pad('storage tx', 12)}${pad('control plane', 16)}nodes (${HB_NODE.vmSize} at ${nodePrice} USD/h, builtin price table)`,
  );
  for (const [label, nodes, minutes] of [
    ['4 nodes, 30 min', 4, 45],
    ['16 nodes, 1 h', 16, 75],
    ['100 nodes, 4 h', 100, 270],
  ] as const) {
    const u = estimateControlPlaneUsage({ nodes, minutes });
    const c = controlPlaneCost(u);
    const tx = u.storage.table + u.storage.queue + u.storage.blobRead + u.storage.blobWrite;
    const nodeCost = (nodes * minutes * nodePrice) / 60;
    console.log(
      `${pad(label, 30)}${pad(u.cpuSeconds.toFixed(1), 8)}${pad(u.executions.toFixed(0), 12)}${pad(tx.toFixed(0), 12)}${pad(`${c.total.toFixed(5)} ${c.currency}`, 16)}${nodeCost.toFixed(2)} USD (${((c.total / nodeCost) * 1e6).toFixed(1)} ppm)`,
    );
  }
  if (measured !== undefined) {
    const c = controlPlaneCost({ ...estimateControlPlaneUsage({ nodes: 4, minutes: 1 }), cpuSeconds: measured });
    console.log(
      `\nthe measured local job priced the same way: ${c.total.toFixed(6)} ${c.currency} (compute ${c.compute.toFixed(6)}, executions ${c.executions.toFixed(6)}, storage ${c.storage.toFixed(6)})`,
    );
  }
  console.log();
}

async function main(): Promise<void> {
  oneJob();
  calibration();
  day();
  await controlPlane();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
