/**
 * The node health checks' planning and verdict (docs/pipeline.md "Node health checks"): which checks a job's nodes run
 * (the VM size's AzNHC thresholds, the deployment's PREFLIGHT_HEALTH_CHECKS, the spec's skips and site check), and
 * each node's `health …` lines (shared/core/mpi/healthProbe.ts) judged against those thresholds. Pure.
 */
import type { HealthResult } from '../contract/preflight';
import type { HealthCheck } from '../spec/sections/preflight';
import type { JobSpec } from '../spec/schema';
import { AZNHC_TAG, LINK_FLAP_WINDOW_HOURS, healthThresholdsFor, type SizeHealthThresholds } from './healthThresholds';

export interface HealthPlan {
  checks: HealthCheck[];
  vmSize: string;
  thresholds?: SizeHealthThresholds;
}

/**
 * The checks a job's nodes run: of those the deployment runs (`deployment`), the ones the size has a threshold for
 * (an InfiniBand check on a size without InfiniBand, STREAM on a size AzNHC has no figure for, measure nothing worth
 * judging) minus the spec's skips; and the site's check when the spec has one. None when `preflight.health.enabled`
 * is false (the site check still runs: it is the site's, not the job's, to leave out).
 */
export function healthPlan(spec: JobSpec, vmSize: string, deployment: readonly string[]): HealthPlan {
  const th = healthThresholdsFor(vmSize);
  const health = spec.preflight.health;
  const applies: Record<HealthCheck, boolean> = {
    cpu: !!th,
    memory: !!th,
    ib: !!th?.ib,
    ibbw: th?.ibWriteGbps !== undefined,
    stream: th?.streamMBps !== undefined,
    gpu: th?.gpus !== undefined,
    gdr: th?.gdr === true,
    linkflap: th?.linkFlaps !== undefined && !!th.ib,
    site: spec.preflight.siteCheck !== undefined,
  };
  const checks = (Object.keys(applies) as HealthCheck[]).filter(
    (c) => applies[c] && deployment.includes(c) && (c === 'site' || (health.enabled && !health.skip.includes(c))),
  );
  return { checks, vmSize, ...(th ? { thresholds: th } : {}) };
}

/** One `health <check> <rest>` line of a node. */
export interface HealthLine {
  check: string;
  text: string;
}

const HEALTH_LINE = /^health ([a-z]+) ?(.*)$/;

/** A probe output line as a health line, or undefined. */
export function parseHealthLine(text: string): HealthLine | undefined {
  const m = HEALTH_LINE.exec(text);
  return m ? { check: m[1], text: m[2].trim() } : undefined;
}

const num = (s: string | undefined): number | undefined => (s !== undefined && /^-?\d+(\.\d+)?$/.test(s) ? Number(s) : undefined);
const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 2 });

/**
 * Judges one node's health lines by the plan. A check that ran but printed nothing fails (the node did not answer it);
 * a tool missing on the node is recorded as skipped, not failed (the image lacks it on every node alike).
 */
export function judgeHealth(lines: readonly HealthLine[], plan: HealthPlan): HealthResult[] {
  const th = plan.thresholds;
  const out: HealthResult[] = [];
  const of = (check: string) => lines.filter((l) => l.check === check);
  for (const check of plan.checks) {
    const got = of(check);
    const notool = got.find((l) => l.text.startsWith('notool='));
    if (notool) {
      out.push({ check, ok: true, measured: 'not measured', skipped: `${notool.text.slice('notool='.length)} not on the node` });
      continue;
    }
    if (!got.length) {
      out.push({ check, ok: false, measured: 'no answer', threshold: 'a figure' });
      continue;
    }
    const judge = Object.prototype.hasOwnProperty.call(JUDGES, check) ? JUDGES[check] : undefined;
    if (judge) out.push(...judge(check, got, th));
  }
  return out;
}

type Thresholds = HealthPlan['thresholds'];

