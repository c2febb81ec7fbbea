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
  return {
    currency: prices.currency,
    compute,
    executions,
    storage,
    total: compute + executions + storage,
    asOf: prices.asOf,
    source: prices.source,
    fallback: prices.fallback,
  };
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
 * Everything is counted per job (countedBudget.ts), nothing modelled: the host's function executions and CPU-seconds
 * (counted.host: a fixed part, a part per node, a part per MPI poll, from jobs run one at a time) and the storage
 * transactions (intake + the job's fixed part, its part per node). Per minute: the MPI wait's polls (a pool minute is
 * taken as a running minute: an upper bound for the other stages).
 */
export function usageCoefficients(counted: CountedBudget = COUNTED_BUDGET): UsageCoefficients {
  const withStorage = (cpuSeconds: number, executions: number, s: StorageTransactions): ControlPlaneUsage => ({ cpuSeconds, executions, storage: { ...s } });
  const perMinute = addTransactions({ table: 0, queue: 0, blobWrite: 0, blobRead: 0 }, counted.perMpiPoll, counted.mpiPollsPerMinute);
  const { host } = counted;
  return {
    fixed: withStorage(host.fixed.cpuSeconds, host.fixed.executions, addTransactions(counted.intake, counted.fixed)),
    perNode: withStorage(host.perNode.cpuSeconds, host.perNode.executions, counted.perNode),
    perMinute: withStorage(host.perMpiPoll.cpuSeconds * counted.mpiPollsPerMinute, host.perMpiPoll.executions * counted.mpiPollsPerMinute, perMinute),
    basis:
      `storage transactions counted per job at Azurite (${counted.countedAt}: intake, fixed, per node, per MPI poll; ${counted.source}); ` +
      `function executions counted and CPU-seconds measured per job on the local host (${host.countedAt}: fixed, per node, per MPI poll; ${host.source})`,
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
