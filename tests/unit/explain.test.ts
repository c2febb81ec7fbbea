/**
 * The explain document (shared/core/planning/explain.ts) against what the pipeline really produces. For every example of
 * examples/workloads and a few specs that add what they lack (staged inputs, every mount kind, a reused pool, retries),
 * the real mpiJob orchestrator is replayed against fake activities (tests/orchestrations) that answer with concrete
 * node ids and SAS URLs; the activity inputs it schedules are turned into Batch request bodies by the activities' own
 * mappings (shared/core/planning/batchRequests.ts, resolveMounts with a key-signed account) and the adapter's builders.
 * Each body must equal the document's, where the document's placeholders stand for exactly the run-time values.
 * Also: the document conforms to its OpenAPI schema and its bodies to the official Batch REST spec, holds no
 * secret, lists its placeholders, and docs/explain.md documents every field.
 */
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { explainJob, PLACEHOLDER_RE } from '../../shared/adapters/intake/explain';
import { ExplainDocumentSchema, type ExplainDocument, type ExplainSettings } from '../../shared/core/contract/explain';
import type { MpiJobInput, MpiResult, NodeTaskRequest, OutputsResult } from '../../shared/core/contract';
import { buildJobAddParameter, AUTO_TERMINATE_PATCH } from '../../shared/adapters/batch/jobs';
import { buildMpiTaskParameter } from '../../shared/adapters/batch/mpiTask';
import { buildPoolAddParameter } from '../../shared/adapters/batch/pools';
import { buildNodeTaskParameter } from '../../shared/adapters/batch/tasks';
import { batchJobSpec, jobPoolSpec, nodeResourceFile, nodeTaskSpec, startTaskResourceFile } from '../../shared/core/planning/batchRequests';
import { resolveMounts } from '../../orchestrations/activities/mounts';
import { buildOpenApiDocument } from '../../shared/adapters/openapi';
import { dryRunJob } from '../../shared/adapters/intake/dryRun';
import { submissionJobId } from '../../shared/core/state/submission';
import { createContractValidator, defaultSpecPath } from '../../local/batch/contract';
import { createManagementValidator, defaultManagementSpecDir } from '../../local/batch/contract/managementValidator';
import { armPoolRequestBody, buildArmPool } from '../../shared/adapters/batch/armPools';
import { EventType } from '../../local/durable/history';
import { healthyJob, fakeNode } from '../orchestrations/fakeActivities';
import { differences, downloadTaskDifferences } from '../helpers/explainMatch';
import { replay, scheduledInputs, SETTINGS } from '../orchestrations/jobReplay';

type Json = Record<string, unknown>;
const WORKLOADS = path.join(__dirname, '../../examples/workloads');
const EXAMPLES = readdirSync(WORKLOADS)
  .filter((f) => f.endsWith('.yaml'))
  .sort();
const SETTINGS_SHOWN: ExplainSettings = {
  source: 'deployment',
  poolIdentity: null,
  ...(({ poll: _poll, mpiWaitPollsPerGeneration: _polls, ...rest }) => rest)(SETTINGS),
};
/** A deployment with a pool identity (pools through the management plane) and a registry secret setting. */
const POOL_IDENTITY = {
  resourceId: '/subscriptions/0b1f6471-1bf0-4dda-aec3-111122223333/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-pool',
  clientId: '6f2b3a10-8d4e-4c1b-9a7f-0123456789ab',
};
const REGISTRY_SECRET = 'not-a-real-registry-token';
const MOUNT_SECRETS = { REFDATA_KEY: 'not-a-real-account-key==', LIC_PW: 'not-a-real-password' };

function spec(text: string): JobSpec {
  const r = parseJobSpec(text, 'application/yaml');
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
}

