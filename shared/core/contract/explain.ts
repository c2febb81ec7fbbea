/**
 * The explain document (`hpcjob explain`, `POST /api/jobs?dryRun=true`): what the pipeline would send to Batch for a
 * job spec, built by shared/core/planning/explain.ts from the builders the pipeline itself uses. Declared once here: the
 * function returns it, the OpenAPI document describes it (components.schemas.ExplainDocument), the CLI prints it,
 * and docs/explain.md documents every field. Values only known when the job runs are placeholders "<run-time: …>";
 * an offline explain also leaves the deployment's own values open as "<deployment: …>".
 */
import { z } from 'zod';
import { HEALTH_CHECKS } from '../spec/sections/preflight';

/** The document's format version: a consumer that reads version 1 can rely on every field below. */
export const EXPLAIN_VERSION = 2;

const BatchBody = (what: string) =>
  z.record(z.string(), z.unknown()).meta({
    description: `${what}, exactly as the Batch adapter sends it (REST API 2022-10-01.16.0, the body of the request), with placeholders where a value is only known at run time.`,
  });

const NodeTaskTemplate = (what: string) =>
  z.object({
    perNode: z.literal(true).meta({
      description:
        "One such task per node: the id carries the node's index in pool order (0…nodes-1) and the attempt (1, 2, … up to nodeTaskMaxAttempts), affinityInfo the node's affinity id.",
    }),
    request: BatchBody(`The ${what} task (Task_Add)`),
  });

export const ExplainSettingsSchema = z
  .object({
    source: z.enum(['deployment', 'defaults']).meta({
      description:
        '"deployment": the settings of the API that answered (dry run); "defaults": the documented defaults (hpcjob explain --offline), staging accounts left open.',
    }),
    stagingAccounts: z.array(z.string()).meta({ description: 'STAGING_ACCOUNTS: the staging accounts shards are spread over when the spec names none.' }),
    copyConcurrency: z.number().meta({ description: 'STAGING_COPY_CONCURRENCY: shard copies at once.' }),
    sasMarginMinutes: z.number().meta({ description: 'NODE_SAS_MARGIN_MINUTES: extra life of node SAS URLs beyond the wall clock.' }),
    sasMaxLifetimeMinutes: z.number().meta({ description: 'SAS_MAX_LIFETIME_HOURS × 60: no SAS handed to a node lives longer.' }),
    nodeTaskMaxAttempts: z.number().meta({ description: 'NODE_TASK_MAX_ATTEMPTS: attempts of a per-node task (pull, download, upload).' }),
    poolIdentity: z
      .object({
        resourceId: z.string().meta({ description: "POOL_IDENTITY_RESOURCE_ID: the user-assigned identity's ARM id." }),
        clientId: z.string().meta({ description: 'POOL_IDENTITY_CLIENT_ID: its client id (what the pull task signs in to a registry with).' }),
      })
      .nullable()
      .meta({
        description:
          'The pool identity (POOL_IDENTITY_*): pools are then created through the management plane carrying it. null: pools from the data plane, no identity on the nodes (also the documented default, offline).',
      }),
    preflightHealthChecks: z.array(z.enum(HEALTH_CHECKS)).optional().meta({
      description:
        'PREFLIGHT_HEALTH_CHECKS: the node health checks preflight runs on every node (docs/pipeline.md, "Node health checks"); they are part of the preflight request below.',
    }),
    poolSubnetId: z.string().nullable().optional().meta({
      description:
        'POOL_SUBNET_ID: the subnet new pools join when the spec names none (pool.network.subnetId). null: no default, pools without pool.network have no virtual network (also the documented default, offline).',
    }),
  })
  .meta({ title: 'ExplainSettings' });

const StorageRef = z.object({ account: z.string(), container: z.string() });

