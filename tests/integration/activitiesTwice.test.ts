/**
 * Every activity of the mpiJob pipeline survives at-least-once execution. Durable Functions runs an activity again
 * when the host dies between its effect and the history write, so each one is called twice in a row here (and, where
 * it applies, after the next step's effect), against real Azurite and the real Batch emulator, through the app's own
 * composition root (shared/services reads the app settings a Function App would have): the outcome must be the
 * same as calling it once. Nothing is created twice, deleting twice is fine, finishing twice is a no-op, and
 * observing an MPI task after its Batch job was cleaned up does not turn a recorded success into a failure.
 */
import { BlobServiceClient } from '@azure/storage-blob';
import { startAzurite, DATA_ACCOUNT, type AzuriteHandle } from '../../local/azurite';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { localAppSettings } from '../../local/stack';
import { jobStore } from '../../shared/services';
import { recordSubmission, type JobRecord } from '../../shared/adapters/state';
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { planJob, stagingContainerFor } from '../../shared/core/planning/jobPlan';
import { mpiTaskRequest } from '../../shared/core/planning/mpiTaskRequest';
import { planShards } from '../../shared/core/planning/shards';
import type { JobOutcome, NodeRef } from '../../shared/core/contract';
import { jobFinish, jobTransition } from '../../orchestrations/activities/jobState';
import { costPrice } from '../../orchestrations/activities/costPrice';
import { poolCreate, poolDelete, poolInspect, poolObserve, poolRemoveNodes, poolResize } from '../../orchestrations/activities/pool';
import { batchJobAutoComplete, batchJobCreate, batchJobTerminate } from '../../orchestrations/activities/batchJob';
import { nodeTasksAdd, nodeTasksObserve } from '../../orchestrations/activities/nodeTasks';
import { inputsList, shardCopy, shardUrls, stagedDataDelete } from '../../orchestrations/activities/staging';
import { mpiResultCollect, mpiTaskAdd, mpiTaskObserve } from '../../orchestrations/activities/mpi';
import { outputsList, workloadUrls } from '../../orchestrations/activities/workloadData';
import { nodeFileSources } from '../../shared/core/planning/workloadData';
import { sdkClient } from '../../local/batch/testing/sdkHelpers';
import { admissionRelease, admissionRequest, dependenciesCheck, jobEnded } from '../../orchestrations/activities/scheduling';
import type { ActivityEnv } from '../../orchestrations/activities/registration';
import { recordSubmission as record } from '../../shared/adapters/state';
import { until } from '../batch/until';
import { smallSpec } from '../ops/helpers';

let azurite: AzuriteHandle;
let emu: BatchEmulatorHandle;
const creates: string[] = [];
const saved = { ...process.env };

/** Runs `call` twice and returns both results, so a test states what "the same outcome" means for that activity. */
async function twice<T>(call: () => Promise<T>): Promise<[T, T]> {
  const first = await call();
  const second = await call();
  return [first, second];
}

function spec(id: string, extra: Parameters<typeof smallSpec>[1] = { command: 'true' }): JobSpec {
  const parsed = parseJobSpec(smallSpec(id, extra), 'application/yaml');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.spec;
}

/** The job a recorded submission names (an id taken by another owner cannot happen in these tests). */
function jobOf(r: Awaited<ReturnType<typeof recordSubmission>>): JobRecord {
  if (r.outcome === 'taken') throw new Error(`job id ${r.id} is taken`);
  return r.job;
}

async function submitted(id: string, s: JobSpec = spec(id)): Promise<JobRecord> {
  const r = await recordSubmission(await jobStore(), { spec: s, owner: 'test' });
  if (r.outcome === 'taken') throw new Error(`job id ${r.id} is taken`);
  return r.job;
}

