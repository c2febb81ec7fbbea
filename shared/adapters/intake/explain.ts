/**
 * What the pipeline would send to Batch for a job, without sending anything: the explain document
 * (shared/core/contract/explain.ts) behind `hpcjob explain` and `POST /api/jobs?dryRun=true`. Pure. Every request body
 * comes from the builders the pipeline runs (planJob, mpiTaskRequest, pullTask, releaseTaskCommand, the workload-data
 * planners, the mappings of batchRequests.ts and the Batch adapter's build*Parameter), called with placeholders where
 * a value exists only at run time (node ids, SAS URLs, secrets, the shard plan), so it cannot drift from what runs.
 */
import { checkImage, DEFAULT_IMAGE_CHECK_MODE, imageSummary } from '../../core/images/imageChecks';
import type { DeclaredCustomImage } from '../../core/images/catalog';
import { presetChoice } from '../../core/mpi/generation';
import { jobSecrets, plainEnv } from '../../core/planning/secretEnv';
import { buildJobAddParameter, AUTO_TERMINATE_PATCH } from '../batch/jobs';
import { buildMpiTaskParameter } from '../batch/mpiTask';
import { buildPoolAddParameter } from '../batch/pools';
import { armPoolRequestBody, buildArmPool } from '../batch/armPools';
import { buildNodeTaskParameter } from '../batch/tasks';
import type { NodeTaskRequest, SecretEnvironmentRef } from '../../core/contract/activities';
import { EXPLAIN_VERSION, type ExplainDocument, type ExplainSettings } from '../../core/contract/explain';
import { buildMpiTaskCommands } from '../../core/mpi/commands';
import { REGISTRY_SECRET_ENV } from '../../core/mpi/registryLogin';
import { resolveFabric } from '../../core/mpi/rdmaPresets';
import { scratchDirExpression } from '../../core/mpi/sharedScratch';
import { sifPathExpr, singularityUri } from '../../core/mpi/singularity';
import { resolveDestination } from '../../core/spec/normalize';
import type { JobSpec } from '../../core/spec/schema';
import {
  IMAGE_SAS_MINUTES,
  batchJobSpec,
  batchMountRequests,
  blobfusePermissions,
  jobPoolSpec,
  mountSasLifetimeMs,
  mountSpec,
  nodeResourceFile,
  nodeTaskId,
  nodeTaskSpec,
  pullNodeTask,
  shardDownloadConcurrency,
  shardDownloadTask,
  shardSasLifetimeMs,
  startTaskResourceFile,
  startTaskSasMinutes,
  uploadTaskRequest,
  type MountCredentials,
} from '../../core/planning/batchRequests';
import { planJob, stagingContainerFor, type JobPlan } from '../../core/planning/jobPlan';
import { mountServerSource } from '../../core/planning/nodeFilesystems';
import { preflightTaskId, preflightTaskRequest, preflightThresholds } from '../../core/planning/preflight';
import { healthChecksForPool } from '../../core/planning/health';
import { retryPolicyFor } from '../../core/planning/retryPolicy';
import { expandArray } from '../../core/scheduling/arrays';
import { DEFAULT_QUEUE } from '../../core/spec/sections/scheduling';
import { PlanningError } from '../../core/planning/errors';
import { costEstimate, spotEstimate } from '../../core/ops/priceQuote';
import type { PriceQuote } from '../../core/ops/cost';
import {
  imageBlobs,
  imageLabel,
  mpiTaskInput,
  mpiTaskRequest,
  peerCopyTask,
  pullTask,
  releaseTaskCommand,
  seedPullTask,
  type MpiTaskUrls,
  type PullTaskShape,
  sifCacheKeyFor,
} from '../../core/planning/mpiTaskRequest';
import {
  mountRequests,
  needsNodeUploads,
  nodeFileSources,
  nodeSasLifetimeMs,
  nodeUploadTask,
  outputsPlan,
  scratchOf,
  type MountRequest,
  type OutputsPlan,
} from '../../core/planning/workloadData';

/** How a `files[].prefix` entry's URL reads in the document: it stands for one resource file per blob under the prefix. */
export const PER_BLOB_SAS = 'one read-only SAS URL per blob';

/** A value filled in when the job runs. */
export const runTime = (what: string): string => `<run-time: ${what}>`;
/** A value of the deployment, unknown to an offline explain. */
export const deploymentValue = (what: string): string => `<deployment: ${what}>`;
/** What a task that reads Key Vault secrets gets from the activity, as the document shows it (secretEnv.ts). */
export const EXPLAIN_KEY_VAULT_ACCESS = {
  clientId: deploymentValue('pool identity client id (POOL_IDENTITY_CLIENT_ID)'),
  urlTemplate: deploymentValue('vault URL template (KEY_VAULT_URL_TEMPLATE, https://{vault}.vault.azure.net by default)'),
};
/** Finds every placeholder in a text. */
export const PLACEHOLDER_RE = /<(?:run-time|deployment): [^<>]*>/g;