/** Where a threshold comes from: the AzNHC check it follows. */
const src = (file: string | undefined, check: string) => (file ? `AzNHC ${AZNHC_TAG} ${file} ${check}` : undefined);

/** Each check's judge: the node's lines against the size's thresholds (none: nothing to judge by). */
const JUDGES: Record<string, (check: string, got: readonly HealthLine[], th: Thresholds) => HealthResult[]> = {
  cpu: judgeCpu,
  memory: judgeMemory,
  ib: judgeIb,
  ibbw: judgeIbbw,
  stream: judgeStream,
  gpu: judgeGpu,
  gdr: judgeGdr,
  linkflap: judgeLinkflap,
  site: judgeSite,
};

function judgeCpu(check: string, got: readonly HealthLine[], th: Thresholds): HealthResult[] {
  const out: HealthResult[] = [];
  const n = num(got[0].text);
  if (th)
    out.push({
      check,
      ok: n === th.cpus,
      measured: n === undefined ? got[0].text : `${n} CPUs`,
      threshold: `${th.cpus} CPUs`,
      source: src(th.source, 'check_hw_cpuinfo'),
    });
  return out;
}

function judgeMemory(check: string, got: readonly HealthLine[], th: Thresholds): HealthResult[] {
  const out: HealthResult[] = [];
  const kb = num(got[0].text);
  if (!th) return out;
  const min = Math.floor(th.memKB * (1 - th.memTolerancePct / 100));
  out.push({
    check,
    ok: kb !== undefined && kb >= min,
    measured: kb === undefined ? got[0].text || 'unreadable' : `${fmt(kb)} kB`,
    threshold: `≥ ${fmt(min)} kB (${fmt(th.memKB)} kB − ${th.memTolerancePct}%)`,
    source: src(th.source, 'check_hw_physmem'),
  });
  return out;
}

function judgeIb(check: string, got: readonly HealthLine[], th: Thresholds): HealthResult[] {
  const out: HealthResult[] = [];
  if (!th?.ib) return out;
  const { rateGbps, ports } = th.ib;
  const seen = got.filter((l) => l.text !== 'none');
  for (const l of seen) {
    const [port, state, phys, rate] = l.text.split(/\s+/);
    const r = num(rate);
    const ok = state === 'Active' && phys === 'LinkUp' && r !== undefined && r >= rateGbps;
    out.push({
      check,
      device: port,
      ok,
      measured: `${state}/${phys}, ${rate ?? '?'} Gb/s`,
      threshold: `Active/LinkUp, ≥ ${rateGbps} Gb/s`,
      source: src(th.source, 'check_hw_ib'),
    });
  }
  if (seen.length < ports.length) {
    out.push({
      check,
      ok: false,
      measured: `${seen.length} InfiniBand port(s)`,
      threshold: `${ports.length} (${ports.join(', ')})`,
      source: src(th.source, 'check_hw_ib'),
    });
  }
  return out;
}

function judgeIbbw(check: string, got: readonly HealthLine[], th: Thresholds): HealthResult[] {
  const out: HealthResult[] = [];
  if (th?.ibWriteGbps === undefined) return out;
  for (const l of got) {
    const [device, value] = l.text.split(/\s+/);
    const g = num(value);
    out.push({
      check,
      device,
      ok: g !== undefined && g >= th.ibWriteGbps,
      measured: g === undefined ? `ib_write_bw ${value ?? 'failed'}` : `${fmt(g)} Gb/s`,
      threshold: `≥ ${th.ibWriteGbps} Gb/s (ib_write_bw loopback, 1 MiB)`,
      source: src(th.source, 'check_ib_bw_non_gdr'),
    });
  }
  return out;
}