beforeAll(async () => {
  azurite = await startAzurite();
  emu = await startBatchEmulator({
    timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 },
    onExchange: (ex) => {
      if (ex.method === 'POST' && /\/(pools|jobs|tasks|addtaskcollection)(\?|$)/.test(ex.path)) creates.push(`${ex.path.split('?')[0]} ${ex.status}`);
    },
  });
  // The app's composition root reads the Function App settings from the environment, once, on first use.
  Object.assign(process.env, localAppSettings(azurite, emu), {
    // A mount secret the deployment publishes for jobs (in Azure a Key Vault reference), and the file servers jobs may mount.
    MOUNT_SECRET_refkey: 'cmVma2V5LXNlY3JldA==',
    DATA_MOUNT_SOURCES: '10.0.0.4:/exports/*',
    ADMISSION_CORE_QUOTA: '{"standardDSv5Family":16}',
  });
}, 60_000);
afterAll(async () => {
  process.env = saved;
  await emu?.stop();
  await azurite?.stop();
  // Azurite saves its stores when it stops, and may wait for this process's idle keep-alive connections first.
}, 150_000);

describe('job state activities', () => {
  it('jobTransition twice records one transition; a replay of an earlier stage after a later one changes nothing', async () => {
    const id = 'twice-transition';
    await submitted(id);
    await twice(() => jobTransition({ jobId: id, to: 'Provisioning', reason: 'creating pool' }));
    await jobTransition({ jobId: id, to: 'Running', reason: 'running' });
    await jobTransition({ jobId: id, to: 'Provisioning', reason: 'a stale replay' });
    const store = await jobStore();
    expect((await store.get(id))?.state).toBe('Running');
    expect((await store.events(id)).filter((e) => e.kind === 'transition').map((e) => e.to)).toEqual(['Submitted', 'Provisioning', 'Running']);
  });

  it('jobFinish twice is a no-op; a later run that comes to another end does not overwrite the recorded success', async () => {
    const id = 'twice-finish';
    await submitted(id);
    await jobTransition({ jobId: id, to: 'Running', reason: 'running' });
    await jobTransition({ jobId: id, to: 'CleaningUp', reason: 'done' });
    const success: JobOutcome = {
      state: 'Succeeded',
      result: { exitCode: 0, timings: {}, mpi: { taskId: 'mpi', exitCode: 0, subtasks: [], logs: [], stdoutTail: 'RESULT ok' } },
    };
    await twice(() => jobFinish({ jobId: id, outcome: success }));
    // The run again, after cleanup: Batch no longer knows the task, so this run ends Failed.
    await jobTransition({ jobId: id, to: 'CleaningUp', reason: 'a repeated run' });
    await jobFinish({
      jobId: id,
      outcome: { state: 'Failed', reason: 'MPI task exited with code -1: the MPI task disappeared (job deleted?)', result: { timings: {} } },
    });
    const store = await jobStore();
    const job = await store.get(id);
    expect(job?.state).toBe('Succeeded');
    expect(job?.result?.mpi?.stdoutTail).toBe('RESULT ok');
    expect(job?.error).toBeUndefined();
    const events = await store.events(id);
    expect(events.filter((e) => e.kind === 'transition').map((e) => e.to)).toEqual(['Submitted', 'Running', 'CleaningUp', 'Succeeded']);
    expect(events.filter((e) => e.kind === 'note').map((e) => e.reason)).toEqual([
      expect.stringMatching(/^a repeated run of the pipeline ended Failed .*; the recorded Succeeded stands$/),
    ]);
  });

  it('costPrice twice gives the same quote', async () => {
    const [a, b] = await twice(() => costPrice({ vmSize: 'Standard_HB120rs_v3' }));
    expect(b).toEqual(a);
  });
});