/** Specs for what the examples do not show: staged inputs, every mount kind, a reused pool, retries and a wall clock. */
const EXTRA: Record<string, string> = {
  'no-auto-complete': `
name: keep-job-active
pool: { vmSize: Standard_HB120rs_v3, nodes: 2 }
mpi: { runtime: openmpi, processesPerNode: 2, command: ./solver }
outputs: { account: data1, container: results, files: [ { pattern: "*.log", from: allNodes } ] }
cleanup: { autoComplete: false }
`,
  'staged-inputs': `
name: staged
pool: { vmSize: Standard_HB120rs_v3, nodes: 3 }
data: { inputs: [ { account: data1, container: inputs, prefix: deck/ } ], shardSizeMB: { min: 80, max: 100 }, recordBytes: 64 }
mpi: { runtime: openmpi, processesPerNode: 4, command: ./solver "$MPIJOB_DATA_DIR" }
limits: { maxWallClock: PT2H, maxRetries: 1 }
`,
  'every-mount': `
name: mounts
pool: { vmSize: Standard_HB120rs_v3, nodes: 2, startTask: { command: ./setup.sh, resourceFiles: [ { account: data1, container: software, blob: setup.sh, path: setup.sh } ] } }
mounts:
  - { name: home, nfs: { source: "10.0.0.4:/exports/home", options: "-o vers=4.1" } }
  - { name: ref, azureFiles: { account: data1, share: refdata, secretRef: REFDATA_KEY } }
  - { name: inputs, blobfuse: { account: data1, container: inputs, readOnly: true } }
  - { name: lic, cifs: { source: //fs01.corp.example/licenses, username: svc-hpc, secretRef: LIC_PW } }
scratch: { kind: mount, mount: home }
mpi: { runtime: intelmpi, version: "2021", processesPerNode: nproc, command: ./app }
limits: { maxWallClock: PT1H }
`,
  'registry-identity': `
name: acr
pool: { vmSize: Standard_HB120rs_v3, nodes: 2, startTask: { command: ./setup.sh, resourceFiles: [ { account: data1, container: software, blob: setup.sh, path: setup.sh } ] } }
container: { runtime: singularity, images: [ "myacr.azurecr.io/hpc/app:1.0" ], registry: { server: myacr.azurecr.io, identity: managed } }
mounts:
  - { name: lic, cifs: { source: //fs01.corp.example/licenses, username: svc-hpc, secretRef: LIC_PW } }
mpi: { runtime: openmpi, processesPerNode: 2, command: app }
`,
  'registry-secret': `
name: acr-secret
pool: { vmSize: Standard_HB120rs_v3, nodes: 2 }
container: { runtime: docker, images: [ "myacr.azurecr.io/hpc/app:1.0" ], registry: { server: myacr.azurecr.io, identity: { secretRef: ACR_TOKEN, username: puller } } }
mpi: { runtime: openmpi, processesPerNode: 2, command: app }
`,
  'reused-pool': `
id: reuse-1
name: reuse
pool: { poolId: shared-hb-pool, nodes: 2 }
container: { runtime: docker, images: [ "registry.example.com/hpc/app:1.0" ], pullConcurrency: 1 }
mpi: { runtime: openmpi, processesPerNode: 2, command: app }
outputs: { account: data1, container: results, files: [ { pattern: "*.log", from: allNodes } ] }
`,
};

const CASES: [string, string][] = [...EXAMPLES.map((f): [string, string] => [f, readFileSync(path.join(WORKLOADS, f), 'utf8')]), ...Object.entries(EXTRA)];
/**
 * Cases run (and explained) on a deployment with a pool identity: the registry credential case, and every spec whose
 * registry signs in with the managed identity (which only such a deployment accepts).
 */
const WITH_POOL_IDENTITY = new Set(['registry-secret']);
const needsPoolIdentity = (name: string, s: JobSpec) =>
  WITH_POOL_IDENTITY.has(name) || (s.container.runtime !== 'none' && s.container.registry?.identity === 'managed');
const settingsShownFor = (name: string, s: JobSpec): ExplainSettings =>
  needsPoolIdentity(name, s) ? { ...SETTINGS_SHOWN, poolIdentity: POOL_IDENTITY } : SETTINGS_SHOWN;

const dataAccount = (account: string) => ({
  name: account,
  service: new BlobServiceClient(
    `https://${account}.blob.core.windows.net`,
    new StorageSharedKeyCredential(account, Buffer.from('k'.repeat(32)).toString('base64')),
  ),
  sharedKey: new StorageSharedKeyCredential(account, Buffer.from('k'.repeat(32)).toString('base64')),
});

