/**
 * Spot nodes for an MPI job (pool.spot), pure. The pool's split (Batch's targetDedicatedNodes and
 * targetLowPriorityNodes), and what follows a preemption: Batch requeues the multi-instance task of a preempted node
 * and seeks the pool's Spot target again (learn.microsoft.com/azure/batch/batch-spot-vms), but an MPI run cannot go on
 * without a rank, so the control plane retries the job on fresh nodes, `maxPreemptions` times on Spot nodes, and then
 * applies `fallback`: dedicated nodes, Spot again (wait), or the job's end (fail). Replayed identically by the
 * orchestrator (tests/orchestrations/spotFallback.replay.test.ts).
 */
import type { SpotFallback } from '../spec/sections/spot';

export interface SpotPolicy {
  /** Spot nodes of the pool (pool.spot.nodes). */
  nodes: number;
  fallback: SpotFallback;
  maxPreemptions: number;
}

/** The pool's targets: Spot nodes as low-priority ones, the rest dedicated (all dedicated without pool.spot or after a fallback). */
export function poolSplit(totalNodes: number, spotNodes: number | undefined): { dedicated: number; lowPriority: number } {
  const lowPriority = Math.max(0, Math.min(totalNodes, spotNodes ?? 0));
  return { dedicated: totalNodes - lowPriority, lowPriority };
}

export type PreemptionDecision =
  /** Another attempt on Spot nodes (the preempted ones replaced). */
  | { action: 'retrySpot'; reason: string }
  /** Another attempt with the Spot nodes replaced by dedicated ones. */
  | { action: 'dedicated'; reason: string }
  /** The job ends: too many preemptions and fallback "fail". */
  | { action: 'fail'; reason: string };

/**
 * After the `preemptions`-th preemption (1-based, counting this one) of a job with `spot`: what next. Up to
 * maxPreemptions preemptions are retried on Spot nodes; the one after that applies the fallback.
 */
export function decideAfterPreemption(spot: SpotPolicy, preemptions: number): PreemptionDecision {
  const seen = `preemption ${preemptions} of Spot nodes`;
  if (preemptions <= spot.maxPreemptions) {
    return { action: 'retrySpot', reason: `${seen} (pool.spot.maxPreemptions ${spot.maxPreemptions}): retried on fresh Spot nodes` };
  }
  const over = `${seen}, more than pool.spot.maxPreemptions (${spot.maxPreemptions})`;
  switch (spot.fallback) {
    case 'dedicated':
      return { action: 'dedicated', reason: `${over}: falling back to ${spot.nodes} dedicated node(s) (pool.spot.fallback "dedicated")` };
    case 'wait':
      return { action: 'retrySpot', reason: `${over}: retried on Spot nodes again (pool.spot.fallback "wait"; the pipeline budget bounds the wait)` };
    case 'fail':
      return { action: 'fail', reason: `${over}; pool.spot.fallback is "fail": the job ends instead of running on dedicated nodes` };
  }
}