/**
 * The peer copy task with the source node left open: built for a stand-in node and address (TEST-NET-1, never a
 * pool's), which then become placeholders, so the template is the very builder's output.
 */
function explainedPeerCopy(jobId: string, spec: JobSpec): PullTaskShape {
  const t = peerCopyTask(jobId, spec, { nodeId: 'mpijob-explain-source', ipAddress: '192.0.2.1' }, undefined, 987654321);
  const open = (line: string, sentinel: string, what: string) => line.split(sentinel).join(runTime(what));
  let commandLine = open(t.commandLine, 'mpijob-explain-source', 'source node id');
  commandLine = open(commandLine, '192.0.2.1', 'source node address');
  commandLine = open(commandLine, '987654321', 'copies the source serves before this one');
  return { ...t, commandLine };
}

export interface ExplainInput {
  jobId: string;
  jobIdFrom: ExplainDocument['jobIdFrom'];
  spec: JobSpec;
  settings: ExplainSettings;
  /** Whether the deployment's data-access and container policies were applied to the spec. */
  policiesChecked: boolean;
  /** The submitter's owner id, recorded on the pool the job creates (unknown offline: a placeholder). */
  owner?: string;
  /** The node price the cost estimate uses (the deployment's on a dry run, the fallback table offline). */
  price?: PriceQuote;
  /** The deployment's custom node images (NODE_IMAGES_CUSTOM) for the node image checks; unknown offline. */
  customNodeImages?: readonly DeclaredCustomImage[];
}

/** The node image checks for explain: the catalog entry, the mode, and what the spec uses that the image lacks. */
function explainNodeImage(spec: JobSpec, custom: readonly DeclaredCustomImage[] | undefined): ExplainDocument['nodeImage'] {
  const r = checkImage(spec, custom ?? []);
  return {
    id: r.image?.id ?? null,
    summary: r.image ? imageSummary(r.image) : null,
    mode: spec.checks?.image ?? DEFAULT_IMAGE_CHECK_MODE,
    findings: r.findings.map((f) => ({ path: f.path, kind: f.kind, name: f.name, message: f.message, suggestion: f.suggestion ?? null })),
    notes: r.notes,
  };
}

/** The wall clock a spec without one gets at intake, unless the deployment sets DEFAULT_MAX_WALL_CLOCK_HOURS. */
const DOCUMENTED_DEFAULT_WALL_CLOCK_HOURS = 24;

/** The cost section: the job's rate and worst case at `price`. */
export function explainCost(
  spec: JobSpec,
  nodes: number,
  reusesPool: boolean,
  attempts: number,
  mpiMaxWallClockSeconds: number | undefined,
  price: PriceQuote | undefined,
): ExplainDocument['cost'] {
  const wallMinutes = mpiMaxWallClockSeconds !== undefined ? mpiMaxWallClockSeconds / 60 : DOCUMENTED_DEFAULT_WALL_CLOCK_HOURS * 60;
  const estimate = costEstimate({
    vmSize: reusesPool ? undefined : spec.pool.vmSize,
    nodes,
    wallClockMinutes: wallMinutes * attempts,
    maxNodeHours: spec.limits.maxNodeHours,
    maxCost: spec.limits.maxCost,
    quote: reusesPool ? undefined : price,
  });
  const notes = [...estimate.notes];
  if (mpiMaxWallClockSeconds === undefined)
    notes.push(
      `no limits.maxWallClock: counted at the documented default of ${DOCUMENTED_DEFAULT_WALL_CLOCK_HOURS} h (the deployment's DEFAULT_MAX_WALL_CLOCK_HOURS applies at submission)`,
    );
  if (attempts > 1) notes.push(`counted for all ${attempts} attempts (retry.maxAttempts), each up to the wall clock`);
  const { vmSize, currency, pricePerNodeHour, perHour, worstCase, boundBy, wallClockHours, maxCost, priceSource, priceAsOf, fallback } = estimate;
  // pool.spot: both rates; the worst case stays at the dedicated price, which a fallback may run at.
  const spot = spec.pool.spot && !reusesPool ? spotEstimate(nodes, spec.pool.spot.nodes, price) : undefined;
  if (spot && pricePerNodeHour !== null && spot.spotPricePerNodeHour === null)
    notes.push('no Spot price known for the size: its Spot nodes are priced as dedicated ones');
  return {
    vmSize,
    nodes: estimate.nodes,
    currency,
    pricePerNodeHour,
    perHour,
    worstCase,
    boundBy,
    wallClockHours,
    maxCost,
    priceSource,
    priceAsOf,
    fallback,
    notes,
    ...(spot ? { spot } : {}),
  };
}