/** What the fake Batch reports for the MPI task: master node-0, one subtask per other node. */
function mpiResult(exitCode: number, nodes: number): MpiResult {
  const dir = 'workitems/hpc-x/job-1/mpi';
  return {
    taskId: 'mpi',
    exitCode,
    subtasks: Array.from({ length: nodes - 1 }, (_, i) => ({ id: i + 1, nodeId: `node-${i + 1}`, exitCode: 0, state: 'completed', taskRootDirectory: dir })),
    logs: [{ node: 'node-0', stdout: 'https://b/stdout', stderr: 'https://b/stderr' }],
    stdoutTail: '',
    taskRootDirectory: dir,
  };
}

interface PipelineRequests {
  pool?: Json;
  job: Json;
  /** When the pipeline patched the job to terminate itself; null: it never did (cleanup.autoComplete false). */
  autoCompleteAfter: 'mpiTaskAdded' | 'nodeUploadsDone' | null;
  nodeTasks: NodeTaskRequest[];
  mpiTask: Json;
}

/** Replays the orchestrator for `s` and turns what it scheduled into Batch request bodies, as the activities do. */
async function pipelineRequests(jobId: string, s: JobSpec, identity?: { resourceId: string; clientId: string }): Promise<PipelineRequests> {
  const nodes = s.pool.nodes;
  const failing = s.outputs?.when === 'failure';
  const job = healthyJob({
    poolObserve: () => ({
      state: 'active',
      allocationState: 'steady',
      currentDedicatedNodes: nodes,
      targetDedicatedNodes: nodes,
      resizeErrors: [],
      nodes: Array.from({ length: nodes }, (_, i) => fakeNode(i, 'idle')),
    }),
    poolInspect: () => ({
      exists: true,
      state: 'active',
      vmSize: s.pool.vmSize ?? 'standard_hb120rs_v3',
      enableInterNodeCommunication: true,
      taskSlotsPerNode: 1,
    }),
    inputsList: ({ inputs }) =>
      inputs.flatMap((i) =>
        ['a.bin', 'b.bin', 'c.bin'].map((n) => ({ account: i.account, container: i.container, name: `${i.prefix}${n}`, size: 90_000_000 })),
      ),
    imageBlobUrls: ({ blobs }) => blobs.map((b) => `https://${b.account}.blob.core.windows.net/${b.container}/${b.blob}?sv=1&sig=IMAGE`),
    workloadUrls: ({ files, outputs }) => ({
      // A prefix: one resource file per blob listed under it (here one, named as the explain document shows it).
      files: files.map((f) =>
        f.kind === 'prefix'
          ? {
              httpUrl: 'https://data1.blob.core.windows.net/x/y?sig=FILE',
              filePath: `${f.filePath}/<blob name>`,
              ...(f.fileMode === undefined ? {} : { fileMode: f.fileMode }),
            }
          : nodeResourceFile(f, { blobUrl: `https://data1.blob.core.windows.net/x/y?sig=FILE` }),
      ),
      ...(outputs ? { outputsContainerUrl: `https://${outputs.account}.blob.core.windows.net/${outputs.container}?sig=WRITE` } : {}),
    }),
    mpiResultCollect: () => mpiResult(failing ? 3 : 0, nodes),
    outputsList: ({ prefix, errors }): OutputsResult => ({
      container: 'https://data1.blob.core.windows.net/results',
      prefix,
      files: [],
      count: 0,
      bytes: 0,
      truncated: false,
      errors,
    }),
  });
  const input: MpiJobInput = { jobId, spec: s, settings: { ...SETTINGS, ...(identity ? { poolIdentityClientId: identity.clientId } : {}) } };
  const r = await replay(input, job);
  expect(job.finished().state).toBe(failing ? 'Failed' : 'Succeeded');

  const [poolCreate] = scheduledInputs(r.history, 'poolCreate');
  let pool: Json | undefined;
  if (poolCreate) {
    const mounts = poolCreate.mounts?.length
      ? await resolveMounts(poolCreate.mounts, {
          secrets: MOUNT_SECRETS,
          dataAccount,
          checkSource: () => undefined,
          sasExpiresOn: new Date(Date.now() + 3_600_000),
        })
      : undefined;
    // As poolCreate does it: with a pool identity, plain blob URLs read with it and a pool through the management plane.
    const startTaskFiles = poolCreate.startTask?.resourceFiles.map((f) =>
      identity
        ? startTaskResourceFile(f, `https://${f.account}.blob.core.windows.net/${f.container}/${f.blob}`, identity.resourceId)
        : startTaskResourceFile(f, `https://${f.account}.blob.core.windows.net/${f.container}/${f.blob}?sig=START`),
    );
    // poolCreate records the job row's owner on the pool; the document shows a placeholder for it.
    const poolSpec = jobPoolSpec(poolCreate, { startTaskFiles, mounts, identityResourceId: identity?.resourceId, owner: 'tenant-id/object-id' });
    pool = identity ? armPoolRequestBody(buildArmPool(poolSpec, identity.resourceId)) : plain(buildPoolAddParameter(poolSpec));
  }
  const [jobCreate] = scheduledInputs(r.history, 'batchJobCreate');
  const [mpi] = scheduledInputs(r.history, 'mpiTaskAdd');
  const order = r.history.filter((e) => e.EventType === EventType.TaskScheduled).map((e) => e.Name);
  const autoAt = order.indexOf('batchJobAutoComplete');
  const uploadsAt = order.findIndex((n, i) => n === 'nodeTasksAdd' && i > order.indexOf('mpiTaskAdd'));
  return {
    pool,
    job: plain(buildJobAddParameter(batchJobSpec(jobCreate))),
    autoCompleteAfter: autoAt < 0 ? null : uploadsAt >= 0 && autoAt > uploadsAt ? 'nodeUploadsDone' : 'mpiTaskAdded',
    nodeTasks: scheduledInputs(r.history, 'nodeTasksAdd').flatMap((a) => a.tasks),
    // With the Key Vault access the activity adds to a task that reads secrets (the document shows placeholders).
    mpiTask: plain(buildMpiTaskParameter(mpi, { clientId: POOL_IDENTITY.clientId, urlTemplate: 'https://{vault}.vault.azure.net' })),
  };
}