describe('Batch activities', () => {
  const id = 'twice-batch';
  let plan: ReturnType<typeof planJob>;
  let nodes: NodeRef[];
  let batchJobId: string;

  it('poolCreate twice creates one pool, and creates none for a job that already ended', async () => {
    const s = spec(id, { nodes: 2, command: 'true' });
    await submitted(id, s);
    plan = planJob(id, s);
    const before = creates.length;
    const [a, b] = await twice(() => poolCreate(plan.poolCreate));
    expect([a.created, b.created]).toEqual([true, false]);
    expect(creates.slice(before).filter((c) => c.startsWith('/pools ') && c.endsWith('201'))).toHaveLength(1);

    const ended = 'twice-ended';
    const e = spec(ended, { nodes: 1, command: 'true' });
    await submitted(ended, e);
    await jobTransition({ jobId: ended, to: 'Failed', reason: 'rejected' });
    await expect(poolCreate(planJob(ended, e).poolCreate)).rejects.toThrow(/job twice-ended already ended Failed: not creating pool/);
    await expect(batchJobCreate({ jobId: ended, batchJobId: 'hpc-twice-ended', poolId: 'p', releaseCommandLine: '/bin/true' })).rejects.toThrow(
      /already ended Failed/,
    );

    // A late repeat of the create, delivered while the run cleans up (after it deleted the pool): refused too.
    const late = 'twice-late-create';
    const l = spec(late, { nodes: 1, command: 'true' });
    await submitted(late, l);
    await jobTransition({ jobId: late, to: 'Provisioning', reason: 'creating pool' });
    await jobTransition({ jobId: late, to: 'CleaningUp', reason: 'failed' });
    const before2 = creates.length;
    await expect(poolCreate(planJob(late, l).poolCreate)).rejects.toThrow(/job twice-late-create is cleaning up: not creating pool/);
    expect(creates.slice(before2)).toEqual([]);
  });

  it('poolInspect and poolObserve read the same pool twice; poolResize twice targets the same size', async () => {
    const [i1, i2] = await twice(() => poolInspect({ poolId: plan.poolId }));
    expect(i2).toEqual(i1);
    await twice(() => poolResize({ poolId: plan.poolId, target: 3 }));
    const obs = await until('three idle nodes', async () => {
      const o = await poolObserve({ poolId: plan.poolId });
      return o.nodes.filter((n) => n.state === 'idle').length === 3 && o.allocationState === 'steady' ? o : undefined;
    });
    expect(obs.targetDedicatedNodes).toBe(3);
    nodes = obs.nodes.slice(0, 2).map((n) => ({ id: n.id, ipAddress: n.ipAddress, affinityId: n.affinityId }));
  });

  it('poolRemoveNodes twice removes the node once and does not fail the second time', async () => {
    const spare = (await poolObserve({ poolId: plan.poolId })).nodes.find((n) => !nodes.some((k) => k.id === n.id))!;
    await twice(() => poolRemoveNodes({ poolId: plan.poolId, nodeIds: [spare.id] }));
    const obs = await until('the spare node to leave', async () => {
      const o = await poolObserve({ poolId: plan.poolId });
      return o.nodes.length === 2 && o.allocationState === 'steady' ? o : undefined;
    });
    expect(obs.nodes.map((n) => n.id).sort()).toEqual(nodes.map((n) => n.id).sort());
  });

  it('batchJobCreate twice creates one Batch job; batchJobAutoComplete twice', async () => {
    const before = creates.length;
    const [a, b] = await twice(() => batchJobCreate({ jobId: id, batchJobId: plan.batchJobId, poolId: plan.poolId, releaseCommandLine: '/bin/true' }));
    expect(b).toBe(a);
    batchJobId = a;
    expect(creates.slice(before).filter((c) => c === '/jobs 201')).toHaveLength(1);
  });

  it('nodeTasksAdd twice adds each task once; nodeTasksObserve twice reports the same ends', async () => {
    const tasks = nodes.map((n, i) => ({ id: `probe-${i}`, affinityId: n.affinityId, commandLine: '/bin/sh -c "echo on $AZ_BATCH_NODE_ID"' }));
    const before = creates.length;
    await twice(() => nodeTasksAdd({ batchJobId, tasks }));
    // One task collection per call (both 200: Batch answers per task, the second time TaskExists, counted as added).
    expect(creates.slice(before)).toEqual([`/jobs/${batchJobId}/addtaskcollection 200`, `/jobs/${batchJobId}/addtaskcollection 200`]);
    const first = await until('both node tasks to complete', async () => {
      const o = await nodeTasksObserve({ batchJobId, taskIds: tasks.map((t) => t.id) });
      return o.every((t) => t.state === 'completed') ? o : undefined;
    });
    expect(await nodeTasksObserve({ batchJobId, taskIds: tasks.map((t) => t.id) })).toEqual(first);
    expect(first.every((t) => t.exitCode === 0)).toBe(true);
  });

  it('mpiTaskAdd twice adds one task; observing and collecting twice give the same result, also after the Batch job ended', async () => {
    const s = spec(id, { nodes: 2, command: 'echo RESULT from $AZ_BATCH_NODE_ID' });
    const request = mpiTaskRequest(plan, s, nodes, '/tmp', batchJobId);
    const before = creates.length;
    await twice(() => mpiTaskAdd(request));
    expect(creates.slice(before).filter((c) => c.endsWith('/tasks 201'))).toHaveLength(1);
    await twice(() => batchJobAutoComplete({ batchJobId }));
    await until('the MPI task to complete', async () =>
      (await mpiTaskObserve({ batchJobId, taskId: request.taskId })).state === 'completed' ? true : undefined,
    );
    const [o1, o2] = await twice(() => mpiTaskObserve({ batchJobId, taskId: request.taskId }));
    expect(o2).toEqual(o1);
    const [r1, r2] = await twice(() => mpiResultCollect({ batchJobId, taskId: request.taskId }));
    expect(r1.exitCode).toBe(0);
    expect(r2).toEqual(r1);
    // Cleanup's next step, then the same reads again: the job is terminated (completed), its task still answers.
    const [t1, t2] = await twice(() => batchJobTerminate({ batchJobId, reason: 'Succeeded' }));
    expect(typeof t1).toBe('string');
    expect(typeof t2).toBe('string');
    expect(await mpiResultCollect({ batchJobId, taskId: request.taskId })).toEqual(r1);
  });

  it('poolDelete twice: the first requests the deletion, the second finds it gone or going', async () => {
    const [a, b] = await twice(() => poolDelete({ poolId: plan.poolId }));
    expect(a.deleted).toBe(true);
    expect(b.deleted).toBe(false);
    const obs = await poolObserve({ poolId: plan.poolId });
    expect(['deleting', 'missing']).toContain(obs.state);
  });
});