type Json = Record<string, unknown>;
/** The request body as plain JSON (what the SDK serializes: undefined fields dropped). */
const plain = (value: unknown): Json => JSON.parse(JSON.stringify(value)) as Json;
const minutes = (ms: number) => Math.round(ms / 60_000);

const NODE_INDEX = runTime('node index');
const ATTEMPT = runTime('attempt');
const NODE_AFFINITY = runTime("the node's affinity id");

/** A registry secret as a dry run shows it: which app setting the activity reads it from, never its value. */
const secretPlaceholder = (s: SecretEnvironmentRef): string => runTime(`the registry secret of ${s.server} in app setting ${s.setting}`);

/** A node task as it is added for one node (id and affinity left open), as Batch receives it. */
function nodeTaskBody(prefix: string, task: Omit<NodeTaskRequest, 'id' | 'affinityId'>): Json {
  return plain(buildNodeTaskParameter(nodeTaskSpec({ id: nodeTaskId(prefix, NODE_INDEX, ATTEMPT), affinityId: NODE_AFFINITY, ...task }, secretPlaceholder)));
}

/**
 * The pool identity a run would use: the deployment's; offline (or on a deployment without one) a job whose registry
 * signs in with the managed identity can only run where there is one, so it is shown with its settings left open.
 */
function poolIdentityFor(spec: JobSpec, settings: ExplainSettings): { resourceId: string; clientId: string; open: boolean } | null {
  if (settings.poolIdentity) return { ...settings.poolIdentity, open: false };
  if (spec.container.registry?.identity === 'managed' && spec.container.runtime !== 'none') {
    return {
      resourceId: deploymentValue('pool identity (POOL_IDENTITY_RESOURCE_ID)'),
      clientId: deploymentValue('pool identity client id (POOL_IDENTITY_CLIENT_ID)'),
      open: true,
    };
  }
  return null;
}

function mountCredentials(m: MountRequest, settings: ExplainSettings, validForMs: number | undefined): MountCredentials {
  if (m.cifs) return { secret: runTime(`the password in app setting MOUNT_SECRET_${m.cifs.secretRef}`) };
  if (m.azureFiles) {
    return {
      azureFileUrl: runTime(`the URL of file share ${m.azureFiles.account}/${m.azureFiles.share}`),
      secret: runTime(`the account key in app setting MOUNT_SECRET_${m.azureFiles.secretRef}`),
    };
  }
  if (m.blobfuse) {
    const life = minutes(mountSasLifetimeMs(validForMs, settings));
    return { sasToken: runTime(`SAS token (${blobfusePermissions(m)}) on container ${m.blobfuse.account}/${m.blobfuse.container}, valid ${life} minutes`) };
  }
  return {};
}

function mountSummary(m: MountRequest): ExplainDocument['pool']['mounts'][number] {
  const base = `$AZ_BATCH_NODE_MOUNTS_DIR/${m.name}`;
  const path = m.path ? `${m.path} (bind-mounted by the start task from ${base})` : base;
  const extra = { access: m.readOnly || m.blobfuse?.readOnly ? ('readOnly' as const) : ('readWrite' as const), atJobEnd: atJobEnd(m) };
  return { ...mountSummaryOf(m, path), ...extra };
}

/** What happens to a mount's data when the job ends (docs/job-spec.md, "Mounts"). */
function atJobEnd(m: MountRequest): string {
  if (m.blobfuse) return 'unmounted with the pool; the files stay in the blob container';
  return 'unmounted with the pool (or kept mounted while a kept pool lives); the files stay on the file server';
}