const plain = (v: unknown): Json => JSON.parse(JSON.stringify(v)) as Json;

/** A node task as the activity adds it (registry secrets read from the deployment's setting). */
const body = (t: NodeTaskRequest) => plain(buildNodeTaskParameter(nodeTaskSpec(t, () => REGISTRY_SECRET)));

function explain(jobId: string, s: JobSpec, settings: ExplainSettings = SETTINGS_SHOWN): ExplainDocument {
  return explainJob({ jobId, jobIdFrom: 'spec.id', spec: s, settings, policiesChecked: true });
}

describe.each(CASES)('%s', (name, text) => {
  const s = spec(text);
  const jobId = s.id ?? `explain-${name.replace(/\.yaml$/, '').slice(0, 40)}`;
  let doc: ExplainDocument;
  let ran: PipelineRequests;
  beforeAll(async () => {
    doc = explain(jobId, s, settingsShownFor(name, s));
    ran = await pipelineRequests(jobId, s, needsPoolIdentity(name, s) ? POOL_IDENTITY : undefined);
  });

  it('the pool, the Batch job and its auto-completion are the requests the pipeline sends', () => {
    if (doc.pool.action === 'create') expect(differences(doc.pool.request, ran.pool)).toEqual([]);
    else expect([doc.pool.request, ran.pool]).toEqual([null, undefined]);
    expect(differences(doc.batchJob.request, ran.job)).toEqual([]);
    expect(doc.batchJob.autoComplete).toEqual(ran.autoCompleteAfter && { request: plain(AUTO_TERMINATE_PATCH), after: ran.autoCompleteAfter });
    expect(ran.autoCompleteAfter === null).toBe(!s.cleanup.autoComplete);
  });

  it('the multi-instance MPI task is the one the pipeline adds', () => {
    expect(differences(doc.mpiTask.request, ran.mpiTask)).toEqual([]);
    expect(doc.mpiTask.numberOfInstances).toBe(s.pool.nodes);
  });

  it('every node task (pull, shard download, upload) matches its template in the document', () => {
    const kinds = { pull: doc.imagePulls?.task.request, dl: doc.staging.task.request, up: undefined } as Record<string, Json | undefined>;
    const byKind = (k: string) => ran.nodeTasks.filter((t) => t.id.startsWith(`${k}-`));
    expect(byKind('pull')).toHaveLength(doc.imagePulls ? s.pool.nodes : 0);
    expect(byKind('dl')).toHaveLength(s.pool.nodes);
    for (const t of [...byKind('pull'), ...byKind('dl')]) {
      // A pull task that copies from a peer (ssh to the source) follows the peer copy template.
      const peer = t.id.startsWith('pull-') && / ssh -o BatchMode=yes /.test(t.commandLine);
      const template = (peer ? doc.imagePulls?.peerCopy?.request : kinds[t.id.split('-')[0]]) as Json;
      const actual = body(t);
      expect(t.id.startsWith('dl-') ? downloadTaskDifferences(template, actual, t.id) : differences(template, actual, t.id)).toEqual([]);
    }
    const uploads = byKind('up');
    const explained = doc.outputs?.nodeUploads;
    if (!explained) {
      expect(uploads).toEqual([]);
      return;
    }
    // The fake's master is node-0, pinned as up-0-…; every other node's task follows the otherNodes template.
    for (const t of uploads) {
      const template = t.id.startsWith('up-0-') ? explained.master : explained.otherNodes;
      expect(differences(template, body(t), t.id)).toEqual([]);
    }
    expect(uploads).toHaveLength([explained.master, ...Array(s.pool.nodes - 1).fill(explained.otherNodes)].filter(Boolean).length);
  });

  it('conforms to the OpenAPI schema and to the Batch REST spec, lists its placeholders and holds no SAS or secret', () => {
    const problems = validateDoc(doc);
    expect(problems).toEqual([]);
    const text = JSON.stringify(doc);
    expect(doc.placeholders).toEqual([...new Set(text.match(PLACEHOLDER_RE))].sort());
    expect(text).not.toMatch(/sig=|[?&]sv=/);
    for (const secret of [...Object.values(MOUNT_SECRETS), REGISTRY_SECRET]) expect(text).not.toContain(secret);
    // The pipeline's requests never carry a placeholder: they are only the document's.
    expect(JSON.stringify(ran)).not.toMatch(PLACEHOLDER_RE);
  });
});