describe('staging activities', () => {
  it('inputsList twice lists the same blobs; shardCopy twice copies once; shardUrls twice both read; stagedDataDelete twice', async () => {
    const data = BlobServiceClient.fromConnectionString(azurite.connectionString(DATA_ACCOUNT.name)).getContainerClient('inputs');
    await data.createIfNotExists();
    await data.getBlockBlobClient('twice/a.bin').uploadData(Buffer.alloc(3_000_000, 7));
    await data.getBlockBlobClient('twice/b.bin').uploadData(Buffer.alloc(2_000_000, 9));
    const [l1, l2] = await twice(() => inputsList({ inputs: [{ account: DATA_ACCOUNT.name, container: 'inputs', prefix: 'twice/' }] }));
    expect(l2).toEqual(l1);
    const container = stagingContainerFor('twice-staging');
    const planned = planShards(l1, { stagingAccounts: ['stage1'], nodes: 1, minBytes: 1_000_000, maxBytes: 10_000_000, container, namePrefix: '' });
    const shard = planned.shards[0];
    const [c1, c2] = await twice(() => shardCopy({ jobId: 'twice-staging', shard }));
    expect([c1.skipped, c2.skipped]).toEqual([false, true]);
    expect(c2.md5).toBe(c1.md5);
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const [u1, u2] = await twice(() =>
      shardUrls({ shards: [{ id: shard.id, account: shard.account, container: shard.container, blobName: shard.blobName }], expiresAt }),
    );
    for (const url of [u1[shard.id], u2[shard.id]]) expect((await fetch(url)).status).toBe(200);
    const [d1, d2] = await twice(() => stagedDataDelete({ containers: [{ account: shard.account, container }] }));
    expect([d1, d2]).toEqual([1, 0]);

    // A late repeat of a copy, delivered after the run's cleanup began (a host that died after the copy ran it again,
    // as the chaos test caught, seed 172643252): it copies nothing, so the deleted staged data stays deleted.
    const late = 'twice-late-copy';
    await submitted(late, spec(late, { nodes: 1, command: 'true' }));
    await jobTransition({ jobId: late, to: 'Provisioning', reason: 'creating pool' });
    await jobTransition({ jobId: late, to: 'CleaningUp', reason: 'succeeded' });
    const lateContainer = stagingContainerFor(late);
    const lateShard = planShards(l1, {
      stagingAccounts: ['stage1'],
      nodes: 1,
      minBytes: 1_000_000,
      maxBytes: 10_000_000,
      container: lateContainer,
      namePrefix: '',
    }).shards[0];
    await expect(shardCopy({ jobId: late, shard: lateShard })).rejects.toThrow(/job twice-late-copy is cleaning up: not creating staged shard/);
    expect(await BlobServiceClient.fromConnectionString(azurite.connectionString('stage1')).getContainerClient(lateContainer).exists()).toBe(false);
  });
});

