/**
 * The control plane's own cost of one job, pure arithmetic over dated prices (controlPlanePrices.ts): the Functions
 * host's busy time billed as Flex Consumption on-demand GB-seconds plus executions, and the storage transactions the
 * job causes (Jobs/Admission rows, the Durable task hub's history and instance rows, its control and work-item queue
 * messages, staging blobs). Flex bills memory × time while an instance executes, not CPU: CPU-seconds are used as the
 * busy time, a lower bound when calls wait on I/O (an instance executing several functions at once is billed once).
 */
import { CONTROL_PLANE_PRICES, type ControlPlanePrices } from './controlPlanePrices';
import { addTransactions, COUNTED_BUDGET, type CountedBudget, type StorageTransactions } from './countedBudget';

export interface ControlPlaneUsage {
  /** Seconds the Functions host was busy for this job (measured as CPU-seconds). */
  cpuSeconds: number;
  /** Function executions (HTTP, queue trigger, orchestrator episodes, activities, timers). */
  executions: number;
  storage: { table: number; queue: number; blobWrite: number; blobRead: number };
}

export interface ControlPlaneCost {
  currency: string;
  compute: number;
  executions: number;
  storage: number;
  total: number;
  asOf: string;
  source: string;
  fallback: boolean;
}

function nonNegative(name: string, v: number): number {
  if (!(Number.isFinite(v) && v >= 0)) throw new RangeError(`${name} must be a finite number >= 0, got ${v}`);
  return v;
}

export function controlPlaneCost(usage: ControlPlaneUsage, prices: ControlPlanePrices = CONTROL_PLANE_PRICES): ControlPlaneCost {
  const cpu = nonNegative('cpuSeconds', usage.cpuSeconds);
  const execs = nonNegative('executions', usage.executions);
  const s = usage.storage;
  const p = prices.storagePerTransaction;
  const compute = cpu * prices.flexInstanceMemoryGb * prices.flexOnDemandPerGbSecond;
  const executions = execs * prices.flexOnDemandPerExecution;
  const storage =
    nonNegative('storage.table', s.table) * p.table +
    nonNegative('storage.queue', s.queue) * p.queue +
    nonNegative('storage.blobWrite', s.blobWrite) * p.blobWrite +
    nonNegative('storage.blobRead', s.blobRead) * p.blobRead;
  return { currency: prices.currency, compute, executions, storage, total: compute + executions + storage, asOf: prices.asOf, source: prices.source, fallback: prices.fallback };
}

/**
 * Per-job usage as a function of the job's shape, for jobs whose usage was not metered (every job today): a fixed part
 * (intake, admission, provisioning, MPI task, cleanup), a part per node (pull/download tasks, their polls' rows) and a
 * part per minute of pool lifetime (status polls on durable timers). The coefficients are the figures the capacity bench
 * measured and modelled (bench/capacity.ts, docs/capacity.md §control-plane cost); they are estimates, not metering.
 */
export interface JobShape {
  nodes: number;
  /** Pool lifetime, minutes (the job's cost record). */
  minutes: number;
}

export interface UsageCoefficients {
  fixed: ControlPlaneUsage;
  perNode: ControlPlaneUsage;
  perMinute: ControlPlaneUsage;
  /** Where the coefficients come from (shown beside the figure). */
  basis: string;
}

const usage = (cpuSeconds: number, executions: number, table: number, queue: number, blobWrite: number, blobRead: number): ControlPlaneUsage => ({
  cpuSeconds,
  executions,
  storage: { table, queue, blobWrite, blobRead },
});

/**
 * CPU: bench/capacity.ts measured 7.67 CPU-s per 4-node native demo job on the local host (2026-11-27, mean of 2 runs,
 * process.cpuUsage around submit → final; the in-process Batch emulator is included, so this is an upper bound). Only one
 * size was measured: the split into a fixed part and a per-node part is an assumption, and so are the executions.
 * Storage transactions are the counted ones (countedBudget.ts): intake + the job's fixed part, its part per node, and
 * per minute the MPI wait's polls (a pool minute is taken as a running minute: an upper bound for the other stages).
 */
export function usageCoefficients(counted: CountedBudget = COUNTED_BUDGET): UsageCoefficients {
  const withStorage = (cpuSeconds: number, executions: number, s: StorageTransactions): ControlPlaneUsage => ({ cpuSeconds, executions, storage: { ...s } });
  const perMinute = addTransactions({ table: 0, queue: 0, blobWrite: 0, blobRead: 0 }, counted.perMpiPoll, counted.mpiPollsPerMinute);
  return {
    fixed: withStorage(7.0, 60, addTransactions(counted.intake, counted.fixed)),
    perNode: withStorage(0.15, 2, counted.perNode),
    perMinute: withStorage(0.02, 2, perMinute),
    basis:
      `storage transactions counted per job at Azurite (${counted.countedAt}: intake, fixed, per node, per MPI poll; ${counted.source}); ` +
      'CPU estimated from bench/capacity.ts (2026-11-27: 7.67 CPU-s measured per 4-node local job), executions estimated',
  };
}

export const DEFAULT_USAGE_COEFFICIENTS: UsageCoefficients = usageCoefficients();

export function estimateControlPlaneUsage(shape: JobShape, c: UsageCoefficients = DEFAULT_USAGE_COEFFICIENTS): ControlPlaneUsage {
  const n = nonNegative('nodes', shape.nodes);
  const m = nonNegative('minutes', shape.minutes);
  const lin = (f: (x: ControlPlaneUsage) => number) => f(c.fixed) + n * f(c.perNode) + m * f(c.perMinute);
  return usage(
    lin((x) => x.cpuSeconds),
    lin((x) => x.executions),
    lin((x) => x.storage.table),
    lin((x) => x.storage.queue),
    lin((x) => x.storage.blobWrite),
    lin((x) => x.storage.blobRead),
  );
}