function mountSummaryOf(m: MountRequest, path: string): Omit<ExplainDocument['pool']['mounts'][number], 'access' | 'atJobEnd'> {
  if (m.nfs) return { name: m.name, kind: 'nfs', path, credential: `none (NFS ${m.nfs.source}: network rules guard it)` };
  if (m.azureFilesNfs)
    return { name: m.name, kind: 'azureFilesNfs', path, credential: `none (NFS 4.1 ${mountServerSource(m)}: the virtual network is the authentication)` };
  if (m.netappFiles)
    return {
      name: m.name,
      kind: 'netappFiles',
      path,
      credential: `none (NFS ${mountServerSource(m)}: the volume's export policy and the virtual network guard it)`,
    };
  if (m.lustre)
    return {
      name: m.name,
      kind: 'lustre',
      path,
      credential: `none (Lustre ${m.lustre.mgs}@tcp:/${m.lustre.fsname}, mounted by the start task: the virtual network guards it)`,
    };
  if (m.cifs) return { name: m.name, kind: 'cifs', path, credential: `user ${m.cifs.username}, password from app setting MOUNT_SECRET_${m.cifs.secretRef}` };
  if (m.azureFiles) return { name: m.name, kind: 'azureFiles', path, credential: `account key from app setting MOUNT_SECRET_${m.azureFiles.secretRef}` };
  const b = m.blobfuse as NonNullable<MountRequest['blobfuse']>;
  return { name: m.name, kind: 'blobfuse', path, credential: `a SAS (${blobfusePermissions(m)}) on ${b.account}/${b.container} minted at pool creation` };
}

/** What a pool named by pool.poolId must be (provisionPolicy.checkReusablePool). */
function reuseChecks(spec: JobSpec): string[] {
  return [
    // Pools have owners (shared/core/intake/poolAccess.ts): judged at submission and again when the job is placed on the pool.
    "the pool is the submitter's own (its metadata names the submitter), or shared with the submitter (SHARED_POOLS), or the submitter is an admin",
    'the pool exists and is active',
    'inter-node communication is enabled (multi-instance tasks need it)',
    'taskSlotsPerNode is 1',
    ...(spec.pool.vmSize ? [`its VM size is ${spec.pool.vmSize}`] : []),
    `it has at least ${spec.pool.nodes} idle node(s)`,
  ];
}

/** The image pulls section: one task per node (or the image tree's seed and peer copies), as the activity adds it. */
function explainImagePulls(input: ExplainInput, plan: JobPlan, identity: ReturnType<typeof poolIdentityFor>): ExplainDocument['imagePulls'] {
  const { jobId, spec, settings } = input;
  const runtime = spec.container.runtime;
  if (runtime === 'none' || !spec.container.images.length) return null;
  const blobs = imageBlobs(spec);
  const blobSas = Math.min(settings.sasMaxLifetimeMinutes, IMAGE_SAS_MINUTES);
  const blobUrls = blobs.map((b) => runTime(`read-only SAS URL of SIF blob ${b.account}/${b.container}/${b.blob}, valid ${blobSas} minutes`));
  // An open client id (offline) cannot go through the sign-in lines' checks: a stand-in does, then shows as the placeholder.
  const STAND_IN_CLIENT_ID = '00000000-0000-4000-8000-0000000c11e7';
  const clientId = identity?.open ? STAND_IN_CLIENT_ID : identity?.clientId;
  // With the image tree, this is what a seed runs (the first pullConcurrency nodes); the others copy from peers.
  const task =
    spec.container.imageDistribution === 'registry' ? pullTask(jobId, spec, blobUrls, clientId) : seedPullTask(jobId, spec, blobUrls, undefined, clientId);
  const pullRequest = nodeTaskBody('pull', pullNodeTask(task));
  return {
    runtime,
    images: spec.container.images.map((image, index) => ({
      image: imageLabel(image),
      source: typeof image === 'string' ? 'registry' : 'blob',
      pulledAs:
        runtime === 'docker'
          ? (image as string)
          : typeof image === 'string'
            ? singularityUri(image)
            : 'the SIF file, downloaded as a resource file of the pull task',
      sifPath: runtime === 'singularity' ? sifPathExpr(sifCacheKeyFor(jobId), index) : null,
    })),
    nodes: plan.nodes,
    concurrency: spec.container.pullConcurrency,
    maxAttempts: settings.nodeTaskMaxAttempts,
    blobSasMinutes: blobs.length ? blobSas : null,
    task: {
      perNode: true,
      request: identity?.open ? (JSON.parse(JSON.stringify(pullRequest).replaceAll(STAND_IN_CLIENT_ID, identity.clientId)) as Json) : pullRequest,
    },
    distribution: spec.container.imageDistribution,
    peerCopy:
      spec.container.imageDistribution === 'registry' ? null : { perNode: true, request: nodeTaskBody('pull', pullNodeTask(explainedPeerCopy(jobId, spec))) },
  };
}