const contract = createContractValidator({ specPath: defaultSpecPath() });
const management = createManagementValidator(defaultManagementSpecDir());
const openapi = buildOpenApiDocument();
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(openapi, 'openapi');
const validateExplain = ajv.getSchema('openapi#/components/schemas/ExplainDocument');

function validateDoc(doc: ExplainDocument): string[] {
  const problems: string[] = [];
  if (!validateExplain?.(doc)) problems.push(`OpenAPI ExplainDocument: ${JSON.stringify(validateExplain?.errors)}`);
  const poolProblems =
    doc.pool.plane === 'management'
      ? management.requestBodyErrors('Pools_Create', doc.pool.request)
      : contract.requestBodyErrors('Pool_Add', doc.pool.request ?? {});
  if (doc.pool.request && poolProblems.length) problems.push(`pool (${doc.pool.plane} plane): ${JSON.stringify(poolProblems.slice(0, 3))}`);
  const bodies: [string, unknown][] = [
    ['Job_Add', doc.batchJob.request],
    ['Job_Patch', doc.batchJob.autoComplete?.request],
    ['Task_Add', doc.mpiTask.request],
    ['Task_Add', doc.imagePulls?.task.request],
    ['Task_Add', doc.staging.task.request],
    ['Task_Add', doc.outputs?.nodeUploads?.master],
    ['Task_Add', doc.outputs?.nodeUploads?.otherNodes],
  ];
  for (const [op, b] of bodies) {
    if (!b) continue;
    const errors = contract.requestBodyErrors(op, b);
    if (errors.length) problems.push(`${op}: ${JSON.stringify(errors.slice(0, 3))}`);
  }
  return problems;
}

