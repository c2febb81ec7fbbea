/**
 * The `preflight` section of the job spec: a short check across the job's own nodes after staging and before the MPI
 * task (docs/scheduling.md): every node reachable on the launcher's ssh port from the master, free disk, the paths the
 * job needs present, and an MPI ping-pong over the fabric the job uses. Outliers are replaced and the check repeated.
 */
import { z } from 'zod';
import { ISO_DURATION_PATTERN, parseIsoDuration } from '../duration';

export const PREFLIGHT_LIMITS = { maxRounds: 5, minTimeoutMs: 30_000, maxTimeoutMs: 30 * 60_000 } as const;

/**
 * Ping-pong thresholds when the spec gives none, for an RDMA fabric: an HDR/EDR InfiniBand pair shows ~2 µs and 10+
 * GB/s with 1 MiB messages; a link that fell back to IPoIB or TCP shows tens of µs and a few GB/s. TCP fabrics have no
 * default: what Ethernet gives varies tenfold with the VM size, so their figures are recorded and judged only against
 * thresholds the spec sets (a TCP node that cannot be reached, or a ping-pong that cannot run, fails the check anyway).
 * A deployment can turn these defaults off (PREFLIGHT_FABRIC_DEFAULTS=false: the local stack does, its "fabric" is a
 * loopback on a shared machine).
 */
export const PINGPONG_DEFAULTS = {
  rdma: { maxLatencyUs: 20, minBandwidthMBps: 4_000 },
} as const;

const num = (what: string) => z.number({ error: `must be a number: ${what}` });

export const PingPongSchema = z
  .strictObject({
    enabled: z
      .boolean({ error: 'must be true or false' })
      .default(true)
      .meta({ description: "Run the ping-pong (needs `mpicc` where the launcher runs: the node, or the job's container; skipped and recorded when absent)." }),
    maxLatencyUs: num('microseconds')
      .positive({ error: 'must be greater than 0' })
      .max(1_000_000)
      .optional()
      .meta({
        description: `Largest median one-way latency (8-byte messages, µs) of a pair of nodes. Default: ${PINGPONG_DEFAULTS.rdma.maxLatencyUs} on an RDMA fabric, none on TCP.`,
      }),
    minBandwidthMBps: num('MB/s')
      .positive({ error: 'must be greater than 0' })
      .max(1_000_000)
      .optional()
      .meta({
        description: `Smallest bandwidth (1 MiB messages, MB/s) of a pair of nodes. Default: ${PINGPONG_DEFAULTS.rdma.minBandwidthMBps} on an RDMA fabric, none on TCP.`,
      }),
  })
  .meta({
    description:
      'MPI ping-pong between neighbouring nodes (a ring: each node is measured with two partners, so a slow node is told from a slow partner; with two nodes a slow pair replaces both).',
  });

/** The node health checks there are (docs/pipeline.md "Node health checks"); a deployment picks with PREFLIGHT_HEALTH_CHECKS. */
export const HEALTH_CHECKS = ['cpu', 'memory', 'ib', 'ibbw', 'stream', 'gpu', 'gdr', 'linkflap', 'site'] as const;
export type HealthCheck = (typeof HEALTH_CHECKS)[number];

/** The node health checks a job may leave out (the deployment's PREFLIGHT_HEALTH_CHECKS says which run at all). */
export const SKIPPABLE_HEALTH_CHECKS = HEALTH_CHECKS.filter((c) => c !== 'site');

export const HealthSchema = z
  .strictObject({
    enabled: z
      .boolean({ error: 'must be true or false' })
      .default(true)
      .meta({ description: 'Run the node health checks of the VM size (AzNHC\'s figures, docs/pipeline.md "Node health checks") on every node.' }),
    skip: z
      .array(z.enum(SKIPPABLE_HEALTH_CHECKS, { error: `must be one of ${SKIPPABLE_HEALTH_CHECKS.join(', ')}` }))
      .max(SKIPPABLE_HEALTH_CHECKS.length)
      .default([])
      .meta({ description: 'Health checks to leave out for this job (measured nowhere, judged never).' }),
  })
  .meta({
    description:
      'Per-VM-size node health checks as Azure HPC runs them (AzNHC): CPU count, memory, InfiniBand port state and rate, ib_write_bw loopback, STREAM, GPU count, GPUDirect RDMA (the peer-memory module), link flaps in the last 24 h.',
  });