describe('workload data activities', () => {
  const data = () => BlobServiceClient.fromConnectionString(azurite.connectionString(DATA_ACCOUNT.name));

  it('poolCreate with mounts twice: one pool whose mountConfiguration carries the resolved secret and a working SAS, never the history; a missing secret or an unlisted server is refused', async () => {
    const id = 'twice-mounts';
    const s = parseJobSpec(
      `${smallSpec(id, { nodes: 1, command: 'true' })}
mounts:
  - { name: home, nfs: { source: "10.0.0.4:/exports/home" } }
  - { name: ref, azureFiles: { account: data1, share: refdata, secretRef: refkey } }
  - { name: inputs, blobfuse: { account: data1, container: inputs, readOnly: true } }
`,
      'application/yaml',
    );
    if (!s.ok) throw new Error(JSON.stringify(s.errors));
    await submitted(id, s.spec);
    const plan = planJob(id, s.spec);
    // What the orchestration history holds: names and references only.
    expect(JSON.stringify(plan.poolCreate)).not.toContain('cmVma2V5LXNlY3JldA==');
    const before = creates.length;
    const [a, b] = await twice(() => poolCreate(plan.poolCreate));
    expect([a.created, b.created]).toEqual([true, false]);
    expect(creates.slice(before).filter((c) => c.startsWith('/pools ') && c.endsWith('201'))).toHaveLength(1);
    const pool = await sdkClient(emu).pool.get(plan.poolId);
    const [nfs, files, blobfuse] = pool.mountConfiguration ?? [];
    expect(nfs.nfsMountConfiguration).toEqual({ source: '10.0.0.4:/exports/home', relativeMountPath: 'home' });
    expect(files.azureFileShareConfiguration).toMatchObject({ accountName: 'data1', accountKey: 'cmVma2V5LXNlY3JldA==', relativeMountPath: 'ref' });
    expect(files.azureFileShareConfiguration?.azureFileUrl).toMatch(/\/data1\/refdata$/);
    expect(blobfuse.azureBlobFileSystemConfiguration).toMatchObject({
      accountName: 'data1',
      containerName: 'inputs',
      relativeMountPath: 'inputs',
      blobfuseOptions: '-o ro',
    });
    // The minted SAS reads and lists the container, and only that.
    const sas = blobfuse.azureBlobFileSystemConfiguration?.sasKey ?? '';
    expect(sas).toMatch(/(^|&)sp=rl(&|$)/);
    await data().getContainerClient('inputs').createIfNotExists();
    const listed = await fetch(`${data().getContainerClient('inputs').url}?restype=container&comp=list&${sas}`);
    expect(listed.status).toBe(200);

    const missing = parseJobSpec(
      `${smallSpec('twice-nosecret', { nodes: 1, command: 'true' })}\nmounts: [ { name: ref, azureFiles: { account: data1, share: refdata, secretRef: nope } } ]`,
      'application/yaml',
    );
    const unlisted = parseJobSpec(
      `${smallSpec('twice-unlisted', { nodes: 1, command: 'true' })}\nmounts: [ { name: h, nfs: { source: "10.9.9.9:/x" } } ]`,
      'application/yaml',
    );
    if (!missing.ok || !unlisted.ok) throw new Error('test specs invalid');
    await submitted('twice-nosecret', missing.spec);
    await submitted('twice-unlisted', unlisted.spec);
    await expect(poolCreate(planJob('twice-nosecret', missing.spec).poolCreate)).rejects.toThrow(/secretRef "nope" names no app setting MOUNT_SECRET_nope/);
    await expect(poolCreate(planJob('twice-unlisted', unlisted.spec).poolCreate)).rejects.toThrow(/file server 10\.9\.9\.9:\/x is not one jobs may mount/);
    await poolDelete({ poolId: plan.poolId });
  });

  it("workloadUrls twice: both sets of URLs work (a blob, a prefix, the outputs' container, created once); a refused container is refused", async () => {
    const software = data().getContainerClient('software');
    await software.createIfNotExists();
    await software.getBlockBlobClient('bin/solver').upload('#!/bin/sh\n', 10);
    await software.getBlockBlobClient('bin/lib/helper').upload('helper', 6);
    await software.getBlockBlobClient('other/secret').upload('secret', 6);
    const s = parseJobSpec(
      `${smallSpec('twice-urls', { command: 'true' })}
files:
  - { account: data1, container: software, blob: bin/solver, path: solver, mode: "0755" }
  - { account: data1, container: software, prefix: bin/ }
  - { url: "https://releases.example.org/a/run.sh", path: run.sh }
outputs: { account: data1, container: twice-results }
`,
      'application/yaml',
    );
    if (!s.ok) throw new Error(JSON.stringify(s.errors));
    const input = {
      files: nodeFileSources(s.spec),
      outputs: { account: 'data1', container: 'twice-results' },
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    };
    const [u1, u2] = await twice(() => workloadUrls(input));
    for (const u of [u1, u2]) {
      expect(u.files[0]).toMatchObject({ filePath: 'wd/solver', fileMode: '0755' });
      expect(await (await fetch(u.files[0].httpUrl as string)).text()).toBe('#!/bin/sh\n');
      // The prefix: one resource file per blob under it, each with a SAS that reads that blob and nothing else.
      expect(u.files.slice(1, 3).map((f) => f.filePath)).toEqual(['wd/bin/lib/helper', 'wd/bin/solver']);
      expect(await (await fetch(u.files[1].httpUrl as string)).text()).toBe('helper');
      expect(u.files.some((f) => f.storageContainerUrl !== undefined)).toBe(false);
      expect((await fetch((u.files[1].httpUrl as string).replace('/bin/lib/helper?', '/other/secret?'))).status).toBe(403);
      expect((await fetch((u.files[1].httpUrl as string).replace(/\/bin\/lib\/helper\?/, '?restype=container&comp=list&'))).status).toBe(403);
      expect(u.files[3]).toEqual({ httpUrl: 'https://releases.example.org/a/run.sh', filePath: 'wd/run.sh' });
      // The outputs' SAS writes blobs but cannot read or list the container.
      const out = u.outputsContainerUrl as string;
      const blobUrl = out.replace('?', '/probe.txt?');
      expect((await fetch(blobUrl, { method: 'PUT', headers: { 'x-ms-blob-type': 'BlockBlob' }, body: 'x' })).status).toBe(201);
      expect((await fetch(blobUrl)).status).toBe(403);
      expect((await fetch(out.replace('?', '?restype=container&comp=list&'))).status).toBe(403);
    }
    await expect(workloadUrls({ ...input, files: [{ kind: 'blob', account: 'stage1', container: 'x', blob: 'y', filePath: 'wd/y' }] })).rejects.toThrow(
      /refused/,
    );
  });

  it('outputsList twice lists what landed under the prefix with sizes and plain URLs, and records the failures given', async () => {
    const results = data().getContainerClient('twice-results');
    await results.createIfNotExists();
    await results.getBlockBlobClient('job-x/logs/stdout.txt').upload('hello', 5);
    await results.getBlockBlobClient('job-x/workdir/out/a.dat').upload('abcdefgh', 8);
    await results.getBlockBlobClient('job-xy/other').upload('z', 1);
    const [l1, l2] = await twice(() =>
      outputsList({ account: 'data1', container: 'twice-results', prefix: 'job-x', errors: ['node n1: FileUploadMiscError'] }),
    );
    expect(l2).toEqual(l1);
    expect(l1).toMatchObject({ prefix: 'job-x', count: 2, bytes: 13, truncated: false, errors: ['node n1: FileUploadMiscError'] });
    expect(l1.files.map((f) => [f.name, f.size])).toEqual([
      ['logs/stdout.txt', 5],
      ['workdir/out/a.dat', 8],
    ]);
    for (const f of l1.files) expect(f.url).not.toContain('?');
    expect(l1.container).toMatch(/\/data1\/twice-results$/);
  });
});