function judgeStream(check: string, got: readonly HealthLine[], th: Thresholds): HealthResult[] {
  const out: HealthResult[] = [];
  if (th?.streamMBps === undefined) return out;
  const figures = [...got[0].text.matchAll(/(Copy|Scale|Add|Triad)=(\d+(?:\.\d+)?)/g)].map((m) => ({ name: m[1], v: Number(m[2]) }));
  const worst = figures.reduce<{ name: string; v: number } | undefined>((a, f) => (!a || f.v < a.v ? f : a), undefined);
  out.push({
    check,
    ok: figures.length === 4 && worst !== undefined && worst.v >= th.streamMBps,
    measured: worst
      ? `${fmt(worst.v)} MB/s (${worst.name}${figures.length < 4 ? `, ${figures.length} of 4 kernels` : ', the lowest of 4'})`
      : 'no STREAM figures',
    threshold: `≥ ${fmt(th.streamMBps)} MB/s each of Copy, Scale, Add, Triad`,
    source: src(th.source, 'check_cpu_stream'),
  });
  return out;
}

function judgeGpu(check: string, got: readonly HealthLine[], th: Thresholds): HealthResult[] {
  const out: HealthResult[] = [];
  const n = num(got[0].text);
  if (th?.gpus !== undefined)
    out.push({ check, ok: n === th.gpus, measured: `${n ?? got[0].text} GPUs`, threshold: `${th.gpus} GPUs`, source: src(th.source, 'check_gpu_count') });
  return out;
}

function judgeGdr(check: string, got: readonly HealthLine[], th: Thresholds): HealthResult[] {
  const out: HealthResult[] = [];
  // `peermem <how>` (the module, or memory_peers) or `none`.
  const [mode, how] = got[0].text.split(/\s+/);
  if (th?.gdr)
    out.push({
      check,
      ok: mode === 'peermem',
      measured: mode === 'peermem' ? `peer memory ${how ?? ''}`.trim() : 'no peer-memory module (nvidia_peermem / nv_peer_mem not loaded)',
      threshold: 'nvidia_peermem or nv_peer_mem loaded',
      source: src(th.source, 'check_ib_bw_gdr (azure_gdr_detect.nhc)'),
    });
  return out;
}

function judgeLinkflap(check: string, got: readonly HealthLine[], th: Thresholds): HealthResult[] {
  const out: HealthResult[] = [];
  const n = num(got[0].text);
  if (th?.linkFlaps !== undefined)
    out.push({
      check,
      ok: n !== undefined && n < th.linkFlaps,
      measured: `${n ?? got[0].text} lost-carrier events`,
      threshold: `< ${th.linkFlaps} in the last ${LINK_FLAP_WINDOW_HOURS} h of syslog`,
      source: src(th.source, 'check_ib_link_flapping'),
    });
  return out;
}

function judgeSite(check: string, got: readonly HealthLine[], _th: Thresholds): HealthResult[] {
  const out: HealthResult[] = [];
  const m = /^(\d+) ?(.*)$/.exec(got[0].text);
  const rc = m ? Number(m[1]) : undefined;
  out.push({
    check,
    ok: rc === 0,
    measured: rc === undefined ? got[0].text : `exit ${rc}${m?.[2] ? `: ${m[2]}` : ''}`,
    threshold: 'exit 0',
    source: 'preflight.siteCheck',
  });
  return out;
}

/** A failed health result as one line of the node's problems (and so of the timeline and the job's error). */
export function healthProblem(r: HealthResult): string {
  return `health ${r.check}${r.device ? ` ${r.device}` : ''}: measured ${r.measured}, threshold ${r.threshold ?? '—'}${r.source ? ` (${r.source})` : ''}`;
}

/**
 * The deployment's checks that can run on a pool: the per-size ones need the size, which a reused pool the spec gives
 * no `vmSize` for does not tell us (its thresholds would be another size's); the site check needs none.
 */
export function healthChecksForPool<C extends string>(deployment: readonly C[], sizeKnown: boolean): C[] {
  return deployment.filter((c) => sizeKnown || c === 'site');
}