/** The staging section: the inputs sharded over the staging accounts and one download task per node into `destination`. */
function explainStaging(input: ExplainInput, plan: JobPlan, destination: string): ExplainDocument['staging'] {
  const { jobId, spec, settings } = input;
  const inputs = spec.data.inputs;
  return {
    inputs: inputs.map((i) => ({ account: i.account, container: i.container, prefix: i.prefix })),
    shardSizeMB: { ...spec.data.shardSizeMB },
    recordBytes: spec.data.recordBytes,
    stagingAccounts: spec.data.stagingAccounts.length ? [...spec.data.stagingAccounts] : [...settings.stagingAccounts],
    container: stagingContainerFor(jobId),
    destination,
    shards: inputs.length
      ? runTime(
          `shards of ${spec.data.shardSizeMB.min}–${spec.data.shardSizeMB.max} MB planned from the listing of the inputs, spread over the staging accounts, contiguous runs per node`,
        )
      : 'none (no inputs): every node still gets its (empty) data directory',
    sasMinutes: minutes(shardSasLifetimeMs(spec, settings)),
    keepStagedData: plan.keepStagedData,
    concurrency: shardDownloadConcurrency(plan.nodes, spec.container.pullConcurrency),
    task: {
      perNode: true,
      request: nodeTaskBody(
        'dl',
        shardDownloadTask(destination, inputs.length ? [{ shardId: runTime('shard id'), url: runTime("read-only SAS URL of each of the node's shards") }] : []),
      ),
    },
  };
}

/** What the requests alone do not say: partial allocation, counted ranks, a reused pool, registry sign-in, secrets, licences, image checks, cleanup, uploads. */
function explainNotes(
  input: ExplainInput,
  plan: JobPlan,
  identity: ReturnType<typeof poolIdentityFor>,
  outputs: OutputsPlan | undefined,
  uploadsFollow: boolean,
): string[] {
  const { spec } = input;
  const notes: string[] = [];
  const runtime = spec.container.runtime;
  const ppn = spec.mpi.processesPerNode;
  if (plan.minNodes < plan.nodes) {
    notes.push(`pool.partialAllocation: the MPI task spans the nodes that are ready, ${plan.minNodes} to ${plan.nodes}; the requests show ${plan.nodes}.`);
  }
  if (typeof ppn !== 'number') notes.push(`mpi.processesPerNode "${ppn}" is counted on the master when the task starts.`);
  if (plan.reusePool) notes.push(`pool.poolId: the job runs on the existing pool ${plan.poolId}, with its own start task and mounts; it is never deleted.`);
  const registry = runtime !== 'none' ? spec.container.registry : undefined;
  if (registry) {
    notes.push(
      registry.identity === 'managed'
        ? `container.registry (${registry.server}): the pull task signs in with the pool identity (its token from the node's instance metadata service, exchanged at the registry's /oauth2/exchange) and signs out after the pulls; ${plan.reusePool ? 'the reused pool must carry that identity' : 'the pool lists the registry with the identity (containerRegistries)'}.`
        : `container.registry (${registry.server}): the pull task signs in as ${registry.identity.username} with the secret in app setting ${registry.identity.secretRef}, which the activity puts in the pull task's environment (${REGISTRY_SECRET_ENV}) when it adds the task; never in a command line or the pool.`,
    );
  }
  if (identity?.open) {
    notes.push(
      'container.registry.identity "managed" needs a deployment with a pool identity (POOL_IDENTITY_*): the pool is shown as created through the management plane with it, its ids left open.',
    );
  }
  for (const f of jobSecrets(spec)) {
    notes.push(
      `${f.from}: Key Vault secret ${f.vault}/${f.name}${f.version ? `/${f.version}` : ''}, read on the master when the task starts with the pool identity and exported as ${f.env} to every rank by name; the value is never in a request, the job record or this document.`,
    );
  }
  if (spec.licenses.length) notes.push(`licenses: every rank gets LM_LICENSE_FILE=${plainEnv(spec).LM_LICENSE_FILE ?? ''}.`);
  for (const f of checkImage(spec, input.customNodeImages ?? []).findings) notes.push(`node image (checks.image warn): ${f.path}: ${f.message}`);
  if (!spec.cleanup.autoComplete)
    notes.push(
      "cleanup.autoComplete false: the Batch job is not set to terminate itself; it stays active after its tasks until the pipeline's cleanup terminates it.",
    );
  if (outputs && uploadsFollow) {
    notes.push(
      `outputs: the node upload tasks shown are those of a run that ${outputs.when === 'failure' ? 'failed' : 'succeeded'}; the master is whichever node Batch makes the primary.`,
    );
  }
  return notes;
}

/**
 * The node upload tasks, for the outcome in which the files are uploaded. The node id and the MPI task's directory
 * on the node go through the same checks as at run time with stand-ins, replaced by placeholders afterwards.
 */