export const SITE_CHECK_LIMITS = { maxScriptChars: 4000, maxImageChars: 500 } as const;

export const SiteCheckSchema = z
  .strictObject({
    script: z
      .string({ error: 'must be a string' })
      .min(1, { error: 'must not be empty' })
      .max(SITE_CHECK_LIMITS.maxScriptChars, { error: `must be at most ${SITE_CHECK_LIMITS.maxScriptChars} characters` })
      .optional()
      .meta({
        description:
          "A bash script run on every node (as the check's user, 120 s at most); a non-zero exit fails the node, its last output line is the reason. Put a longer script in `files` and call it from here.",
      }),
    image: z
      .string({ error: 'must be a string' })
      .regex(/^[A-Za-z0-9][A-Za-z0-9._/:@-]*$/, { error: 'must be a container image reference' })
      .max(SITE_CHECK_LIMITS.maxImageChars)
      .optional()
      .meta({ description: 'A container image run on every node (`docker run --rm --network host`, 300 s at most); a non-zero exit fails the node.' }),
    privileged: z
      .boolean({ error: 'must be true or false' })
      .default(false)
      .meta({ description: 'Run the image privileged (only where the deployment allows privileged containers: CONTAINER_ALLOW_PRIVILEGED).' }),
  })
  .refine((v) => (v.script === undefined) !== (v.image === undefined), { error: 'give exactly one of script or image' })
  .refine((v) => !v.privileged || v.image !== undefined, { error: 'privileged applies to an image only', path: ['privileged'] })
  .meta({ description: "The site's own node check, run on every node beside the built-in ones; nodes it fails are replaced like theirs." });

export const PreflightSchema = z
  .strictObject({
    enabled: z
      .boolean({ error: 'must be true or false' })
      .default(true)
      .meta({ description: 'Check the nodes before the MPI task (on by default: it takes seconds, against minutes of a job that dies on a bad node).' }),
    maxSshMs: z.number({ error: 'must be a number of milliseconds' }).int({ error: 'must be a whole number' }).min(100).max(120_000).default(10_000).meta({
      description: "Longest ssh round trip (connect and a short command) from the master to a node on the launcher's port; slower or refused is unreachable.",
    }),
    minFreeDiskGB: num('GB')
      .min(0)
      .max(100_000)
      .default(1)
      .meta({ description: 'Least free space on each node under the Batch task directory (AZ_BATCH_NODE_ROOT_DIR); 0 = not checked.' }),
    pingPong: PingPongSchema.prefault({}),
    health: HealthSchema.prefault({}),
    siteCheck: SiteCheckSchema.optional(),
    runPreExecutionCommand: z.boolean({ error: 'must be true or false' }).default(true).meta({
      description:
        "Run the job's `mpi.preExecutionCommand` before the check, for the environment it sets up (`module load`, vendor scripts) so the check finds the launcher and `mpicc` the job uses. Set false when it does the job's own work (decomposing a case, running what the coordination command built): natively the check runs no coordination command, and work done twice is not a check's business.",
    }),
    rounds: z.number({ error: 'must be a number' }).int({ error: 'must be a whole number' }).min(0).max(PREFLIGHT_LIMITS.maxRounds).default(2).meta({
      description: 'How many times bad nodes are replaced and the check repeated before the attempt fails (a preflightFailure, which `retry` may retry).',
    }),
    timeout: z
      .string({ error: 'must be an ISO 8601 duration such as "PT3M"' })
      .refine((v) => ISO_DURATION_PATTERN.test(v) && parseIsoDuration(v) !== undefined, { error: 'must be an ISO 8601 duration such as "PT3M"' })
      .refine((v) => (parseIsoDuration(v) ?? 0) >= PREFLIGHT_LIMITS.minTimeoutMs && (parseIsoDuration(v) ?? 0) <= PREFLIGHT_LIMITS.maxTimeoutMs, {
        error: 'must be between PT30S and PT30M',
      })
      .default('PT3M')
      .meta({ description: "Wall-clock limit of one check (the Batch task's maxWallClockTime)." }),
  })
  .meta({
    description:
      "A check across the job's own nodes after staging and before MPI: reachability on the launcher's ssh port, free disk, required paths, and an MPI ping-pong (docs/scheduling.md).",
  });

export type PreflightSpec = z.output<typeof PreflightSchema>;
