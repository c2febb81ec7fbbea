/**
 * The `pool.spot` section: part of a new pool's nodes are Spot nodes (Batch's targetLowPriorityNodes), the rest
 * dedicated. Batch allows Spot nodes in pools with inter-node communication and documents no rule against
 * multi-instance tasks on them (learn.microsoft.com/azure/batch/batch-spot-vms), but warns that "one preempted VM can
 * lead to the whole job having to run again": so a preemption is its own failure class, retried on fresh nodes up to
 * `maxPreemptions` times, after which `fallback` decides (docs/job-spec.md, "Spot nodes").
 */
import { z } from 'zod';

export const SPOT_FALLBACKS = ['dedicated', 'wait', 'fail'] as const;
export type SpotFallback = (typeof SPOT_FALLBACKS)[number];

export const SPOT_LIMITS = { maxPreemptions: 10 } as const;

export const SpotSchema = z
  .strictObject({
    nodes: z
      .number({ error: 'must be a number: how many of pool.nodes are Spot nodes' })
      .int({ error: 'must be a whole number' })
      .min(1, { error: 'must be at least 1 (leave pool.spot out for dedicated nodes only)' })
      .meta({ description: "How many of pool.nodes are Spot nodes (Batch's targetLowPriorityNodes); the rest are dedicated. At most pool.nodes." }),
    fallback: z
      .enum(SPOT_FALLBACKS, { error: `must be one of ${SPOT_FALLBACKS.map((f) => `"${f}"`).join(', ')}` })
      .default('dedicated')
      .meta({
        description:
          "After maxPreemptions preemptions: dedicated = the pool's Spot nodes are replaced by dedicated ones and the job runs again; wait = run again on Spot nodes (until the pipeline budget ends); fail = the job fails, saying why.",
      }),
    maxPreemptions: z
      .number({ error: 'must be a number: preemptions retried on Spot nodes' })
      .int({ error: 'must be a whole number' })
      .min(0, { error: 'must be at least 0' })
      .max(SPOT_LIMITS.maxPreemptions, { error: `must be at most ${SPOT_LIMITS.maxPreemptions}` })
      .default(1)
      .meta({
        description:
          'Preemptions retried on fresh Spot nodes before the fallback applies (0: the first preemption falls back). These attempts do not count against retry.maxAttempts.',
      }),
  })
  .meta({
    description:
      'Spot nodes for part (or all) of a new pool: cheaper, but Azure may take them back at any time; a preempted node fails the MPI run, which is retried as described (docs/job-spec.md, "Spot nodes"). Not allowed with pool.poolId.',
  });

export type SpotSpec = z.output<typeof SpotSchema>;
