/**
 * The job specification as zod schemas: the single source for validation, the TypeScript types, the
 * OpenAPI document and the field table in docs/job-spec.md. Rules that relate two fields live in
 * crossField.ts (they must run even when other fields are broken, so that every problem is listed).
 */
import { z } from 'zod';
import { parseIsoDuration } from './duration';
import * as P from './patterns';
import { GpusSchema, ImageEntrySchema, RunOptionsSchema } from './sections/container';
import { PoolNetworkSchema } from './sections/network';
import { LauncherOptionSchema, LauncherSchema, MpiVersionSchema, ProcessesPerNodeSchema } from './sections/launch';
import { FilesSchema } from './sections/files';
import { MountsSchema, ScratchSchema } from './sections/storage';
import { OutputsSchema } from './sections/outputs';
import { SchedulingFields } from './sections/scheduling';
import { RetrySchema } from './sections/retry';
import { SpotSchema } from './sections/spot';
import { PreflightSchema } from './sections/preflight';
import { LicensesSchema, SecretEnvValueSchema } from './sections/secrets';
import { ChecksSchema } from './sections/checks';

export const LIMITS = {
  maxNodes: 100,
  maxLowPriorityNodes: 0,
  minResizeTimeoutMs: 5 * 60_000,
  maxTags: 32,
  maxImages: 20,
  defaultPullConcurrency: 10,
  maxPullConcurrencyWithoutOptIn: 10,
  maxPullConcurrency: 100,
  maxInputs: 100,
  maxStagingAccounts: 50,
  minShardSizeMB: 1,
  maxShardSizeMB: 1024,
  maxProcessesPerNode: 1024,
  maxCommandLength: 8000,
  maxOptions: 64,
  maxEnv: 128,
  maxEnvValueLength: 4096,
  maxRetries: 100,
  /** Canonical JSON of a whole spec; keeps a spec far below the 1 MiB table entity limit. */
  maxSpecJsonChars: 200_000,
} as const;