export const ExplainDocumentSchema = z
  .object({
    version: z.literal(EXPLAIN_VERSION).meta({ description: 'Format version of this document (1).' }),
    jobId: z
      .string()
      .meta({ description: 'The job id a submission of this spec would get (it names the pool, the Batch job, the containers and the scratch).' }),
    jobIdFrom: z.enum(['spec.id', 'idempotencyKey', 'content']).meta({
      description: "Where the id comes from: the spec's id, the Idempotency-Key header, or the spec's content hash (scoped to the caller over HTTP).",
    }),
    policiesChecked: z.boolean().meta({
      description: "True when the deployment's data-access and container policies accepted the spec (dry run); false offline, where they are not known.",
    }),
    settings: ExplainSettingsSchema,
    placeholders: z.array(z.string()).meta({
      description:
        'Every placeholder the document holds, sorted: values filled in only when the job runs ("<run-time: …>") or, offline, by the deployment ("<deployment: …>").',
    }),
    pool: z.object({
      poolId: z.string(),
      action: z.enum(['create', 'reuse']).meta({ description: '"create": a pool owned by this job; "reuse": the existing pool.poolId.' }),
      vmSize: z.string().nullable(),
      nodes: z.number().meta({ description: "Nodes the job asks for (the MPI task's numberOfInstances)." }),
      minNodes: z.number().meta({ description: 'Fewest nodes the job runs on when allocation falls short (pool.partialAllocation).' }),
      resizeTimeoutMinutes: z.number().meta({ description: 'How long allocation may take before the pipeline stops waiting.' }),
      deleteAfter: z.enum(['always', 'onSuccess', 'never']).meta({ description: 'When cleanup deletes the pool (never for a reused pool).' }),
      plane: z.enum(['data', 'management']).nullable().meta({
        description:
          'Where the pool is created: "data", Pool_Add on the Batch account (REST API 2022-10-01.16.0); "management", Pools_Create through Resource Manager (api-version 2023-11-01) carrying the pool identity (settings.poolIdentity). null for a reused pool.',
      }),
      request: z.record(z.string(), z.unknown()).nullable().meta({
        description:
          "The pool exactly as it is sent, with placeholders where a value is only known at run time: Pool_Add's body on the data plane; on the management plane the body of PUT …/batchAccounts/<account>/pools/<poolId> (Resource Manager's envelope: identity, properties), as @azure/arm-batch 9.1.0 sends it. null for a reused pool.",
      }),
      startTaskFiles: z.array(StorageRef.extend({ blob: z.string(), path: z.string(), sasMinutes: z.number().nullable() })).meta({
        description:
          "The start task's files: each blob is downloaded through a read-only SAS URL living sasMinutes, or, with a pool identity, through its plain URL read with that identity (sasMinutes null).",
      }),
      mounts: z
        .array(
          z.object({
            name: z.string(),
            kind: z.enum(['nfs', 'azureFiles', 'blobfuse', 'cifs', 'azureFilesNfs', 'netappFiles', 'lustre']),
            path: z
              .string()
              .meta({ description: 'Where every node sees it: $AZ_BATCH_NODE_MOUNTS_DIR/<name>, or its fixed path (bind-mounted by the start task).' }),
            credential: z.string().meta({ description: 'What the mount authenticates with (never the secret itself).' }),
            access: z.enum(['readOnly', 'readWrite']).optional(),
            atJobEnd: z.string().optional().meta({ description: 'What happens to the mount and its data when the job ends.' }),
          }),
        )
        .meta({
          description:
            "File systems on every node: the request's mountConfiguration, and Lustre and fixed paths made by the start task (pool.request.startTask).",
        }),
      reuseChecks: z
        .array(z.string())
        .meta({ description: 'What a reused pool must satisfy, checked before anything runs on it (empty when the job creates its pool).' }),
      facts: z
        .object({
          source: z.enum(['account', 'offline']).meta({
            description:
              '"account": read from the Batch account (the dry run); "offline": the built-in VM size table, which knows cores and families but not what a region offers.',
          }),
          account: z
            .string()
            .nullable()
            .meta({ description: 'The Batch account the facts are of (with several accounts: the one whose facts the pool passed), null offline.' }),
          location: z.string().nullable(),
          readAt: z
            .object({ images: z.string().nullable(), sizes: z.string().nullable(), quota: z.string().nullable() })
            .meta({ description: 'When each part was read from the account (ISO), null when it was not.' }),
          ageSeconds: z.object({ images: z.number().nullable(), sizes: z.number().nullable(), quota: z.number().nullable() }).meta({
            description:
              'How old each part was when the dry run used it (seconds; the facts are shared by every instance through the AccountFacts table), null when not read.',
          }),
          vmSize: z
            .object({
              name: z.string(),
              family: z.string(),
              vCPUs: z.number(),
              memoryGiB: z.number().nullable(),
              gpus: z.number().nullable(),
              rdma: z.boolean().nullable(),
            })
            .nullable()
            .meta({ description: "The pool's VM size as the facts know it, null when they do not." }),
        })
        .optional()
        .meta({ description: 'The Azure facts the pool was checked against (docs/azure-facts.md).' }),
    }),
    batchJob: z.object({
      batchJobId: z.string(),
      request: BatchBody('The Batch job (Job_Add) with its preparation and release tasks'),
      autoComplete: z
        .object({
          request: BatchBody('The patch (Job_Patch) that makes the job terminate itself when its tasks are complete'),
          after: z
            .enum(['mpiTaskAdded', 'nodeUploadsDone'])
            .meta({ description: 'When it is sent: right after the MPI task is added, or after the node upload tasks.' }),
        })
        .nullable()
        .meta({ description: 'Null when cleanup.autoComplete is false: the job stays active until cleanup terminates it.' }),
    }),
    imagePulls: z
      .object({
        runtime: z.enum(['docker', 'singularity']),
        images: z.array(
          z.object({
            image: z.string().meta({ description: 'The reference, or blob:<account>/<container>/<blob> for a SIF file in blob storage.' }),
            source: z.enum(['registry', 'blob']),
            pulledAs: z
              .string()
              .meta({ description: 'docker: the reference docker pulls; singularity: the URI singularity pulls, or the downloaded SIF file.' }),
            sifPath: z.string().nullable().meta({ description: "singularity: the job's SIF file on every node (what the ranks run)." }),
          }),
        ),
        nodes: z.number(),
        concurrency: z.number().meta({ description: 'At most this many nodes pull at the same time (container.pullConcurrency).' }),
        maxAttempts: z.number(),
        blobSasMinutes: z.number().nullable().meta({ description: 'Life of the SAS URLs of SIF blobs (null without any).' }),
        task: NodeTaskTemplate('pull'),
        distribution: z.enum(['peers', 'registry']).meta({
          description:
            'container.imageDistribution: "peers": only the first `concurrency` nodes (the seeds) run `task`; every other node runs `peerCopy` from a node that holds the images. "registry": every node runs `task`, `concurrency` at a time.',
        }),
        peerCopy: NodeTaskTemplate('peer copy')
          .nullable()
          .meta({ description: 'The copy a non-seed node runs (null with distribution "registry"): from the source node the image tree picks at run time.' }),
      })
      .nullable()
      .meta({ description: 'The image pulls (null for container.runtime none or no image).' }),
    staging: z.object({
      inputs: z.array(StorageRef.extend({ prefix: z.string() })),
      shardSizeMB: z.object({ min: z.number(), max: z.number() }),
      recordBytes: z.number(),
      stagingAccounts: z.array(z.string()).meta({ description: "Where shards are copied (data.stagingAccounts, else the deployment's)." }),
      container: z.string().meta({ description: "The job's staging container in each of those accounts." }),
      destination: z.string().meta({ description: 'Where every node holds its shards ($MPIJOB_DATA_DIR).' }),
      shards: z.string().meta({ description: 'The shard plan: made from the listing of the inputs when the job runs.' }),
      sasMinutes: z.number().meta({ description: "Life of the shards' read-only SAS URLs." }),
      keepStagedData: z.boolean(),
      concurrency: z.number().meta({ description: 'Nodes downloading at the same time.' }),
      task: NodeTaskTemplate('shard download'),
    }),
    nodeFiles: z
      .array(
        z.object({
          source: z.string().meta({ description: 'url:<https URL>, blob:<account>/<container>/<blob> or prefix:<account>/<container>/<prefix>.' }),
          path: z.string().meta({ description: "Where it lands, relative to the ranks' working directory." }),
          fileMode: z.string().nullable(),
          sasMinutes: z.number().nullable().meta({ description: 'Life of the SAS URL the pipeline mints (null for a url).' }),
        }),
      )
      .meta({ description: "Files every node downloads before its coordination step (the MPI task's commonResourceFiles)." }),
    scratch: z
      .object({
        kind: z.enum(['masterNfs', 'mount', 'beeond']),
        directory: z.string().meta({ description: 'The directory as a shell expression, the same on every node ($MPIJOB_SCRATCH without a fixed path).' }),
        mount: z.string().nullable(),
        path: z
          .string()
          .nullable()
          .optional()
          .meta({ description: 'The fixed path every node also sees it at (scratch.path, bind-mounted; then $MPIJOB_SCRATCH), or null.' }),
      })
      .nullable()
      .meta({ description: "The job's shared scratch: set up first in the coordination step, removed by the job release task." }),
    mpiTask: z.object({
      taskId: z.string(),
      numberOfInstances: z.number(),
      mpiRuntime: z.string(),
      mpiVersion: z.string().nullable(),
      fabric: z.enum(['rdma', 'tcp']).meta({ description: 'The fabric the preset uses (mpi.fabric "auto" resolved for the VM size).' }),
      preset: z
        .object({
          family: z.string().meta({ description: 'The preset family (intelmpi-2018, intelmpi-2019, openmpi-4, openmpi-5, mpich-3, mpich-4, mvapich2).' }),
          reason: z.string().meta({ description: 'Why this family and fabric: the declared mpi.version (or the default generation) and the VM size.' }),
        })
        .optional()
        .meta({ description: 'The MPI generation the fabric settings follow (docs/images.md, "MPI generations").' }),
      imageEvidence: z
        .object({
          image: z.string(),
          digest: z.string().nullable().meta({ description: 'The manifest digest read, or null when the registry could not be read.' }),
          evidence: z.string().nullable().meta({ description: 'The label or variable the generation was read from (`Env I_MPI_ROOT=…`), or null.' }),
          note: z.string().meta({ description: 'What the image said and what the job does with it (the sentence the timeline gets).' }),
        })
        .optional()
        .meta({ description: "Online dry run of a container job without mpi.version: the MPI evidence read from the image's registry (docs/images.md)." }),
      launcher: z.enum(['managed', 'custom']),
      processesPerNode: z.union([z.number(), z.string()]),
      ranks: z.union([z.number(), z.string()]).meta({ description: 'nodes × processesPerNode, or how it is counted on the master.' }),
      containerRunOptions: z.array(z.string()).nullable().meta({ description: 'docker: the options of the container started on every node.' }),
      request: BatchBody(
        'The multi-instance MPI task (Task_Add): coordination and application command lines, environment settings, commonResourceFiles, outputFiles',
      ),
    }),
    outputs: z
      .object({
        account: z.string(),
        container: z.string(),
        prefix: z.string(),
        when: z.enum(['always', 'success', 'failure']),
        logs: z.boolean(),
        onUploadFailure: z.enum(['report', 'fail']),
        sasMinutes: z.number().meta({ description: "Life of the create/write SAS on the outputs' container." }),
        nodeUploads: z
          .object({
            master: BatchBody('The upload task of the master node (Task_Add), for the outcome in which files are uploaded').nullable(),
            otherNodes: BatchBody('The upload task of every other node (Task_Add), for the outcome in which files are uploaded').nullable(),
          })
          .nullable()
          .meta({
            description: 'The per-node upload tasks after the MPI task (null when nothing comes from the nodes): one per node, id up-<node index>-a<attempt>.',
          }),
      })
      .nullable()
      .meta({ description: "What outlives the pool (null without outputs). The master's files are the MPI task's own outputFiles." }),
    scheduling: z
      .object({
        queue: z.string().meta({ description: 'The admission queue the job waits in (spec queue, else "default").' }),
        priority: z.number().meta({ description: 'Its priority in that queue (higher first).' }),
        dependsOn: z
          .array(z.object({ job: z.string(), condition: z.enum(['succeeded', 'finished']) }))
          .meta({ description: 'Jobs that must end first (and how) before this one is admitted.' }),
        array: z
          .object({
            jobs: z.number().meta({ description: 'How many jobs the array runs.' }),
            firstJobId: z.string(),
            lastJobId: z.string(),
            shownJobId: z.string().meta({
              description:
                "The array's job whose requests this document shows (its first); the others differ in their ids and MPIJOB_ARRAY_INDEX / MPIJOB_ARRAY_PARAM.",
            }),
          })
          .nullable()
          .meta({ description: 'An array: its jobs run as jobs of their own, "<id>-<index>" (null for a single job).' }),
        placement: z
          .object({
            account: z
              .string()
              .nullable()
              .meta({ description: 'The Batch account the job would be placed on now (null: none has the quota free; it would wait).' }),
            reason: z.string(),
            accounts: z
              .array(
                z.object({
                  account: z.string(),
                  blocked: z.string().optional(),
                  freeCores: z.number().optional(),
                  jobs: z.number(),
                  pricePerNodeHour: z.number().optional(),
                  estimatedCost: z.number().optional(),
                  withinBudget: z.boolean(),
                  spotFree: z.boolean().optional(),
                  localStaging: z.number(),
                }),
              )
              .meta({ description: 'Each account as placement weighed it (docs/scheduling.md, "Placement over several Batch accounts").' }),
          })
          .optional()
          .meta({ description: 'A dry run on a deployment with several Batch accounts: where admission would place the job if it let it start now.' }),
      })
      .meta({ description: 'How the job is queued and admitted before its pool is created (docs/scheduling.md).' }),
    preflight: z
      .object({
        taskIds: z.string().meta({ description: "The check's task ids: preflight-<attempt>-<round>." }),
        rounds: z.number().meta({ description: 'Checks after replacing bad nodes before the attempt fails (preflight.rounds).' }),
        maxSshMs: z.number(),
        minFreeMB: z.number(),
        runsPreExecutionCommand: z.boolean(),
        pingPong: z
          .object({ enabled: z.boolean(), maxLatencyUs: z.number().nullable(), minBandwidthMBps: z.number().nullable() })
          .meta({ description: 'The MPI ping-pong between node pairs and the thresholds a node is judged by (null: recorded, not judged).' }),
        request: BatchBody("The preflight check (Task_Add): a multi-instance task, one rank per node, with the MPI task's launcher, fabric and files"),
      })
      .nullable()
      .meta({ description: 'The check of the nodes before the MPI task (null when preflight.enabled is false).' }),
    retry: z
      .object({
        maxAttempts: z.number().meta({ description: 'Attempts in all, the first included (retry.maxAttempts).' }),
        on: z.array(z.string()).meta({ description: 'Failure classes retried on replaced nodes.' }),
        exitCodes: z.array(z.number()).meta({ description: 'MPI exit codes retried.' }),
        backoffSeconds: z.object({ initial: z.number(), max: z.number() }),
      })
      .meta({ description: 'Retries by failure class: each attempt replaces the failed nodes and runs under its own task ids (docs/scheduling.md#attempts).' }),
    limits: z.object({
      mpiMaxWallClockSeconds: z.number().nullable(),
      maxRetries: z.number(),
      pipelineBudgetMinutes: z.number().meta({ description: 'The pipeline gives up after this long from its start.' }),
    }),
    cost: z
      .object({
        vmSize: z.string().nullable(),
        nodes: z.number(),
        currency: z.string(),
        pricePerNodeHour: z.number().nullable().meta({ description: 'Price of one node-hour (null when no price is known for the size).' }),
        perHour: z.number().nullable().meta({ description: 'nodes × price: what every hour of the pool costs.' }),
        worstCase: z.number().nullable().meta({
          description:
            'The most the job can cost while it runs: nodes × price × wall clock × attempts, or less where maxNodeHours or maxCost stops it first. Allocation and staging before the MPI task are billed on top.',
        }),
        boundBy: z.enum(['maxWallClock', 'maxNodeHours', 'maxCost']).nullable().meta({ description: 'The limit that sets the worst case.' }),
        wallClockHours: z.number().meta({ description: "The hours the worst case counts: the MPI task's wall clock × the attempts." }),
        maxCost: z.object({ amount: z.number(), currency: z.string() }).nullable().meta({ description: 'limits.maxCost as the spec gives it.' }),
        priceSource: z.string().meta({
          description:
            'Where the price comes from and as of when: the Azure Retail Prices API (region, meter, effective and fetched dates), or the fallback table, marked as such.',
        }),
        priceAsOf: z.string().nullable().meta({ description: 'The day the price is stated for (YYYY-MM-DD).' }),
        fallback: z.boolean().meta({ description: "True when the price is the built-in or configured table's, not the Retail Prices API's." }),
        notes: z.array(z.string()),
        spot: z
          .object({
            nodes: z.number().meta({ description: 'pool.spot.nodes: the Spot nodes of the pool.' }),
            spotPricePerNodeHour: z.number().nullable().meta({
              description:
                "The Retail Prices API's Spot (else Low Priority) price of one node-hour; null when none is known (the Spot nodes are then priced as dedicated ones).",
            }),
            perHour: z
              .number()
              .nullable()
              .meta({ description: 'What every hour of the pool costs with its Spot nodes: Spot nodes × Spot price + the rest × the dedicated price.' }),
            perHourAllDedicated: z
              .number()
              .nullable()
              .meta({ description: 'The same pool on dedicated nodes only (what pool.spot.fallback "dedicated" runs on): nodes × the dedicated price.' }),
          })
          .optional()
          .meta({
            description:
              'With pool.spot: both estimates, Spot and dedicated. worstCase above counts every node at the dedicated price (a fallback may run there).',
          }),
      })
      .meta({
        description:
          "What the job may cost (docs/operations.md#cost): its rate and worst case with the price's source; a dry run prices it with this deployment's prices, an offline explain with the built-in fallback table.",
      }),
    nodeImage: z
      .object({
        id: z
          .string()
          .nullable()
          .meta({ description: "The image catalog entry (docs/images.md); null when the pool's image is not in the catalog (nothing checked)." }),
        summary: z.string().nullable().meta({ description: 'Its MPI modules and container runtimes, with the source of the facts.' }),
        mode: z.enum(['refuse', 'warn']).meta({ description: 'checks.image: what a finding does.' }),
        findings: z
          .array(
            z.object({
              path: z.string(),
              kind: z.enum(['module', 'path', 'runtime', 'scratch']),
              name: z.string(),
              message: z.string(),
              suggestion: z.string().nullable(),
            }),
          )
          .meta({ description: 'What the spec uses that the image lacks (only with checks.image "warn": with "refuse" such a spec is refused).' }),
        notes: z.array(z.string()),
      })
      .optional()
      .meta({ description: 'The node image checks: module names, host paths and the container runtime against the image catalog.' }),
    notes: z.array(z.string()).meta({ description: 'Facts worth knowing about this job that the requests do not show.' }),
  })
  .meta({ title: 'ExplainDocument' });

export type ExplainDocument = z.output<typeof ExplainDocumentSchema>;
export type ExplainSettings = z.output<typeof ExplainSettingsSchema>;
