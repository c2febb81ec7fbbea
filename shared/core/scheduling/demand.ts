/** What a job asks admission for, from its spec. Pure. */
import type { JobSpec } from '../spec/schema';
import { DEFAULT_QUEUE } from '../spec/sections/scheduling';
import { planJob } from '../planning/jobPlan';
import { vmSizeInfo } from '../planning/vmSizes';
import type { Demand, PlacementNeeds } from './admission';
import { parseIsoDuration } from '../spec/duration';

/**
 * A job that creates its pool holds that pool, its nodes and their cores (cores per node from the VM size table) of
 * the size's quota family. A job on a reused pool holds its nodes (owner and queue caps count them) but no cores and
 * no pool: that pool's nodes are allocated already, outside admission.
 */
export function demandOf(jobId: string, spec: JobSpec): Demand {
  const plan = planJob(jobId, spec);
  const size = vmSizeInfo(plan.poolCreate.vmSize);
  if (plan.reusePool) return { family: size.family, cores: 0, nodes: spec.pool.nodes, pools: 0 };
  return { family: size.family, cores: size.cores * spec.pool.nodes, nodes: spec.pool.nodes, pools: 1 };
}

/**
 * What placement over several Batch accounts weighs besides the cores: the size (its price per region), Spot cores
 * when the spec asks for Spot nodes (`pool.spot.nodes`, read if the spec has it), the staging accounts (data
 * locality) and the budget over the wall-clock limit.
 */
export function placementNeeds(spec: JobSpec): PlacementNeeds {
  const vmSize = planJob('placement', spec).poolCreate.vmSize;
  const coresPerNode = vmSizeInfo(vmSize).cores;
  const spot = (spec.pool as { spot?: { nodes?: unknown } }).spot;
  const spotNodes = typeof spot?.nodes === 'number' && spot.nodes > 0 ? spot.nodes : 0;
  const wall = spec.limits?.maxWallClock ? parseIsoDuration(spec.limits.maxWallClock) : undefined;
  const staging = spec.data?.stagingAccounts ?? [];
  return {
    vmSize,
    ...(spotNodes ? { spotCores: spotNodes * coresPerNode } : {}),
    ...(staging.length ? { stagingAccounts: [...staging] } : {}),
    ...(spec.limits?.maxCost ? { maxCost: spec.limits.maxCost.amount } : {}),
    ...(wall !== undefined ? { hours: wall / 3_600_000 } : {}),
  };
}

export function queueOf(spec: JobSpec): string {
  return spec.queue ?? DEFAULT_QUEUE;
}

export function priorityOf(spec: JobSpec): number {
  return spec.priority ?? 0;
}

/**
 * The submission order key: the time the job was submitted (its array's, for an array's jobs) and its index in the
 * array, so an array's jobs keep their index order and equal times keep the order they were submitted in.
 */
export function submissionOrder(submittedAt: string, arrayIndex?: number): string {
  return `${submittedAt}|${String(arrayIndex ?? 0).padStart(6, '0')}`;
}