describe('scheduling activities', () => {
  // The Durable client is the one boundary replaced here (no host runs in this test): it records the events raised.
  const raised: [string, string][] = [];
  const env = {
    client: { raiseEvent: async (id: string, name: string) => void raised.push([id, name]) },
    log: { warn: () => undefined },
  } as unknown as ActivityEnv;

  it('admissionRequest twice gives the same grant and one timeline note; a waiting job twice keeps its place; admissionRelease twice lets it in once', async () => {
    // Standard_D8s_v5: 8 cores per node; the quota is 16 cores of that family.
    await submitted('twice-adm-a', spec('twice-adm-a', { nodes: 1, command: 'true' }));
    await submitted('twice-adm-b', spec('twice-adm-b', { nodes: 2, command: 'true' }));
    const [a1, a2] = await twice(() => admissionRequest({ jobId: 'twice-adm-a' }, env));
    expect(a1).toMatchObject({ state: 'granted', grant: 1 });
    expect(a2).toEqual(a1);
    const notes = (await (await jobStore()).events('twice-adm-a')).filter((e) => e.kind === 'note');
    expect(notes.map((n) => n.reason)).toEqual([expect.stringMatching(/^admitted: grant 1 in queue default, waiting since /)]);
    const [b1, b2] = await twice(() => admissionRequest({ jobId: 'twice-adm-b' }, env));
    expect(b1).toEqual({ state: 'waiting', reason: 'standardDSv5Family: 8 of 16 cores in use, the job needs 16', position: { inQueue: 1, overall: 1 } });
    expect(b2).toEqual(b1);
    await twice(() => admissionRelease({ jobId: 'twice-adm-a' }, env));
    expect(raised.filter(([id, name]) => id === 'twice-adm-b' && name === 'admission')).toHaveLength(1);
    expect(await admissionRequest({ jobId: 'twice-adm-b' }, env)).toMatchObject({ state: 'granted', grant: 2 });
  });

  it('dependenciesCheck twice reads the same; jobEnded twice wakes the dependents and moves an array row once', async () => {
    const parent = spec('twice-dep-parent');
    await submitted('twice-dep-parent', parent);
    const child = jobOf(
      await record(await jobStore(), { spec: { ...spec('twice-dep-child'), dependsOn: [{ job: 'twice-dep-parent', condition: 'succeeded' }] }, owner: 'test' }),
    );
    const [c1, c2] = await twice(() => dependenciesCheck({ jobId: child.id }));
    expect(c1).toEqual({ state: 'pending', pending: ['twice-dep-parent'] });
    expect(c2).toEqual(c1);
    const { dependents } = await (await import('../../shared/services')).schedulingStores();
    await dependents.add('twice-dep-parent', child.id);
    await jobTransition({ jobId: 'twice-dep-parent', to: 'Failed', reason: 'gave up' });
    raised.length = 0;
    await twice(() => jobEnded({ jobId: 'twice-dep-parent' }, env));
    expect(raised).toEqual([
      [child.id, 'dependency'],
      [child.id, 'dependency'],
    ]);
    expect(await dependenciesCheck({ jobId: child.id })).toEqual({
      state: 'impossible',
      reason: 'dependency twice-dep-parent ended Failed (this job needed it to succeed)',
    });

    // An array of two whose jobs both ended: its row moves to Succeeded once, however often the end is announced.
    const store = await jobStore();
    const arraySpec = { ...spec('twice-arr'), array: { parameters: ['x', 'y'] } };
    const arr = jobOf(await record(store, { spec: arraySpec, owner: 'test' }));
    await jobTransition({ jobId: arr.id, to: 'Queued', reason: 'array of 2 jobs' });
    for (const i of [0, 1]) {
      const id = `twice-arr-${i}`;
      await store.createIfAbsent({ id, spec: spec(id), specHash: `h${i}`, owner: 'test', array: { parent: arr.id, index: i, submittedAt: arr.createdAt } });
      for (const to of ['Queued', 'Running', 'CleaningUp', 'Succeeded'] as const) await jobTransition({ jobId: id, to, reason: to });
    }
    await twice(() => jobEnded({ jobId: 'twice-arr-1' }, env));
    const row = await store.get(arr.id);
    expect(row?.state).toBe('Succeeded');
    expect(row?.progress).toEqual({ array: { size: 2, counts: { Succeeded: 2 }, state: 'Succeeded' } });
    expect((await store.events(arr.id)).filter((e) => e.kind === 'transition').map((e) => e.to)).toEqual([
      'Submitted',
      'Queued',
      'Running',
      'CleaningUp',
      'Succeeded',
    ]);
  });
});