function nodeUploads(plan: OutputsPlan, containerUrl: string): NonNullable<ExplainDocument['outputs']>['nodeUploads'] {
  const STAND_IN_NODE = 'mpijob-explain-node-id';
  const STAND_IN_DIR = 'mpijob-explain-task-dir';
  const exitCode = plan.when === 'failure' ? 1 : 0;
  const body = (isMaster: boolean): Json | null => {
    const upload = nodeUploadTask(plan, { id: STAND_IN_NODE, affinityId: NODE_AFFINITY, taskRootDirectory: STAND_IN_DIR, isMaster }, containerUrl, exitCode);
    if (!upload) return null;
    const text = JSON.stringify(plain(buildNodeTaskParameter(nodeTaskSpec(uploadTaskRequest(upload, NODE_INDEX, ATTEMPT)))));
    return JSON.parse(
      text.replaceAll(STAND_IN_NODE, runTime("the node's id")).replaceAll(STAND_IN_DIR, runTime("the MPI task's directory on the node, as Batch reports it")),
    ) as Json;
  };
  return { master: body(true), otherNodes: body(false) };
}

function placeholdersOf(doc: unknown): string[] {
  return [...new Set(JSON.stringify(doc).match(PLACEHOLDER_RE) ?? [])].sort();
}

export function explainJob(input: ExplainInput): ExplainDocument {
  // An array runs as jobs of its own: show the first, whose requests are what every other differs from only in ids
  // and the array variables.
  if (input.spec.array) {
    const expanded = expandArray(input.jobId, input.spec);
    if (!expanded.ok) throw new PlanningError(expanded.errors.map((e) => `${e.path}: ${e.message}`).join('; '));
    const [first] = expanded.children;
    const last = expanded.children[expanded.children.length - 1];
    const doc = explainOne({ ...input, jobId: first.id, spec: first.spec });
    doc.jobId = input.jobId;
    doc.scheduling.array = { jobs: expanded.children.length, firstJobId: first.id, lastJobId: last.id, shownJobId: first.id };
    doc.notes.unshift(
      `array: ${expanded.children.length} jobs ${first.id} … ${last.id}, each queued, admitted and run on its own pool; the requests shown are ${first.id}'s.`,
    );
    return doc;
  }
  return explainOne(input);
}