describe('the document, field by field', () => {
  const wrf = spec(readFileSync(path.join(WORKLOADS, 'wrf-tables-from-url.yaml'), 'utf8'));
  const mounts = spec(EXTRA['every-mount']);

  it('says where the values come from and which are open: settings, policies, placeholders', () => {
    const doc = explain('j1', wrf);
    expect(doc.version).toBe(2);
    expect(doc.settings).toEqual(SETTINGS_SHOWN);
    expect(doc.placeholders.every((p) => p.startsWith('<run-time: '))).toBe(true);
    expect(doc.nodeFiles).toEqual([
      { source: 'url:https://wrf-release.example.org/v4.5/namelist.input', path: 'run/namelist.input', fileMode: '0644', sasMinutes: null },
      { source: 'url:https://wrf-release.example.org/v4.5/run-member.sh', path: 'run/run-member.sh', fileMode: '0755', sasMinutes: null },
    ]);
    expect(doc.scratch).toEqual({ kind: 'mount', directory: '$AZ_BATCH_NODE_MOUNTS_DIR/shared/scratch/j1', mount: 'shared', path: null });
    expect(doc.pool.mounts).toEqual([
      {
        name: 'shared',
        kind: 'blobfuse',
        path: '$AZ_BATCH_NODE_MOUNTS_DIR/shared',
        credential: expect.stringMatching(/SAS \(racwdl\) on data1\/shared/),
        access: 'readWrite',
        atJobEnd: expect.stringContaining('blob container'),
      },
    ]);
    // 30 minutes of wall clock + the 60-minute margin.
    expect(doc.outputs?.sasMinutes).toBe(90);
    expect(doc.batchJob.autoComplete?.after).toBe('nodeUploadsDone');
  });

  it('mounts name their credentials without holding them; a blobfuse SAS lives allocation + wall clock + margin', () => {
    const doc = explain('m1', mounts);
    expect(doc.pool.mounts.map((m) => [m.name, m.kind, m.credential])).toEqual([
      ['home', 'nfs', expect.stringMatching(/^none/)],
      ['ref', 'azureFiles', 'account key from app setting MOUNT_SECRET_REFDATA_KEY'],
      ['inputs', 'blobfuse', expect.stringMatching(/SAS \(rl\)/)],
      ['lic', 'cifs', 'user svc-hpc, password from app setting MOUNT_SECRET_LIC_PW'],
    ]);
    const config = (doc.pool.request as { mountConfiguration: Json[] }).mountConfiguration;
    expect(config[1]).toEqual({
      azureFileShareConfiguration: expect.objectContaining({ accountKey: '<run-time: the account key in app setting MOUNT_SECRET_REFDATA_KEY>' }),
    });
    // 15 min allocation + 60 min wall clock + 60 min margin.
    expect(config[2]).toEqual({
      azureBlobFileSystemConfiguration: expect.objectContaining({
        sasKey: '<run-time: SAS token (rl) on container data1/inputs, valid 135 minutes>',
        blobfuseOptions: '-o ro',
      }),
    });
    expect(doc.pool.startTaskFiles).toEqual([{ account: 'data1', container: 'software', blob: 'setup.sh', path: 'setup.sh', sasMinutes: 24 * 60 }]);
    expect(doc.mpiTask.ranks).toBe('2 × nproc (counted on the master)');
    expect(doc.notes.join('\n')).toMatch(/processesPerNode "nproc" is counted on the master/);
  });

  it('a pool identity: the pool through the management plane with it, registry and start-task files by identity, the truth about sign-in', () => {
    const withIdentity = { ...SETTINGS_SHOWN, poolIdentity: POOL_IDENTITY };
    const doc = explain('acr1', spec(EXTRA['registry-identity']), withIdentity);
    expect(doc.pool.plane).toBe('management');
    const req = doc.pool.request as { identity: unknown; properties: Json };
    expect(req.identity).toEqual({ type: 'UserAssigned', userAssignedIdentities: { [POOL_IDENTITY.resourceId]: {} } });
    expect(req.properties).toMatchObject({
      deploymentConfiguration: {
        virtualMachineConfiguration: {
          containerConfiguration: {
            type: 'DockerCompatible',
            containerRegistries: [{ registryServer: 'myacr.azurecr.io', identityReference: { resourceId: POOL_IDENTITY.resourceId } }],
          },
        },
      },
      startTask: {
        resourceFiles: [
          {
            httpUrl: '<run-time: URL of blob data1/software/setup.sh (no SAS: read with the pool identity)>',
            filePath: 'setup.sh',
            identityReference: { resourceId: POOL_IDENTITY.resourceId },
          },
        ],
      },
      mountConfiguration: [{ cifsMountConfiguration: expect.objectContaining({ userName: 'svc-hpc' }) }],
    });
    expect(doc.pool.startTaskFiles).toEqual([{ account: 'data1', container: 'software', blob: 'setup.sh', path: 'setup.sh', sasMinutes: null }]);
    expect(String(doc.imagePulls?.task.request.commandLine)).toContain(POOL_IDENTITY.clientId);
    const notes = doc.notes.join('\n');
    expect(notes).toMatch(/signs in with the pool identity/);
    expect(notes).not.toMatch(/neither the pool nor the pull task/);
    // A credential by reference: the setting is named, the value is a placeholder; the pool lists no registry.
    const secret = explain('acr2', spec(EXTRA['registry-secret']), withIdentity);
    expect(secret.imagePulls?.task.request.environmentSettings).toEqual([
      { name: 'MPIJOB_REGISTRY_PASSWORD', value: '<run-time: the registry secret of myacr.azurecr.io in app setting ACR_TOKEN>' },
    ]);
    expect(secret.notes.join('\n')).toMatch(/signs in as puller with the secret in app setting ACR_TOKEN/);
    expect(JSON.stringify(secret.pool.request)).not.toMatch(/containerRegistries/);
    // Offline (no deployment known): a managed registry needs a pool identity, shown with its ids open.
    const offline = explainJob({
      jobId: 'acr3',
      jobIdFrom: 'spec.id',
      spec: spec(EXTRA['registry-identity']),
      settings: { ...SETTINGS_SHOWN, source: 'defaults' },
      policiesChecked: false,
    });
    expect(offline.pool.plane).toBe('management');
    expect(offline.placeholders).toEqual(
      expect.arrayContaining(['<deployment: pool identity (POOL_IDENTITY_RESOURCE_ID)>', '<deployment: pool identity client id (POOL_IDENTITY_CLIENT_ID)>']),
    );
    expect(offline.notes.join('\n')).toMatch(/needs a deployment with a pool identity/);
    expect(validateDoc(offline)).toEqual([]);
    // Without a pool identity, the data plane as before.
    expect(explain('plain1', spec(EXTRA['staged-inputs'])).pool.plane).toBe('data');
  });

  it('a reused pool: no pool request, the checks it must pass, never deleted', () => {
    const doc = explain('reuse-1', spec(EXTRA['reused-pool']));
    expect(doc.pool).toMatchObject({ action: 'reuse', poolId: 'shared-hb-pool', request: null, deleteAfter: 'never' });
    expect(doc.pool.reuseChecks).toEqual(
      expect.arrayContaining([expect.stringMatching(/inter-node communication/), expect.stringMatching(/taskSlotsPerNode is 1/)]),
    );
    expect(doc.imagePulls).toMatchObject({
      runtime: 'docker',
      concurrency: 1,
      nodes: 2,
      images: [{ image: 'registry.example.com/hpc/app:1.0', source: 'registry', sifPath: null }],
    });
  });

  it("staging: inputs, shard window, accounts, the job's container and what every node downloads", () => {
    const doc = explain('s1', spec(EXTRA['staged-inputs']));
    expect(doc.staging).toMatchObject({
      inputs: [{ account: 'data1', container: 'inputs', prefix: 'deck/' }],
      shardSizeMB: { min: 80, max: 100 },
      recordBytes: 64,
      stagingAccounts: ['stage0'],
      destination: '$AZ_BATCH_NODE_SHARED_DIR/jobdata/s1',
      sasMinutes: 180,
      concurrency: 3,
    });
    expect(doc.staging.shards).toMatch(/^<run-time: shards of 80–100 MB/);
    expect(doc.limits).toEqual({ mpiMaxWallClockSeconds: 7200, maxRetries: 1, pipelineBudgetMinutes: 15 + 120 + 360 });
  });

  it("singularity images: the URI pulled, the job's SIF file, blob SIFs through a short SAS", () => {
    const doc = explain('g1', spec(readFileSync(path.join(WORKLOADS, 'namd-gpu-singularity-blob.yaml'), 'utf8')));
    expect(doc.imagePulls).toMatchObject({
      runtime: 'singularity',
      blobSasMinutes: 120,
      images: [{ image: 'blob:hpcsoftware/images/namd/namd-3.0-cuda.sif', source: 'blob', sifPath: '"$AZ_BATCH_NODE_SHARED_DIR"/mpijob/sif/g1/0.sif' }],
    });
    expect(JSON.stringify(doc.imagePulls?.task.request)).toContain(
      '<run-time: read-only SAS URL of SIF blob hpcsoftware/images/namd/namd-3.0-cuda.sif, valid 120 minutes>',
    );
  });

  it('docs/explain.md documents every field of the document', () => {
    const doc = readFileSync(path.join(__dirname, '../../docs/explain.md'), 'utf8');
    const missing = fieldPaths(ExplainDocumentSchema).filter((p) => !doc.includes(`\`${p}\``));
    expect(missing).toEqual([]);
  });
});

