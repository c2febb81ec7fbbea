/**
 * A day of mixed jobs through one deployment: arrivals, the real admission decisions (shared/core/scheduling/admission.ts
 * decideAdmission against the Batch account's core quota and pool limit), each job's pre-MPI phase from the job model
 * (simulateJob, cached per shape), its run, and the load each service sees, bucketed per minute. The request figures
 * per job come from shared/core/ops/controlPlaneCost.ts estimateControlPlaneUsage (the same estimate the dashboard shows).
 */
import { decideAdmission, type AdmissionLimits, type Reservation, type WaitingJob } from '../../../shared/core/scheduling/admission';
import { estimateControlPlaneUsage } from '../../../shared/core/ops/controlPlaneCost';
import { EventQueue, runEvents } from './eventQueue';
import { simulateJob, type JobDesign, type JobInputs, type JobFigures } from './jobModel';

export interface JobClass {
  name: string;
  share: number;
  nodes: number;
  inputBytes: number;
  imageBytes: number;
  runMinutes: number;
}

export interface ServiceLimit {
  service: string;
  /** Units per second the service accepts (its published target). */
  perSecond: number;
  /** What the deployment does when the load passes the target. */
  then: string;
  source: string;
}

export interface DayInputs {
  jobs: number;
  classes: JobClass[];
  coresPerNode: number;
  family: string;
  limits: AdmissionLimits;
  /** Share of the day's jobs that arrive in one burst at 09:00 (an array submission). */
  burstShare: number;
  seed: number;
  /** Registry read operations per pull (token, manifest, config, layers). */
  registryOpsPerPull: number;
  serviceLimits: Record<'storageAccount' | 'tablePartition' | 'controlQueue' | 'registryOps' | 'registryBandwidth' | 'batchApi', ServiceLimit>;
  /** Durable task-hub partitions (control queues). */
  taskHubPartitions: number;
}

export interface ServiceLoad {
  service: string;
  peakPerSecond: number;
  limitPerSecond: number;
  utilization: number;
  then: string;
  source: string;
}

export interface DayFigures {
  jobs: number;
  admittedWithinDay: number;
  waitForAdmissionS: { mean: number; p95: number; max: number };
  submitToMpiS: { mean: number; p95: number };
  idleNodeMinutes: number;
  registryBytes: number;
  loads: ServiceLoad[];
  /** The rate-limited service with the highest utilization, and the load factor (× this day's jobs) at which it reaches its target. */
  firstRateLimit: { service: string; atLoadFactor: number };
  /** Whether admission held jobs back on the core quota (the limit a day of HPC jobs meets first, as queueing). */
  quotaBound: boolean;
  peakCoresInUse: number;
}