function explainOne(input: ExplainInput): ExplainDocument {
  const { jobId, spec, settings } = input;
  const plan = planJob(jobId, spec);

  // With a pool identity the pool comes from the management plane, as poolCreate does it (orchestrations/activities/pool.ts).
  const identity = poolIdentityFor(spec, settings);

  // ---- Batch job -----------------------------------------------------------------------------------------------
  const outputs = outputsPlan(spec, jobId);
  const uploadsFollow = needsNodeUploads(outputs, plan.nodes);
  const batchJobRequest = plain(
    buildJobAddParameter(batchJobSpec({ jobId, batchJobId: plan.batchJobId, poolId: plan.poolId, releaseCommandLine: releaseTaskCommand(jobId, spec) })),
  );

  // ---- image pulls ---------------------------------------------------------------------------------------------
  const imagePulls = explainImagePulls(input, plan, identity);

  // ---- staging -------------------------------------------------------------------------------------------------
  const destination = resolveDestination(spec, jobId, '$AZ_BATCH_NODE_SHARED_DIR');
  const staging = explainStaging(input, plan, destination);

  // ---- files, scratch, MPI task --------------------------------------------------------------------------------
  const nodeSasMinutes = minutes(nodeSasLifetimeMs(spec, settings));
  const files = nodeFileSources(spec);
  // A prefix becomes one resource file per blob under it, listed when the job starts (a read-only SAS for each).
  const commonResourceFiles = files.map((f) =>
    f.kind === 'url'
      ? nodeResourceFile(f, {})
      : f.kind === 'prefix'
        ? {
            httpUrl: runTime(
              `${PER_BLOB_SAS} under ${f.account}/${f.container}/${f.prefix} (one resource file each, listed when the job starts), valid ${nodeSasMinutes} minutes`,
            ),
            filePath: `${f.filePath}/${runTime("the blob's full name")}`,
            ...(f.fileMode === undefined ? {} : { fileMode: f.fileMode }),
          }
        : nodeResourceFile(f, { blobUrl: runTime(`read-only SAS URL of blob ${f.account}/${f.container}/${f.blob}, valid ${nodeSasMinutes} minutes`) }),
  );
  const outputsContainerUrl = spec.outputs
    ? runTime(`create/write SAS URL of container ${spec.outputs.account}/${spec.outputs.container}, valid ${nodeSasMinutes} minutes`)
    : undefined;
  const nodes = Array.from({ length: plan.nodes }, (_, i) => ({ id: runTime(`id of node ${i}`) }));
  const shape = mpiTaskRequest(plan, spec, nodes, destination, plan.batchJobId, { commonResourceFiles, outputsContainerUrl });
  const commands = buildMpiTaskCommands(mpiTaskInput(plan, spec, plan.nodes, destination));
  const scratch = scratchOf(spec, jobId);

  // ---- queue, preflight, retries -------------------------------------------------------------------------------
  // The same checks the orchestration gets (PipelineSettings.preflightHealthChecks), so the request shown is the one sent.
  const healthChecks = healthChecksForPool(settings.preflightHealthChecks ?? [], spec.pool.vmSize !== undefined || !spec.pool.poolId);
  const preflight = explainPreflight(input, plan, nodes, healthChecks, { commonResourceFiles, outputsContainerUrl });
  const retry = retryPolicyFor(spec);

  // ---- notes ---------------------------------------------------------------------------------------------------
  const notes = explainNotes(input, plan, identity, outputs, uploadsFollow);

  const doc: ExplainDocument = {
    version: EXPLAIN_VERSION,
    jobId,
    jobIdFrom: input.jobIdFrom,
    policiesChecked: input.policiesChecked,
    settings: { ...settings, stagingAccounts: [...settings.stagingAccounts] },
    placeholders: [],
    pool: explainPool(input, plan, identity),
    batchJob: {
      batchJobId: plan.batchJobId,
      request: batchJobRequest,
      autoComplete: spec.cleanup.autoComplete ? { request: plain(AUTO_TERMINATE_PATCH), after: uploadsFollow ? 'nodeUploadsDone' : 'mpiTaskAdded' } : null,
    },
    imagePulls,
    staging,
    nodeFiles: files.map((f) => ({
      source:
        f.kind === 'url' ? `url:${f.url}` : f.kind === 'blob' ? `blob:${f.account}/${f.container}/${f.blob}` : `prefix:${f.account}/${f.container}/${f.prefix}`,
      path: f.filePath.replace(/^wd\/?/, '') || '.',
      fileMode: f.fileMode ?? null,
      sasMinutes: f.kind === 'url' ? null : nodeSasMinutes,
    })),
    scratch: scratch ? { kind: scratch.kind, directory: scratchDirExpression(scratch), mount: scratch.mount ?? null, path: scratch.path ?? null } : null,
    mpiTask: explainMpiTask(input, plan, shape, commands.containerRunOptions),
    outputs: outputs
      ? {
          account: outputs.account,
          container: outputs.container,
          prefix: outputs.prefix,
          when: outputs.when,
          logs: outputs.logs,
          onUploadFailure: outputs.onUploadFailure,
          sasMinutes: nodeSasMinutes,
          nodeUploads: uploadsFollow ? nodeUploads(outputs, outputsContainerUrl as string) : null,
        }
      : null,
    scheduling: {
      queue: spec.queue ?? DEFAULT_QUEUE,
      priority: spec.priority ?? 0,
      dependsOn: (spec.dependsOn ?? []).map((d) => ({ job: d.job, condition: d.condition })),
      array: null,
    },
    preflight,
    retry: {
      maxAttempts: retry.maxAttempts,
      on: [...retry.on],
      exitCodes: [...retry.exitCodes],
      backoffSeconds: { initial: retry.backoff.initialMs / 1000, max: retry.backoff.maxMs / 1000 },
    },
    limits: {
      mpiMaxWallClockSeconds: plan.mpiMaxWallClockSeconds ?? null,
      maxRetries: spec.limits.maxRetries,
      pipelineBudgetMinutes: minutes(plan.pipelineBudgetMs),
    },
    cost: explainCost(spec, plan.nodes, plan.reusePool, retry.maxAttempts, plan.mpiMaxWallClockSeconds, input.price),
    nodeImage: explainNodeImage(spec, input.customNodeImages),
    notes,
  };
  doc.placeholders = placeholdersOf(doc);
  return doc;
}