/** Every field path of a zod object schema, dotted (arrays as []), e.g. pool.mounts[].credential. */
function fieldPaths(schema: unknown, prefix = ''): string[] {
  const def = (schema as { def?: { type: string; shape?: Json; innerType?: unknown; element?: unknown; options?: unknown[] } }).def;
  if (!def) return [];
  if (def.type === 'nullable' || def.type === 'optional') return fieldPaths(def.innerType, prefix);
  if (def.type === 'array') return fieldPaths(def.element, `${prefix}[]`);
  if (def.type !== 'object' || !def.shape) return [];
  return Object.entries(def.shape).flatMap(([k, v]) => {
    const p = prefix ? `${prefix}.${k}` : k;
    return [p, ...fieldPaths(v, p)];
  });
}

describe("dry run (shared/adapters/intake/dryRun.ts): the submission's checks, then the document", () => {
  const policy = { accounts: ['data1'], stagingAccounts: ['stage0'], ownAccounts: ['host1', 'stage0'] };
  const text = readFileSync(path.join(WORKLOADS, 'openfoam-decompose-solve-reconstruct.yaml'), 'utf8');

  it('answers the document with the id the submission would get', () => {
    const out = dryRunJob({ body: text, contentType: 'application/yaml', dataAccess: policy, idScope: 'tenant/user', settings: SETTINGS_SHOWN });
    expect(out.kind).toBe('explained');
    if (out.kind !== 'explained') return;
    expect(out.document).toMatchObject({ jobId: 'openfoam-style-heat1d', jobIdFrom: 'spec.id', policiesChecked: true });
    const anonymous = text.replace(/^id: .*\n/m, '');
    const keyed = dryRunJob({
      body: anonymous,
      contentType: 'application/yaml',
      idempotencyKey: 'k1',
      dataAccess: policy,
      idScope: 'tenant/user',
      settings: SETTINGS_SHOWN,
    });
    expect(keyed).toMatchObject({ kind: 'explained', document: { jobIdFrom: 'idempotencyKey', jobId: submissionJobId(spec(anonymous), 'k1', 'tenant/user') } });
    const hashed = dryRunJob({ body: anonymous, contentType: 'application/yaml', dataAccess: policy, idScope: 'tenant/user', settings: SETTINGS_SHOWN });
    expect(hashed).toMatchObject({ kind: 'explained', document: { jobIdFrom: 'content', jobId: submissionJobId(spec(anonymous), undefined, 'tenant/user') } });
  });

  it("refuses what a submission refuses, with the field paths: the schema, then the deployment's policies", () => {
    expect(dryRunJob({ body: 'name: x\npool: { nodes: 0 }\n', contentType: 'application/yaml', dataAccess: policy, settings: SETTINGS_SHOWN })).toMatchObject({
      kind: 'invalid',
      errors: expect.arrayContaining([expect.objectContaining({ path: 'pool.nodes' })]),
    });
    const foreign = text.replace('account: data1, container: software', 'account: elsewhere1, container: software');
    expect(dryRunJob({ body: foreign, contentType: 'application/yaml', dataAccess: policy, settings: SETTINGS_SHOWN })).toEqual({
      kind: 'invalid',
      errors: [{ path: 'files[0].account', message: expect.stringMatching(/not one jobs may use/) }],
    });
    const privileged = readFileSync(path.join(WORKLOADS, 'mpibench-openmpi-ib-docker.yaml'), 'utf8').replace('capAdd: [SYS_PTRACE]', 'privileged: true');
    expect(dryRunJob({ body: privileged, contentType: 'application/yaml', dataAccess: policy, settings: SETTINGS_SHOWN })).toEqual({
      kind: 'invalid',
      errors: [
        // The example's registry signs in with the managed identity, which this deployment (no pool identity) cannot give.
        { path: 'container.registry.identity', message: expect.stringMatching(/no pool identity/) },
        { path: 'container.runOptions.privileged', message: expect.stringMatching(/CONTAINER_ALLOW_PRIVILEGED/) },
      ],
    });
  });
});