/** mulberry32: a small seeded generator, so a day is the same day on every run. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const quantile = (xs: number[], p: number) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};

type Ev = { kind: 'arrive'; job: number } | { kind: 'end'; job: number };

export function simulateDay(day: DayInputs, base: Omit<JobInputs, 'nodes' | 'inputBytes' | 'imageBytes'>, design: JobDesign): DayFigures {
  const rand = seeded(day.seed);
  const shareTotal = day.classes.reduce((s, c) => s + c.share, 0);
  const pick = () => {
    let r = rand() * shareTotal;
    for (const c of day.classes) if ((r -= c.share) < 0) return c;
    return day.classes[day.classes.length - 1];
  };
  const cache = new Map<string, JobFigures>();
  const phase = (c: JobClass) => {
    let f = cache.get(c.name);
    if (!f) {
      f = simulateJob({ ...base, nodes: c.nodes, inputBytes: c.inputBytes, imageBytes: c.imageBytes }, design);
      cache.set(c.name, f);
    }
    return f;
  };

  // Arrivals: a burst at 09:00, the rest over working hours (08:00–20:00) with a uniform spread.
  const jobs = Array.from({ length: day.jobs }, (_, k) => {
    const c = pick();
    const burst = k < Math.round(day.jobs * day.burstShare);
    const at = burst ? 9 * 3600 : 8 * 3600 + rand() * 12 * 3600;
    return { id: `job-${String(k).padStart(5, '0')}`, c, at, admittedAt: NaN, mpiAt: NaN, endAt: NaN };
  });

  const q = new EventQueue<Ev>();
  for (const [k, j] of jobs.entries()) q.push(j.at, { kind: 'arrive', job: k });
  const waiting = new Map<string, WaitingJob>();
  const reservations = new Map<string, Reservation>();
  let grant = 0;
  let peakCores = 0;
  let quotaWaits = 0;
  const byId = new Map(jobs.map((j, k) => [j.id, k]));

  // Per-minute load buckets.
  const buckets = new Map<string, Float64Array>();
  const minutes = 48 * 60;
  const add = (service: string, fromS: number, toS: number, units: number) => {
    let b = buckets.get(service);
    if (!b) buckets.set(service, (b = new Float64Array(minutes)));
    const a = Math.max(0, Math.floor(fromS / 60));
    const z = Math.max(a, Math.min(minutes - 1, Math.floor(Math.max(fromS, toS - 1e-9) / 60)));
    const per = units / (z - a + 1);
    for (let m = a; m <= z && m < minutes; m++) b[m] += per;
  };

  const pass = (now: number) => {
    const d = decideAdmission(day.limits, [...reservations.values()], [...waiting.values()], 100);
    quotaWaits += Object.values(d.waiting).filter((why) => why.includes('cores')).length;
    if (d.refuse.length) throw new Error(`the day's mix has a job that can never run: ${d.refuse[0].reason}`);
    add('tablePartition', now, now + 1, 2 + 2 * d.admit.length);
    for (const w of d.admit) {
      waiting.delete(w.jobId);
      const k = byId.get(w.jobId)!;
      const j = jobs[k];
      reservations.set(w.jobId, { ...w, grantedAt: new Date(now * 1000).toISOString(), grant: ++grant, acked: true });
      const f = phase(j.c);
      j.admittedAt = now;
      j.mpiAt = now + f.submitToMpiS - base.intakeS;
      j.endAt = j.mpiAt + j.c.runMinutes * 60;
      q.push(j.endAt, { kind: 'end', job: k });
      // Registry: the job's pulls spread over its image phase.
      add('registryOps', now + f.phases.images.start - base.intakeS, now + f.phases.images.end - base.intakeS, f.registryPulls * day.registryOpsPerPull);
      add('registryBandwidth', now + f.phases.images.start - base.intakeS, now + f.phases.images.end - base.intakeS, f.registryBytes);
      // Control plane: the job's storage transactions and Batch requests spread over its life.
      const u = estimateControlPlaneUsage({ nodes: j.c.nodes, minutes: (j.endAt - now) / 60 });
      const tx = u.storage.table + u.storage.queue + u.storage.blobRead + u.storage.blobWrite;
      add('storageAccount', now, j.endAt, tx);
      add('controlQueue', now, j.endAt, u.storage.queue / day.taskHubPartitions);
      add('batchApi', now, j.endAt, f.polls + 3 * j.c.nodes + (j.endAt - j.mpiAt) / 30);
    }
    let cores = 0;
    for (const r of reservations.values()) cores += r.cores;
    peakCores = Math.max(peakCores, cores);
  };

  runEvents(q, (now, ev) => {
    const j = jobs[ev.job];
    if (ev.kind === 'arrive') {
      // Intake: one Jobs row, the Durable start (instance row, history, a control message), the waiting row.
      add('storageAccount', now, now + 1, 6);
      add('tablePartition', now, now + 1, 2);
      waiting.set(j.id, {
        jobId: j.id,
        owner: `owner${ev.job % 20}`,
        queue: 'default',
        priority: 0,
        order: `${now.toFixed(3).padStart(12, '0')}:${j.id}`,
        jumpedBy: 0,
        family: day.family,
        cores: j.c.nodes * day.coresPerNode,
        nodes: j.c.nodes,
        pools: 1,
      });
    } else {
      reservations.delete(j.id);
    }
    pass(now);
  });

  const loads: ServiceLoad[] = Object.entries(day.serviceLimits).map(([key, lim]) => {
    const b = buckets.get(key) ?? new Float64Array(minutes);
    const peak = Math.max(...b) / 60;
    return { service: lim.service, peakPerSecond: peak, limitPerSecond: lim.perSecond, utilization: peak / lim.perSecond, then: lim.then, source: lim.source };
  });
  const worst = loads.reduce((a, b) => (b.utilization > a.utilization ? b : a));
  const waits = jobs.filter((j) => Number.isFinite(j.admittedAt)).map((j) => j.admittedAt - j.at);
  const toMpi = jobs.filter((j) => Number.isFinite(j.mpiAt)).map((j) => j.mpiAt - j.at + base.intakeS);
  let idle = 0;
  let registryBytes = 0;
  for (const j of jobs)
    if (Number.isFinite(j.admittedAt)) {
      const f = phase(j.c);
      idle += f.idleNodeMinutes;
      registryBytes += f.registryBytes;
    }
  return {
    jobs: jobs.length,
    admittedWithinDay: jobs.filter((j) => j.admittedAt < 24 * 3600).length,
    waitForAdmissionS: { mean: waits.reduce((s, x) => s + x, 0) / waits.length, p95: quantile(waits, 0.95), max: Math.max(...waits) },
    submitToMpiS: { mean: toMpi.reduce((s, x) => s + x, 0) / toMpi.length, p95: quantile(toMpi, 0.95) },
    idleNodeMinutes: idle,
    registryBytes,
    loads,
    firstRateLimit: { service: worst.service, atLoadFactor: worst.utilization > 0 ? 1 / worst.utilization : Infinity },
    quotaBound: quotaWaits > 0,
    peakCoresInUse: peakCores,
  };
}