/** The pool: created (its request, on the data or management plane) or reused (the checks it must pass). */
function explainPool(input: ExplainInput, plan: JobPlan, identity: ReturnType<typeof poolIdentityFor>): ExplainDocument['pool'] {
  const { spec, settings } = input;
  // ---- pool ----------------------------------------------------------------------------------------------------
  const mounts = mountRequests(spec);
  const startTaskSas = startTaskSasMinutes(settings.sasMaxLifetimeMinutes);
  const poolSpec = jobPoolSpec(plan.poolCreate, {
    startTaskFiles: spec.pool.startTask?.resourceFiles.map((f) =>
      identity
        ? startTaskResourceFile(f, runTime(`URL of blob ${f.account}/${f.container}/${f.blob} (no SAS: read with the pool identity)`), identity.resourceId)
        : startTaskResourceFile(f, runTime(`read-only SAS URL of blob ${f.account}/${f.container}/${f.blob}, valid ${startTaskSas} minutes`)),
    ),
    mounts: batchMountRequests(mounts).length
      ? batchMountRequests(mounts).map((m) => mountSpec(m, mountCredentials(m, settings, plan.poolCreate.mountSasValidForMs)))
      : undefined,
    identityResourceId: identity?.resourceId,
    owner: input.owner ?? runTime("the submitter's owner id"),
    ...(settings.poolSubnetId ? { defaultSubnetId: settings.poolSubnetId } : {}),
  });
  const poolRequest = plan.reusePool
    ? null
    : identity
      ? armPoolRequestBody(buildArmPool(poolSpec, identity.resourceId))
      : plain(buildPoolAddParameter(poolSpec));

  return {
    poolId: plan.poolId,
    action: plan.reusePool ? 'reuse' : 'create',
    vmSize: spec.pool.vmSize ?? null,
    nodes: plan.nodes,
    minNodes: plan.minNodes,
    resizeTimeoutMinutes: minutes(plan.resizeTimeoutMs),
    deleteAfter: plan.deletePool,
    plane: plan.reusePool ? null : identity ? 'management' : 'data',
    request: poolRequest,
    startTaskFiles: plan.reusePool ? [] : (spec.pool.startTask?.resourceFiles ?? []).map((f) => ({ ...f, sasMinutes: identity ? null : startTaskSas })),
    mounts: mounts.map(mountSummary),
    reuseChecks: plan.reusePool ? reuseChecks(spec) : [],
  };
}

/** The preflight task on every node, and the limits it checks against. */
function explainPreflight(
  input: ExplainInput,
  plan: JobPlan,
  nodes: { id: string }[],
  healthChecks: ReturnType<typeof healthChecksForPool>,
  urls: MpiTaskUrls,
): ExplainDocument['preflight'] {
  const { spec } = input;
  const thresholds = preflightThresholds(spec, spec.pool.vmSize ?? plan.poolCreate.vmSize, true, healthChecks);
  return spec.preflight.enabled
    ? {
        taskIds: 'preflight-<attempt>-<round>',
        rounds: spec.preflight.rounds,
        maxSshMs: thresholds.maxSshMs,
        minFreeMB: thresholds.minFreeMB,
        runsPreExecutionCommand: thresholds.runsPreExecution,
        pingPong: {
          enabled: thresholds.pingPong.enabled,
          maxLatencyUs: thresholds.pingPong.maxLatencyUs ?? null,
          minBandwidthMBps: thresholds.pingPong.minBandwidthMBps ?? null,
        },
        request: plain(buildMpiTaskParameter(preflightTaskRequest(plan, spec, nodes, plan.batchJobId, preflightTaskId(1, 1), urls, healthChecks))),
      }
    : null;
}

/** The MPI task: its shape, the MPI it runs, and the request as sent. */
function explainMpiTask(
  input: ExplainInput,
  plan: JobPlan,
  shape: ReturnType<typeof mpiTaskRequest>,
  containerRunOptions: string[] | undefined,
): ExplainDocument['mpiTask'] {
  const { spec, settings } = input;
  const ppn = spec.mpi.processesPerNode;
  return {
    taskId: shape.taskId,
    numberOfInstances: shape.numberOfInstances,
    mpiRuntime: spec.mpi.runtime,
    mpiVersion: spec.mpi.version ?? null,
    fabric: resolveFabric(spec.mpi.fabric, spec.pool.vmSize ?? plan.poolCreate.vmSize),
    preset: (({ family, reason }) => ({ family, reason }))(
      presetChoice(spec.mpi.runtime, spec.mpi.version, spec.mpi.fabric, spec.pool.vmSize ?? plan.poolCreate.vmSize),
    ),
    launcher: spec.mpi.launcher.mode,
    processesPerNode: ppn,
    ranks: typeof ppn === 'number' ? plan.nodes * ppn : `${plan.nodes} × ${ppn} (counted on the master)`,
    containerRunOptions: containerRunOptions ?? null,
    request: plain(
      buildMpiTaskParameter(shape, { ...EXPLAIN_KEY_VAULT_ACCESS, ...(settings.poolIdentity ? { clientId: settings.poolIdentity.clientId } : {}) }),
    ),
  };
}