export const DEFAULT_IMAGE = { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204', version: 'latest' } as const;
export const DEFAULT_NODE_AGENT_SKU = 'batch.node.ubuntu 22.04';
export const DEFAULT_SHARD_SIZE_MB = { min: 80, max: 100 } as const;

// The schema-level error only words the type mismatch; range checks keep their own messages.
const typeError = (text: string) => (iss: { code: string }) => (iss.code === 'invalid_type' ? text : undefined);

const SHELL_SAFE_HINT = 'no spaces, quotes, ";", "$", backticks or other shell characters';

function pattern(re: RegExp, what: string) {
  return z.string({ error: typeError(`must be a string: ${what}`) }).regex(re, { error: `must be ${what}` });
}

/** An ISO 8601 duration (days/hours/minutes/seconds or weeks), optionally bounded below/above. */
export function isoDuration(bounds: { minMs?: number; minText?: string; maxMs?: number; maxText?: string } = {}) {
  return z
    .string({ error: 'must be an ISO 8601 duration string such as "PT30M" or "P1DT12H"' })
    .regex(P_DURATION, {
      error: 'must be an ISO 8601 duration such as "PT30M", "PT1H30M", "P2D" or "P1W" (years and months are not accepted: their length varies)',
    })
    .refine((v) => bounds.minMs === undefined || (parseIsoDuration(v) ?? Infinity) >= bounds.minMs, {
      error: `must be at least ${bounds.minText ?? `${bounds.minMs} ms`}`,
    })
    .refine((v) => bounds.maxMs === undefined || (parseIsoDuration(v) ?? 0) <= bounds.maxMs, {
      error: `must be at most ${bounds.maxText ?? `${bounds.maxMs} ms`}`,
    });
}
// Same as ISO_DURATION_PATTERN, but also refusing the empty "P"/"PT" forms so the JSON Schema says so too.
const P_DURATION = /^P(?!T?$)(?:\d{1,6}W|(?:\d{1,6}D)?(?:T(?!$)(?:\d{1,7}H)?(?:\d{1,9}M)?(?:\d{1,10}(?:\.\d{1,3})?S)?)?)$/;

const int = (what: string) => z.number({ error: typeError(`must be a number: ${what}`) }).int({ error: `must be a whole number: ${what}` });

export const MarketplaceImageSchema = z
  .strictObject({
    publisher: pattern(P.IMAGE_SEGMENT_RE, 'an image publisher (letters, digits, ".", "_", "-")'),
    offer: pattern(P.IMAGE_SEGMENT_RE, 'an image offer (letters, digits, ".", "_", "-")'),
    sku: pattern(P.IMAGE_SEGMENT_RE, 'an image SKU (letters, digits, ".", "_", "-"; quote numeric SKUs in YAML)'),
    version: pattern(P.IMAGE_SEGMENT_RE, 'an image version or "latest"').default('latest'),
  })
  .meta({ description: 'Azure Marketplace image reference.' });

export const PartialAllocationSchema = z
  .discriminatedUnion(
    'policy',
    [
      z.strictObject({ policy: z.literal('fail') }),
      z.strictObject({
        policy: z.literal('continue'),
        minNodes: int('the smallest node count the job may run on')
          .min(1)
          .max(LIMITS.maxNodes)
          .meta({ description: 'Run on fewer nodes than requested, but never fewer than this.' }),
      }),
    ],
    { error: 'must be { policy: "fail" } or { policy: "continue", minNodes: <1..nodes> }' },
  )
  .meta({ description: 'What to do when Batch allocates fewer nodes than requested before resizeTimeout.' });

export const StartTaskSchema = z
  .strictObject({
    command: z
      .string({ error: 'must be a string: the shell command run on every node' })
      .min(1, { error: 'must not be empty' })
      .max(LIMITS.maxCommandLength)
      .regex(P.SINGLE_LINE_TEXT_RE, { error: P.SINGLE_LINE_TEXT_RULE })
      .meta({
        description:
          "Shell command run on every node as it joins the pool (elevated; bash with the node's /etc/profile.d loaded, so `module` works; no strict mode), e.g. to install or build the MPI program. The node is not used until it succeeds.",
      }),
    resourceFiles: z
      .array(
        z.strictObject({
          account: pattern(P.STORAGE_ACCOUNT_RE, 'a storage account name (3–24 lowercase letters and digits)'),
          container: pattern(P.BLOB_CONTAINER_RE, 'a blob container name (3–63 lowercase letters, digits and single hyphens)'),
          blob: pattern(P.BLOB_PREFIX_RE, `a blob name (${SHELL_SAFE_HINT})`).min(1, { error: 'must not be empty' }),
          path: pattern(P.BLOB_PREFIX_RE, `a relative file path in the start task's folder (no leading "/", no ".."; ${SHELL_SAFE_HINT})`).min(1, {
            error: 'must not be empty',
          }),
        }),
        { error: 'must be a list of { account, container, blob, path }' },
      )
      .max(32, { error: 'must list at most 32 files' })
      .default([])
      .meta({ description: 'Blobs downloaded next to the command before it runs (read through short-lived read-only SAS URLs).' }),
  })
  .meta({ description: 'Node preparation for a pool this job creates (not allowed with poolId).' });

export const PoolSchema = z
  .strictObject({
    poolId: pattern(P.POOL_ID_RE, `a Batch pool id (letters, digits, "_", "-", up to 64; ${SHELL_SAFE_HINT})`)
      .optional()
      .meta({ description: 'Reuse this existing pool instead of creating one. The pool must already allow inter-node communication.' }),
    vmSize: pattern(P.VM_SIZE_RE, 'an Azure VM size such as "Standard_HB120rs_v3"')
      .optional()
      .meta({ description: 'VM size of a new pool. Required unless poolId is given.' }),
    nodes: int('the number of nodes')
      .min(1, { error: 'must be at least 1' })
      .max(LIMITS.maxNodes, {
        error: `must be at most ${LIMITS.maxNodes}: Batch limits pools with inter-node communication (which MPI needs) to ${LIMITS.maxNodes} nodes`,
      })
      .meta({ description: 'Nodes for the MPI task (numberOfInstances); with pool.spot, spot.nodes of them are Spot nodes.' }),
    lowPriorityNodes: int('the number of low-priority nodes')
      .min(0)
      .default(0)
      .meta({ description: 'Must be 0: Spot/low-priority nodes are asked for with pool.spot, which says what happens when Azure takes one back.' }),
    spot: SpotSchema.optional(),
    image: MarketplaceImageSchema.optional().meta({
      description: `Marketplace image of a new pool. Default when neither image nor customImageId is given: ${DEFAULT_IMAGE.publisher}/${DEFAULT_IMAGE.offer}/${DEFAULT_IMAGE.sku}/${DEFAULT_IMAGE.version} with node agent "${DEFAULT_NODE_AGENT_SKU}".`,
    }),
    customImageId: pattern(P.CUSTOM_IMAGE_ID_RE, 'an ARM id "/subscriptions/…/providers/Microsoft.Compute/…" of a managed or gallery image')
      .optional()
      .meta({ description: 'Managed image or Shared Image Gallery image id, instead of image.' }),
    nodeAgentSku: pattern(P.NODE_AGENT_SKU_RE, 'a Batch node agent SKU such as "batch.node.ubuntu 22.04"')
      .optional()
      .meta({ description: 'Batch node agent SKU id matching the image. Required with image or customImageId.' }),
    resizeTimeout: isoDuration({ minMs: LIMITS.minResizeTimeoutMs, minText: 'PT5M (Batch rejects shorter resize timeouts)' })
      .default('PT15M')
      .meta({ description: 'How long Batch may take to allocate the nodes (ISO 8601, at least PT5M).' }),
    partialAllocation: PartialAllocationSchema.default({ policy: 'fail' }),
    startTask: StartTaskSchema.optional(),
    network: PoolNetworkSchema.optional(),
  })
  .meta({ description: 'Where the job runs: a new pool (created and owned by this job) or an existing one.' });

export const RegistryIdentitySchema = z
  .union(
    [
      z.literal('managed').meta({
        description:
          "Pull with the deployment's pool identity: each node exchanges the identity's token at the registry (as az acr login --identity). Refused on a deployment without a pool identity.",
      }),
      z.strictObject({
        secretRef: z
          .string({ error: 'must be a string' })
          .refine((v) => P.KEY_VAULT_SECRET_URI_RE.test(v) || P.APP_SETTING_NAME_RE.test(v), {
            error:
              'must be a Key Vault secret URI (https://<vault>.vault.azure.net/secrets/<name>[/<version>]) or the name of an app setting holding the secret',
          })
          .meta({
            description:
              "The app setting holding the registry password or token (in Azure a Key Vault reference), declared for this server in the deployment's REGISTRY_CREDENTIALS; it reaches only the pull task's environment. A Key Vault secret URI is refused at submission: the app does not read Key Vault itself.",
          }),
        username: pattern(P.REGISTRY_USERNAME_RE, 'a registry user or token name').meta({ description: 'User or token name that goes with the secret.' }),
      }),
    ],
    { error: 'must be "managed" or { secretRef: <Key Vault secret URI or app-setting name>, username: <name> }' },
  )
  .meta({ description: 'How nodes authenticate to the registry. A plain password is never accepted.' });

export const RegistrySchema = z
  .strictObject({
    server: pattern(P.REGISTRY_SERVER_RE, 'a registry host name with optional port, e.g. "myregistry.azurecr.io"'),
    identity: RegistryIdentitySchema,
  })
  .meta({ description: 'Private registry of the images.' });

export const ContainerSchema = z
  .strictObject({
    runtime: z
      .enum(['docker', 'singularity', 'none'], { error: 'must be one of "docker", "singularity", "none"' })
      .default('none')
      .meta({ description: 'Container runtime on the nodes; "none" runs the MPI program natively.' }),
    images: z
      .array(ImageEntrySchema, { error: 'must be a list of image references' })
      .max(LIMITS.maxImages, { error: `must list at most ${LIMITS.maxImages} images` })
      .default([])
      .meta({
        description:
          'Images every node must hold before the MPI task starts; the first one runs the MPI program. Required for docker/singularity, forbidden for none. Docker: OCI references. Singularity: OCI references (pulled as docker://), docker://, oras:// or library:// URIs, or SIF files in blob storage { account, container, blob }. A registry on an internal address (localhost, private, link-local, in any spelling) is refused unless the deployment lists it in ALLOWED_INTERNAL_HOSTS (the local stack: its registry).',
      }),
    registry: RegistrySchema.optional(),
    pullConcurrency: int('how many nodes pull at the same time')
      .min(1)
      .max(LIMITS.maxPullConcurrency, {
        error: `must be at most ${LIMITS.maxPullConcurrency}`,
      })
      .default(LIMITS.defaultPullConcurrency)
      .meta({ description: `How many nodes pull images at the same time (at most ${LIMITS.maxPullConcurrencyWithoutOptIn} unless allowAboveTen).` }),
    allowAboveTen: z
      .boolean({ error: 'must be true or false' })
      .default(false)
      .meta({ description: 'Opt in to pullConcurrency above 10 (registries throttle; the seeds saw failures above 10).' }),
    imageDistribution: z.enum(['peers', 'registry'], { error: 'must be "peers" or "registry"' }).default('peers').meta({
      description:
        '"peers" (default): at most pullConcurrency nodes pull from the registry, every other node copies the images from a node that holds them over the cluster network (ssh between the pool\'s nodes), digests checked on every copy. "registry": every node pulls from the registry, pullConcurrency at a time.',
    }),
    runOptions: RunOptionsSchema.optional(),
    gpus: GpusSchema,
    cuda: pattern(/^\d{1,2}(\.\d{1,2})?$/, 'a CUDA version such as "8.0" or "12.4"')
      .optional()
      .meta({
        description:
          "The CUDA version the image's program was built with, when it uses GPUs: checked against the GPU of pool.vmSize (CUDA 8 has no kernels for an A100: refused with the nearest working choice; docs/images.md).",
      }),
  })
  .meta({ description: 'Container runtime and images.' });

export const DataInputSchema = z.strictObject({
  account: pattern(P.STORAGE_ACCOUNT_RE, 'a storage account name (3–24 lowercase letters and digits)'),
  container: pattern(P.BLOB_CONTAINER_RE, 'a blob container name (3–63 lowercase letters, digits and single hyphens)'),
  prefix: pattern(P.BLOB_PREFIX_RE, `a blob name prefix (letters, digits, "._/=+@,-", no "..", no leading "/"; ${SHELL_SAFE_HINT})`)
    .default('')
    .meta({ description: 'Only blobs whose names start with this prefix; empty = the whole container.' }),
});

export const ShardSizeSchema = z
  .strictObject({
    min: z
      .number({ error: typeError('must be a number of MB') })
      .min(LIMITS.minShardSizeMB)
      .max(LIMITS.maxShardSizeMB),
    max: z
      .number({ error: typeError('must be a number of MB') })
      .min(LIMITS.minShardSizeMB)
      .max(LIMITS.maxShardSizeMB),
  })
  .meta({ description: `Target shard size window in MB (min ≤ max, each ${LIMITS.minShardSizeMB}–${LIMITS.maxShardSizeMB}).` });

export const DataSchema = z
  .strictObject({
    inputs: z
      .array(DataInputSchema, { error: 'must be a list of { account, container, prefix }' })
      .max(LIMITS.maxInputs, { error: `must list at most ${LIMITS.maxInputs} inputs` })
      .default([])
      .meta({ description: 'Blob sources staged to the nodes.' }),
    shardSizeMB: ShardSizeSchema.default({ ...DEFAULT_SHARD_SIZE_MB }),
    recordBytes: int('a record size in bytes').min(1).max(1_048_576).default(1).meta({
      description:
        'Fixed record size of the inputs: large files are split only at multiples of this many bytes, so no record is torn across shards. 1 = any byte boundary.',
    }),
    stagingAccounts: z
      .array(pattern(P.STORAGE_ACCOUNT_RE, 'a storage account name (3–24 lowercase letters and digits)'), {
        error: 'must be a list of storage account names',
      })
      .max(LIMITS.maxStagingAccounts)
      .default([])
      .meta({ description: 'Staging accounts to spread shards over; empty = all configured staging accounts.' }),
    destination: pattern(
      P.ABSOLUTE_PATH_RE,
      `an absolute path on the nodes such as "/mnt/data" (letters, digits, "._-/", no "." or ".." segments; ${SHELL_SAFE_HINT})`,
    )
      .optional()
      .meta({ description: 'Where shards land on each node. Default: "$AZ_BATCH_NODE_SHARED_DIR/jobdata/<jobId>" (see resolveDestination).' }),
    retention: isoDuration({ minMs: 60 * 60_000, minText: 'PT1H' })
      .default('P2D')
      .meta({ description: 'Longest lifetime of staged shards and their SAS URLs (at least PT1H); the sweep deletes older ones.' }),
  })
  .meta({ description: 'Input data staged to the nodes in shards.' });

export const MpiSchema = z
  .strictObject({
    runtime: z
      .enum(['intelmpi', 'openmpi', 'mpich', 'mvapich'], { error: 'must be one of "intelmpi", "openmpi", "mpich", "mvapich"' })
      .meta({ description: 'MPI implementation that launches the program.' }),
    version: MpiVersionSchema,
    processesPerNode: ProcessesPerNodeSchema,
    command: z
      .string({ error: typeError('must be a string: the program and its arguments') })
      .min(1, { error: 'must not be empty' })
      .max(LIMITS.maxCommandLength, { error: `must be at most ${LIMITS.maxCommandLength} characters` })
      .regex(P.SINGLE_LINE_TEXT_RE, { error: P.SINGLE_LINE_TEXT_RULE })
      .meta({
        description:
          'Managed launcher: the program and arguments every rank runs (bash natively, /bin/sh in a container). Custom launcher: the launch script run once on the master. Passed as data: quoted as one word wherever it is embedded in a shell line.',
      }),
    options: z.array(LauncherOptionSchema, { error: 'must be a list of option tokens' }).max(LIMITS.maxOptions).default([]).meta({
      description:
        'Extra launcher options of the managed launcher, one token per item, before the automatic ones. "$NAME" / "${NAME}" references expand on the master (e.g. "$MPIJOB_HOSTFILE", "$MPIJOB_NP").',
    }),
    launcher: LauncherSchema.prefault({}),
    fabric: z
      .enum(['rdma', 'tcp', 'auto'], { error: 'must be one of "rdma", "tcp", "auto"' })
      .default('auto')
      .meta({ description: "Interconnect preset mapped to the runtime's environment (I_MPI_FABRICS/FI_PROVIDER, UCX_TLS/UCX_IB_PKEY, …)." }),
    env: z
      .record(
        z.string().regex(P.ENV_KEY_RE, {
          error:
            'environment variable names must match ^[A-Za-z_][A-Za-z0-9_]*$ (at most 128 characters) and must not start with AZ_BATCH_ (reserved by Batch)',
        }),
        z.union(
          [
            z
              .string({ error: typeError('must be a string') })
              .max(LIMITS.maxEnvValueLength)
              .regex(P.SINGLE_LINE_TEXT_RE, { error: P.SINGLE_LINE_TEXT_RULE }),
            SecretEnvValueSchema,
          ],
          { error: 'must be a string, or { secretRef: { vault, name, version? } } for a Key Vault secret' },
        ),
        { error: 'must be a map of NAME: value' },
      )
      .default({})
      .meta({
        description: `Extra environment for every rank (at most ${LIMITS.maxEnv} entries; values are passed as data). A value may be { secretRef: { vault, name, version? } }: the Key Vault secret is read on the master node at task start with the pool identity and exported to every rank, never stored or shown by the control plane. Plain values are stored with the job and shown by status and explain: secrets belong in secretRef.`,
      }),
    preExecutionCommand: z
      .string({ error: typeError('must be a string') })
      .min(1)
      .max(LIMITS.maxCommandLength)
      .regex(P.SINGLE_LINE_TEXT_RE, { error: P.SINGLE_LINE_TEXT_RULE })
      .optional()
      .meta({
        description:
          'Run on the master node before the launcher, in the launcher\'s shell (bash with the node\'s /etc/profile.d loaded, no strict mode), e.g. "module load mpi/hpcx" or "source /opt/intel/oneapi/setvars.sh"; a non-zero status stops the job with that status. Passed as data.',
      }),
    coordinationCommand: z
      .string({ error: typeError('must be a string') })
      .min(1)
      .max(LIMITS.maxCommandLength)
      .regex(P.SINGLE_LINE_TEXT_RE, { error: P.SINGLE_LINE_TEXT_RULE })
      .optional()
      .meta({ description: 'Override of the multi-instance coordination command run on every node.' }),
    sshPort: int('a TCP port')
      .min(1)
      .max(65535)
      .optional()
      .meta({ description: "Port of the sshd the launcher uses. Default 23 with docker (the container's sshd), 22 otherwise." }),
  })
  .meta({ description: 'The MPI program and how it is launched.' });

export const MaxCostSchema = z.strictObject({
  amount: z.number({ error: typeError('must be a number') }).positive({ error: 'must be greater than 0' }),
  currency: pattern(/^[A-Z]{3}$/, 'an ISO 4217 currency code such as "USD"').default('USD'),
});

export const LimitsSchema = z
  .strictObject({
    maxWallClock: isoDuration({ minMs: 60_000, minText: 'PT1M' }).optional().meta({
      description:
        "Longest run time of the MPI task (Batch maxWallClockTime; at least PT1M). Default: the deployment's DEFAULT_MAX_WALL_CLOCK_HOURS (24 h unless set), written into the recorded spec at intake; the SAS URLs the nodes get live this long (× attempts) plus a margin.",
    }),
    maxRetries: int('a retry count').min(0).max(LIMITS.maxRetries).default(0).meta({
      description:
        "Batch's own retries of the MPI task (maxTaskRetryCount): Batch reruns it on the same nodes. Not the control plane's retry by failure class on replaced nodes: see retry.",
    }),
    maxNodeHours: z
      .number({ error: typeError('must be a number') })
      .positive({ error: 'must be greater than 0' })
      .optional()
      .meta({ description: 'Budget in node-hours (nodes × wall clock); enforced by the operations watchdog.' }),
    maxCost: MaxCostSchema.optional().meta({ description: 'Budget in money; enforced by the operations watchdog.' }),
  })
  .meta({ description: 'Run-time and budget limits.' });

export const CleanupSchema = z
  .strictObject({
    autoComplete: z
      .boolean({ error: 'must be true or false' })
      .default(true)
      .meta({ description: 'Terminate the Batch job when its tasks complete (onAllTasksComplete = terminateJob).' }),
    deletePool: z
      .enum(['always', 'onSuccess', 'never'], { error: 'must be one of "always", "onSuccess", "never"' })
      .optional()
      .meta({ description: 'When to delete the pool this job created. Default "always"; a reused pool (poolId) is never deleted.' }),
    keepLogs: z.boolean({ error: 'must be true or false' }).optional().meta({
      description:
        "Without an outputs section, whether the job still keeps the full stdout/stderr of every task in the owner's area of the deployment's default outputs location (DEFAULT_OUTPUTS, derived from the data accounts when unset; default true). false: nothing outlives the pool but the last lines in the job view.",
    }),
    keepStagedData: z
      .union([isoDuration(), z.literal(false)], { error: 'must be false or an ISO 8601 duration such as "P1D"' })
      .default(false)
      .meta({ description: 'Keep staged shards this long after the job ends (≤ data.retention); false deletes them at cleanup.' }),
  })
  .meta({ description: 'What happens after the job ends.' });

export const JobSpecSchema = z
  .strictObject({
    id: pattern(P.JOB_ID_RE, 'a job id: 1–64 lowercase letters, digits and hyphens, not starting with a hyphen')
      .optional()
      .meta({ description: 'Client-chosen job id; also the idempotency key (a repeat with the same id and spec returns the existing job).' }),
    name: pattern(P.NAME_RE, `a name of 1–128 letters, digits, ".", "_", "-" (${SHELL_SAFE_HINT})`).meta({ description: 'Human-readable job name.' }),
    tags: z
      .record(
        z.string().regex(P.TAG_KEY_RE, { error: 'tag keys must be 1–64 letters, digits, ".", "_", "-", starting with a letter or digit' }),
        z.string({ error: typeError('tag values must be strings') }).regex(P.TAG_VALUE_RE, {
          error: `tag values must be up to 256 letters, digits or "._:/@+=,-" (${SHELL_SAFE_HINT})`,
        }),
        { error: 'must be a map of key: value' },
      )
      .default({})
      .meta({ description: `Free labels for listing and filtering (at most ${LIMITS.maxTags}).` }),
    pool: PoolSchema,
    container: ContainerSchema.prefault({}),
    data: DataSchema.prefault({}),
    mpi: MpiSchema,
    limits: LimitsSchema.prefault({}),
    retry: RetrySchema.prefault({}),
    preflight: PreflightSchema.prefault({}),
    cleanup: CleanupSchema.prefault({}),
    files: FilesSchema,
    mounts: MountsSchema,
    scratch: ScratchSchema.optional(),
    outputs: OutputsSchema.optional(),
    licenses: LicensesSchema,
    checks: ChecksSchema.optional(),
    ...SchedulingFields,
  })
  .meta({ title: 'JobSpec', description: 'An MPI job: where it runs, what it runs, on which data, within which limits.' });

/** What a client may send (defaults not yet applied). */
export type JobSpecInput = z.input<typeof JobSpecSchema>;
type Parsed = z.output<typeof JobSpecSchema>;

/**
 * A validated spec with every default applied. Compared with the schema output, the defaults that
 * depend on other fields are resolved too (see normalize.ts): sshPort, deletePool, the default image.
 */
export type JobSpec = Omit<Parsed, 'mpi' | 'cleanup'> & {
  mpi: Parsed['mpi'] & { sshPort: number };
  cleanup: Parsed['cleanup'] & { deletePool: 'always' | 'onSuccess' | 'never' };
};
export type MpiRuntime = JobSpec['mpi']['runtime'];
export type ContainerRuntime = JobSpec['container']['runtime'];
export type Fabric = JobSpec['mpi']['fabric'];
