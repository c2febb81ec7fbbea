/**
 * The local Batch emulator seen through the real @azure/batch SDK (and, where the SDK would hide a
 * status behind its retries, through requests signed with the SDK's own shared-key signer).
 */
import type { BatchServiceClient } from '@azure/batch';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import {
  LINUX_VM_CONFIGURATION,
  processesMentioning,
  readTaskFile,
  sdkClient,
  signedFetch,
  waitFor,
  waitForNodes,
  waitForTask,
} from '../../local/batch/testing/sdkHelpers';
import { existsSync } from 'node:fs';

const FAST = { allocateMs: 20, bootMs: 20, leaveMs: 20, rebootMs: 20, startTaskPollMs: 100 };

type RestError = { statusCode?: number; code?: string; body?: { code?: string; message?: { value?: string }; values?: { key: string; value: string }[] } };

async function failure(p: Promise<unknown>): Promise<RestError> {
  try {
    await p;
  } catch (e) {
    return e as RestError;
  }
  throw new Error('expected the call to fail');
}

let seq = 0;
const uid = (p: string) => `${p}-${++seq}`;

describe('Batch emulator through @azure/batch', () => {
  let emu: BatchEmulatorHandle;
  let client: BatchServiceClient;

  beforeAll(async () => {
    emu = await startBatchEmulator({ timing: FAST });
    client = sdkClient(emu);
  });
  afterAll(async () => {
    await emu?.stop();
  });

  async function pool(opts: { nodes?: number; slots?: number; interNode?: boolean; startTask?: object } = {}): Promise<string> {
    const id = uid('pool');
    await client.pool.add({
      id,
      vmSize: 'standard_d2s_v3',
      virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
      targetDedicatedNodes: opts.nodes ?? 1,
      taskSlotsPerNode: opts.slots ?? 1,
      enableInterNodeCommunication: opts.interNode ?? false,
      startTask: opts.startTask as never,
    });
    return id;
  }

  async function job(poolId: string, extra: object = {}): Promise<string> {
    const id = uid('job');
    await client.job.add({ id, poolInfo: { poolId }, ...extra });
    return id;
  }

  describe('authentication', () => {
    it('answers 403 AuthenticationFailed with Batch’s error body when the signature is wrong', async () => {
      const bad = sdkClient({ ...emu, accountKey: Buffer.from('not the key').toString('base64') });
      const err = await failure(bad.pool.list());
      expect(err.statusCode).toBe(403);
      expect(err.code).toBe('AuthenticationFailed');
      expect(err.body?.values?.[0]?.key).toBe('AuthenticationErrorDetail');
    });

    it('answers 403 when the Authorization header is missing', async () => {
      const res = await fetch(`${emu.url}/pools?api-version=2022-10-01.16.0`);
      expect(res.status).toBe(403);
      const body = (await res.json()) as Record<string, unknown>;
      expect(body).toMatchObject({ code: 'AuthenticationFailed', message: { lang: 'en-US' } });
      expect(String(body['odata.metadata'])).toContain('$metadata#Microsoft.Azure.Batch.Protocol.Entities.Container.errors');
    });

    it('answers 403 for another account name', async () => {
      const other = sdkClient({ ...emu, accountName: 'someoneelse' });
      expect((await failure(other.job.list())).statusCode).toBe(403);
    });
  });

  describe('errors, ETags and request ids', () => {
    it('uses Batch’s codes and statuses', async () => {
      const p = await pool({ nodes: 0 });
      expect(
        await failure(client.pool.add({ id: p, vmSize: 'x', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 0 })),
      ).toMatchObject({ statusCode: 409, code: 'PoolExists' });
      expect(await failure(client.pool.get('no-such-pool'))).toMatchObject({ statusCode: 404, code: 'PoolNotFound' });
      expect(await failure(client.job.get('no-such-job'))).toMatchObject({ statusCode: 404, code: 'JobNotFound' });
      const bad = await failure(client.pool.add({ id: 'bad id!', vmSize: 'x', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 0 }));
      expect(bad).toMatchObject({ statusCode: 400, code: 'InvalidPropertyValue' });
      expect(bad.body?.values).toContainEqual({ key: 'PropertyName', value: 'id' });
      const j = await job(p);
      expect(await failure(client.job.add({ id: j, poolInfo: { poolId: p } }))).toMatchObject({ statusCode: 409, code: 'JobExists' });
      await client.task.add(j, { id: 't1', commandLine: '/bin/true' });
      expect(await failure(client.task.add(j, { id: 'T1', commandLine: '/bin/true' }))).toMatchObject({ statusCode: 409, code: 'TaskExists' });
      expect(await failure(client.task.get(j, 'nope'))).toMatchObject({ statusCode: 404, code: 'TaskNotFound' });
      expect(await failure(client.job.listPreparationAndReleaseTaskStatus(j))).toMatchObject({ statusCode: 409, code: 'JobPreparationTaskNotSpecified' });
      const missing = await failure(client.task.add(j, { id: 't2', commandLine: '' }));
      expect(missing).toMatchObject({ statusCode: 400, code: 'MissingRequiredProperty' });
      await client.pool.deleteMethod(p);
      expect(await failure(client.pool.patch(p, { metadata: [] }))).toMatchObject({ statusCode: 409, code: 'PoolBeingDeleted' });
    });

    it('honours If-Match with 412 ConditionNotMet and echoes client-request-id', async () => {
      const p = await pool({ nodes: 0 });
      const before = await client.pool.get(p);
      await client.pool.patch(p, { metadata: [{ name: 'owner', value: 'a' }] }, { poolPatchOptions: { ifMatch: before.eTag } });
      const after = await client.pool.get(p);
      expect(after.eTag).not.toBe(before.eTag);
      expect(after.metadata).toEqual([{ name: 'owner', value: 'a' }]);
      const stale = await failure(client.pool.patch(p, { metadata: [] }, { poolPatchOptions: { ifMatch: before.eTag } }));
      expect(stale).toMatchObject({ statusCode: 412, code: 'ConditionNotMet' });
      const id = '9b2c1a0e-1111-4a4a-8b8b-123456789abc';
      const got = await client.pool.get(p, { poolGetOptions: { clientRequestId: id, returnClientRequestId: true } });
      expect(got.clientRequestId).toBe(id);
      await client.pool.deleteMethod(p);
    });
  });

  describe('lists', () => {
    it('pages with odata.nextLink and applies $filter and $select', async () => {
      const prefix = uid('page');
      for (let i = 0; i < 5; i++)
        await client.pool.add({
          id: `${prefix}-${i}`,
          vmSize: 'standard_d2s_v3',
          virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
          targetDedicatedNodes: 0,
        });
      const filter = `startswith(id,'${prefix}') and state eq 'active'`;
      const first = await client.pool.list({ poolListOptions: { filter, maxResults: 2, select: 'id,state' } });
      expect(first.length).toBe(2);
      expect(first.odatanextLink).toBeDefined();
      expect(Object.keys(first[0]).filter((k) => k !== 'id' && k !== 'state')).toEqual([]);
      const ids = first.map((p) => p.id);
      let link = first.odatanextLink;
      while (link) {
        const page = await client.pool.listNext(link);
        ids.push(...page.map((p) => p.id));
        link = page.odatanextLink;
      }
      expect(ids.sort()).toEqual([0, 1, 2, 3, 4].map((i) => `${prefix}-${i}`));
      expect((await client.pool.list({ poolListOptions: { filter: `id eq '${prefix}-3'` } })).map((p) => p.id)).toEqual([`${prefix}-3`]);
      expect(await failure(client.pool.list({ poolListOptions: { filter: 'id frobnicates 3' } }))).toMatchObject({
        statusCode: 400,
        code: 'InvalidQueryParameterValue',
      });
      for (let i = 0; i < 5; i++) await client.pool.deleteMethod(`${prefix}-${i}`);
    });
  });

  describe('nodes and tasks', () => {
    it("gives a task's own environmentSettings precedence over the job's commonEnvironmentSettings, and Batch's variables over both", async () => {
      const p = await pool();
      await waitForNodes(client, p, 1);
      const j = await job(p, {
        commonEnvironmentSettings: [
          { name: 'WHO', value: 'job' },
          { name: 'SHARED', value: 'job' },
          { name: 'AZ_BATCH_JOB_ID', value: 'forged' },
        ],
      });
      await client.task.add(j, {
        id: 'env-order',
        commandLine: `/bin/sh -c 'echo "$WHO|$SHARED|$AZ_BATCH_JOB_ID"'`,
        environmentSettings: [{ name: 'WHO', value: 'task' }],
      });
      await waitForTask(client, j, 'env-order');
      expect(await readTaskFile(client, j, 'env-order', 'stdout.txt')).toBe(`task|job|${j}\n`);
    });

    it('runs a task as a real process with the AZ_BATCH_* environment and serves its files', async () => {
      const p = await pool();
      const [node] = await waitForNodes(client, p, 1);
      expect(node.ipAddress).toMatch(/^127\.\d+\.\d+\.\d+$/);
      const j = await job(p);
      // Not run under a shell: the quotes group words, and $X is not expanded without /bin/sh.
      await client.task.add(j, { id: 'env', commandLine: `/bin/sh -c 'echo "$AZ_BATCH_NODE_ID|$AZ_BATCH_TASK_ID|$AZ_BATCH_JOB_ID|$PWD"'` });
      await client.task.add(j, { id: 'noshell', commandLine: 'echo $AZ_BATCH_NODE_ID "two words"' });
      const t = await waitForTask(client, j, 'env');
      expect(t.executionInfo).toMatchObject({ exitCode: 0, result: 'success', retryCount: 0 });
      expect(t.nodeInfo).toMatchObject({ nodeId: node.id, poolId: p, taskRootDirectory: `workitems/${j}/job-1/env` });
      const out = (await readTaskFile(client, j, 'env', 'stdout.txt')).trim().split('|');
      expect(out.slice(0, 3)).toEqual([node.id, 'env', j]);
      expect(out[3]).toMatch(new RegExp(`workitems/${j}/job-1/env/wd$`));
      await waitForTask(client, j, 'noshell');
      expect(await readTaskFile(client, j, 'noshell', 'stdout.txt')).toBe('$AZ_BATCH_NODE_ID two words\n');
      const files = await client.file.listFromTask(j, 'env', { recursive: true });
      expect(files.map((f) => f.name).sort()).toEqual(['stderr.txt', 'stdout.txt', 'wd']);
      const props = await client.file.getPropertiesFromTask(j, 'env', 'stdout.txt');
      expect(props.contentLength).toBeGreaterThan(0);
      const ranged = await client.file.getFromTask(j, 'noshell', 'stdout.txt', { fileGetFromTaskOptions: { ocpRange: 'bytes=4-7' } });
      expect(ranged.contentLength).toBe(4);
      const chunks: Buffer[] = [];
      for await (const c of ranged.readableStreamBody as NodeJS.ReadableStream) chunks.push(Buffer.from(c as Buffer));
      expect(Buffer.concat(chunks).toString()).toBe('BATC');
      const counts = await client.job.getTaskCounts(j);
      expect(counts.taskCounts).toMatchObject({ completed: 2, succeeded: 2, failed: 0 });
    });

    it('fails the start task: node goes starttaskfailed with startTaskInfo.failureInfo', async () => {
      const p = await pool({ startTask: { commandLine: '/bin/sh -c "echo boom >&2; exit 7"', waitForSuccess: true } });
      const [node] = await waitForNodes(client, p, 1, ['starttaskfailed']);
      expect(node.startTaskInfo).toMatchObject({ state: 'completed', exitCode: 7, result: 'failure', failureInfo: { category: 'usererror' } });
      const stderr = await client.file.getFromComputeNode(p, node.id as string, 'startup/stderr.txt');
      expect(stderr.contentLength).toBe(5);
    });

    it('runs job preparation before the first task and release on terminate', async () => {
      const p = await pool();
      await waitForNodes(client, p, 1);
      const j = await job(p, {
        jobPreparationTask: { commandLine: `/bin/sh -c 'echo prepared > $AZ_BATCH_NODE_SHARED_DIR/prep-$AZ_BATCH_JOB_ID'` },
        jobReleaseTask: { commandLine: `/bin/sh -c 'echo released > $AZ_BATCH_NODE_SHARED_DIR/release-$AZ_BATCH_JOB_ID'` },
      });
      await client.task.add(j, { id: 'reads-prep', commandLine: `/bin/sh -c 'cat $AZ_BATCH_NODE_SHARED_DIR/prep-$AZ_BATCH_JOB_ID'` });
      await waitForTask(client, j, 'reads-prep');
      expect(await readTaskFile(client, j, 'reads-prep', 'stdout.txt')).toBe('prepared\n');
      await client.job.terminate(j);
      await waitFor('job completed', async () => ((await client.job.get(j)).state === 'completed' ? true : undefined));
      const [status] = await client.job.listPreparationAndReleaseTaskStatus(j);
      expect(status.jobPreparationTaskExecutionInfo).toMatchObject({ state: 'completed', exitCode: 0, result: 'success' });
      expect(status.jobReleaseTaskExecutionInfo).toMatchObject({ state: 'completed', exitCode: 0, result: 'success' });
      const released = await client.file.getPropertiesFromComputeNode(p, status.nodeId as string, `shared/release-${j}`);
      expect(released.contentLength).toBe(9);
      expect((await client.job.get(j)).executionInfo?.terminateReason).toBe('UserTerminate');
    });

    it('kills a task at maxWallClockTime and records failureInfo', async () => {
      const p = await pool();
      await waitForNodes(client, p, 1);
      const j = await job(p);
      await client.task.add(j, { id: 'slow', commandLine: '/bin/sleep 30', constraints: { maxWallClockTime: 'PT0.3S' } });
      const t = await waitForTask(client, j, 'slow', 'completed', 10_000);
      expect(t.executionInfo).toMatchObject({ result: 'failure', failureInfo: { category: 'usererror', code: 'MaxWallClockTimeExceeded' } });
      expect(t.executionInfo?.endTime && t.executionInfo?.startTime && +t.executionInfo.endTime - +t.executionInfo.startTime).toBeLessThan(5000);
    });

    it('retries within maxTaskRetryCount', async () => {
      const p = await pool();
      await waitForNodes(client, p, 1);
      const j = await job(p);
      await client.task.add(j, { id: 'always-fails', commandLine: '/bin/sh -c "exit 2"', constraints: { maxTaskRetryCount: 2 } });
      // Fails on the first run only: a counter in the node's shared dir.
      const flaky = `/bin/sh -c 'f=$AZ_BATCH_NODE_SHARED_DIR/count-$AZ_BATCH_JOB_ID; n=$(cat $f 2>/dev/null || echo 0); echo $((n+1)) > $f; test $n -ge 1'`;
      await client.task.add(j, { id: 'flaky', commandLine: flaky, constraints: { maxTaskRetryCount: 3 } });
      const failed = await waitForTask(client, j, 'always-fails');
      expect(failed.executionInfo).toMatchObject({ exitCode: 2, retryCount: 2, result: 'failure', failureInfo: { code: 'FailureExitCode' } });
      const ok = await waitForTask(client, j, 'flaky');
      expect(ok.executionInfo).toMatchObject({ exitCode: 0, retryCount: 1, result: 'success' });
    });

    it('terminates the job when all tasks complete (onAllTasksComplete: terminatejob)', async () => {
      const p = await pool({ slots: 2 });
      await waitForNodes(client, p, 1);
      const j = await job(p);
      await client.task.addCollection(j, [
        { id: 'a', commandLine: '/bin/true' },
        { id: 'b', commandLine: '/bin/sleep 0.2' },
      ]);
      await client.job.patch(j, { onAllTasksComplete: 'terminatejob' });
      const done = await waitFor('job completed', async () => {
        const got = await client.job.get(j);
        return got.state === 'completed' ? got : undefined;
      });
      expect(done.executionInfo?.terminateReason).toBe('AllTasksComplete');
      expect(await failure(client.task.add(j, { id: 'late', commandLine: '/bin/true' }))).toMatchObject({ statusCode: 409, code: 'JobCompleted' });
    });

    it('honours taskSlotsPerNode and requiredSlots', async () => {
      const p = await pool({ slots: 2 });
      await waitForNodes(client, p, 1);
      const j = await job(p);
      await client.task.add(j, { id: 'one', commandLine: '/bin/sleep 5' });
      await client.task.add(j, { id: 'two', commandLine: '/bin/sleep 5', requiredSlots: 2 });
      await client.task.add(j, { id: 'three', commandLine: '/bin/sleep 5' });
      await waitForTask(client, j, 'three', 'running');
      expect((await client.task.get(j, 'one')).state).toBe('running');
      expect((await client.task.get(j, 'two')).state).toBe('active');
      const [node] = await client.computeNode.list(p);
      expect(node).toMatchObject({ state: 'running', runningTasksCount: 2, runningTaskSlotsCount: 2 });
      await client.job.terminate(j);
      const two = await waitFor('job completed', async () => ((await client.job.get(j)).state === 'completed' ? client.task.get(j, 'two') : undefined));
      expect(two.state).toBe('active'); // Batch leaves active tasks of a terminated job active.
      expect((await client.task.get(j, 'one')).executionInfo?.failureInfo?.code).toBe('TaskEnded');
    });

    it('holds a task until the tasks it depends on have succeeded', async () => {
      const p = await pool({ slots: 4 });
      await waitForNodes(client, p, 1);
      const j = await job(p, { usesTaskDependencies: true });
      await client.task.add(j, { id: '1', commandLine: '/bin/sleep 0.5' });
      await client.task.add(j, { id: '2', commandLine: '/bin/true' });
      await client.task.add(j, { id: 'after', commandLine: '/bin/true', dependsOn: { taskIds: ['2'], taskIdRanges: [{ start: 1, end: 1 }] } });
      await waitForTask(client, j, '2');
      expect((await client.task.get(j, 'after')).state).toBe('active');
      const first = await waitForTask(client, j, '1');
      const after = await waitForTask(client, j, 'after');
      expect(+(after.executionInfo?.startTime as Date)).toBeGreaterThanOrEqual(+(first.executionInfo?.endTime as Date));
      const noDeps = await job(p);
      expect(await failure(client.task.add(noDeps, { id: 'x', commandLine: '/bin/true', dependsOn: { taskIds: ['y'] } }))).toMatchObject({
        statusCode: 400,
        code: 'TaskDependenciesNotSpecifiedOnJob',
      });
    });

    it('never schedules a multi-instance task on a pool without inter-node communication', async () => {
      const p = await pool({ nodes: 2 });
      await waitForNodes(client, p, 2);
      const j = await job(p);
      await client.task.add(j, { id: 'mi', commandLine: '/bin/true', multiInstanceSettings: { numberOfInstances: 2, coordinationCommandLine: '/bin/true' } });
      await new Promise((r) => setTimeout(r, 300));
      expect((await client.task.get(j, 'mi')).state).toBe('active');
    });

    it('fails a multi-instance task when a subtask’s coordination command fails', async () => {
      const p = await pool({ nodes: 2, interNode: true });
      await waitForNodes(client, p, 2);
      const j = await job(p);
      await client.task.add(j, {
        id: 'mi',
        commandLine: '/bin/sh -c "echo should not run"',
        multiInstanceSettings: { numberOfInstances: 2, coordinationCommandLine: `/bin/sh -c 'test "$AZ_BATCH_IS_CURRENT_NODE_MASTER" = true'` },
      });
      const t = await waitForTask(client, j, 'mi');
      expect(t.executionInfo).toMatchObject({ result: 'failure', failureInfo: { code: 'SubtaskFailed' } });
      const subs = await client.task.listSubtasks(j, 'mi');
      expect(subs.value?.[0]).toMatchObject({ id: 1, state: 'completed', result: 'failure', exitCode: 1 });
      expect(await readTaskFile(client, j, 'mi', 'stdout.txt')).toBe('');
    });

    it('ends a job at its maxWallClockTime', async () => {
      const p = await pool();
      await waitForNodes(client, p, 1);
      const j = await job(p, { constraints: { maxWallClockTime: 'PT1S' } });
      await client.task.add(j, { id: 'long', commandLine: '/bin/sleep 30' });
      const done = await waitFor(
        'job completed',
        async () => {
          const got = await client.job.get(j);
          return got.state === 'completed' ? got : undefined;
        },
        10_000,
      );
      expect(done.executionInfo?.terminateReason).toBe('MaxWallClockTimeExpiry');
      expect((await client.task.get(j, 'long')).state).toBe('completed');
    });

    it('requeues running tasks when their pool is deleted', async () => {
      const p = await pool();
      await waitForNodes(client, p, 1);
      const j = await job(p);
      await client.task.add(j, { id: 'orphan', commandLine: '/bin/sleep 30' });
      await waitForTask(client, j, 'orphan', 'running');
      await client.pool.deleteMethod(p);
      expect((await client.pool.get(p)).state).toBe('deleting');
      const t = await waitForTask(client, j, 'orphan', 'active');
      expect(t.executionInfo?.requeueCount).toBe(1);
      await waitFor('pool gone', async () => ((await client.pool.exists(p)).body === false ? true : undefined));
    });

    it('kills a still-running start task when the node is removed', async () => {
      const p = await pool({ startTask: { commandLine: `/bin/sh -c 'echo $$ > $AZ_BATCH_NODE_SHARED_DIR/st.pid; exec sleep 600'`, waitForSuccess: false } });
      const [node] = await waitForNodes(client, p, 1);
      const root = emu.nodes(p)[0].rootDir;
      await waitFor('start task sleeping', async () => (processesMentioning(root).length > 0 ? true : undefined));
      await client.pool.removeNodes(p, { nodeList: [node.id as string] });
      await waitForNodes(client, p, 0, []);
      await waitFor('start task killed', async () => (processesMentioning(root).length === 0 ? true : undefined), 5_000);
    });

    it('gives every node an ssh that runs commands on the node owning an address, or in its sshd container', async () => {
      const p = await pool({ nodes: 2, interNode: true });
      const nodes = await waitForNodes(client, p, 2);
      const j = await job(p);
      const other = nodes[1];
      // Each node's own ssh reaches the other node by IP and sees that node's environment and sandbox.
      await client.task.add(j, {
        id: 'hop',
        commandLine: `ssh -o StrictHostKeyChecking=no ${other.ipAddress} 'echo $AZ_BATCH_NODE_ID; pwd'`,
        affinityInfo: { affinityId: nodes[0].affinityId as string },
      });
      await waitForTask(client, j, 'hop');
      const [id, cwd] = (await readTaskFile(client, j, 'hop', 'stdout.txt')).trim().split('\n');
      expect(id).toBe(other.id);
      expect(cwd).toBe(emu.nodes(p).find((n) => n.id === other.id)?.rootDir);
      // A "container" with sshd on port 2222, recorded the way the node's docker records it: config.json, and the
      // ssh.sh the launcher reads while it runs (local/batch/nodetools/lib/containerStore.ts, sshLauncherFile).
      const container =
        `mkdir -p $AZ_BATCH_NODE_ROOT_DIR/containers/web; ` +
        `printf '{"name":"web","image":"x","env":{"IN_CONTAINER":"yes"},"rootfs":"/","workdir":"/tmp","sshPort":2222,"pid":%s,"state":"running"}' $$ > $AZ_BATCH_NODE_ROOT_DIR/containers/web/config.json; ` +
        `printf '__port=2222\\n__pid=%s\\nexport IN_CONTAINER=yes\\n__workdir=/tmp\\n__rootfs=/\\n' $$ > $AZ_BATCH_NODE_ROOT_DIR/containers/web/ssh.sh; ` +
        `ssh -p 2222 $AZ_BATCH_EMULATOR_NODE_IP 'echo $IN_CONTAINER $PWD'; ssh -p 2223 $AZ_BATCH_EMULATOR_NODE_IP true; echo refused=$?`;
      await client.task.add(j, { id: 'sshd', commandLine: `/bin/sh -c '${container.replace(/'/g, `'\\''`)}'` });
      await waitForTask(client, j, 'sshd');
      expect(await readTaskFile(client, j, 'sshd', 'stdout.txt')).toBe('yes /tmp\nrefused=255\n');
      expect(await readTaskFile(client, j, 'sshd', 'stderr.txt')).toContain('Connection refused');
    });

    it('resizes, removes and reboots nodes', async () => {
      const p = await pool({ nodes: 1 });
      await waitForNodes(client, p, 1);
      await client.pool.resize(p, { targetDedicatedNodes: 3 });
      const nodes = await waitForNodes(client, p, 3);
      expect(new Set(nodes.map((n) => n.ipAddress)).size).toBe(3);
      await waitFor('steady', async () => ((await client.pool.get(p)).allocationState === 'steady' ? true : undefined));
      await client.pool.removeNodes(p, { nodeList: [nodes[0].id as string] });
      await waitForNodes(client, p, 2);
      await client.computeNode.reboot(p, nodes[1].id as string);
      const rebooted = await waitFor('reboot done', async () => {
        const n = await client.computeNode.get(p, nodes[1].id as string);
        return n.state === 'idle' && n.lastBootTime && nodes[1].lastBootTime && n.lastBootTime > nodes[1].lastBootTime ? n : undefined;
      });
      expect(rebooted.id).toBe(nodes[1].id);
      expect((await client.pool.get(p)).currentDedicatedNodes).toBe(2);
    });
  });

  describe('faults', () => {
    it('makes a node unusable', async () => {
      const p = uid('unusable');
      emu.setFaults({ unusableNodes: { count: 1, poolId: p } });
      await client.pool.add({ id: p, vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 2 });
      const nodes = await waitForNodes(client, p, 2, ['idle', 'unusable']);
      const bad = nodes.filter((n) => n.state === 'unusable');
      expect(bad.length).toBe(1);
      expect(bad[0].errors?.[0]?.code).toBe('NodeUnusable');
      emu.setFaults({ unusableNodes: undefined });
    });

    it('makes a running node unusable and requeues its task', async () => {
      const p = await pool({ nodes: 1 });
      await waitForNodes(client, p, 1);
      const j = await job(p);
      await client.task.add(j, { id: 'victim', commandLine: '/bin/sleep 30' });
      await waitForTask(client, j, 'victim', 'running');
      emu.setFaults({ unusableNodes: { count: 1, poolId: p } });
      const [node] = await waitForNodes(client, p, 1, ['unusable']);
      expect(node.errors?.[0]?.code).toBe('NodeUnusable');
      const t = await client.task.get(j, 'victim');
      expect(t.state).toBe('active');
      expect(t.executionInfo?.requeueCount).toBe(1);
      emu.setFaults({ unusableNodes: undefined });
    });

    it('fails start tasks on chosen nodes', async () => {
      const p = uid('stfail');
      emu.setFaults({ startTaskFailure: { count: 1, poolId: p, exitCode: 42 } });
      await client.pool.add({
        id: p,
        vmSize: 'standard_d2s_v3',
        virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
        targetDedicatedNodes: 2,
        startTask: { commandLine: '/bin/true', waitForSuccess: true },
      });
      const nodes = await waitForNodes(client, p, 2, ['idle', 'starttaskfailed']);
      expect(nodes.map((n) => n.state).sort()).toEqual(['idle', 'starttaskfailed']);
      expect(nodes.find((n) => n.state === 'starttaskfailed')?.startTaskInfo).toMatchObject({ exitCode: 42, result: 'failure' });
      emu.setFaults({ startTaskFailure: undefined });
    });

    it('allocates fewer nodes than asked and reports resizeErrors once steady', async () => {
      const p = uid('partial');
      emu.setFaults({ allocation: { maxNodes: 1, poolId: p } });
      await client.pool.add({ id: p, vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 3 });
      const steady = await waitFor('steady', async () => {
        const got = await client.pool.get(p);
        return got.allocationState === 'steady' ? got : undefined;
      });
      expect(steady).toMatchObject({ currentDedicatedNodes: 1, targetDedicatedNodes: 3 });
      expect(steady.resizeErrors?.[0]?.code).toBe('AllocationTimedout');
      const total = uid('nothing');
      emu.setFaults({ allocation: { maxNodes: 0, poolId: total } });
      await client.pool.add({ id: total, vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 2 });
      const none = await waitFor('steady', async () => {
        const got = await client.pool.get(total);
        return got.allocationState === 'steady' ? got : undefined;
      });
      expect(none).toMatchObject({ currentDedicatedNodes: 0, resizeErrors: [{ code: 'AllocationFailed' }] });
      emu.setFaults({ allocation: undefined });
    });

    it('answers 429 with Retry-After and 503, deterministically for a seed', async () => {
      emu.setFaults({ throttle: { rate429: 1, retryAfterSeconds: 7 } });
      const r = await signedFetch(emu, 'GET', '/pools');
      expect(r.status).toBe(429);
      expect(r.headers.get('retry-after')).toBe('7');
      expect(r.json).toMatchObject({ code: 'TooManyRequests' });
      const run = async () => {
        emu.setFaults({ seed: 99, throttle: { rate503: 0.5 } });
        const out: number[] = [];
        for (let i = 0; i < 12; i++) out.push((await signedFetch(emu, 'GET', '/jobs')).status);
        return out;
      };
      const a = await run();
      expect(a).toContain(503);
      expect(a).toContain(200);
      expect(await run()).toEqual(a);
      emu.setFaults({ throttle: undefined });
    });

    it('makes some nodes slow to allocate', async () => {
      const p = uid('slow');
      emu.setFaults({ slowNodes: { count: 1, extraAllocateMs: 1500, poolId: p } });
      await client.pool.add({ id: p, vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 2 });
      const early = await waitFor('one idle node', async () => {
        const nodes = await client.computeNode.list(p);
        return nodes.some((n) => n.state === 'idle') ? nodes : undefined;
      });
      expect(early.map((n) => n.state).sort()).toEqual(['creating', 'idle']);
      await waitForNodes(client, p, 2, ['idle'], 5000);
      emu.setFaults({ slowNodes: undefined });
    });

    it('lands a task on another idle node when affinity is ignored', async () => {
      const p = await pool({ nodes: 2 });
      const nodes = await waitForNodes(client, p, 2);
      const target = nodes[1];
      const j = await job(p);
      await client.task.add(j, { id: 'honoured', commandLine: '/bin/true', affinityInfo: { affinityId: target.affinityId as string } });
      expect((await waitForTask(client, j, 'honoured')).nodeInfo?.nodeId).toBe(target.id);
      emu.setFaults({ ignoreAffinity: true });
      await client.task.add(j, { id: 'ignored', commandLine: '/bin/true', affinityInfo: { affinityId: target.affinityId as string } });
      expect((await waitForTask(client, j, 'ignored')).nodeInfo?.nodeId).toBe(nodes[0].id);
      emu.setFaults({ ignoreAffinity: false });
    });
  });

  describe('containerSettings', () => {
    // The node's docker is the nodetools engineer's emulated CLI; here a recording stand-in on the
    // node PATH checks only what the emulator hands to it (the container itself is their test's job).
    let dockerDir: string;
    let withDocker: BatchEmulatorHandle;
    beforeAll(async () => {
      dockerDir = mkdtempSync(path.join(os.tmpdir(), 'fake-docker-'));
      writeFileSync(path.join(dockerDir, 'docker'), '#!/bin/sh\nprintf "%s|" "$@"; echo; echo "task=$AZ_BATCH_TASK_ID"\n');
      chmodSync(path.join(dockerDir, 'docker'), 0o755);
      withDocker = await startBatchEmulator({ timing: FAST, nodePath: [dockerDir] });
    });
    afterAll(async () => {
      await withDocker?.stop();
      rmSync(dockerDir, { recursive: true, force: true });
    });

    it('runs the command line through docker run with the node root mapped and the task env', async () => {
      const c = sdkClient(withDocker);
      await c.pool.add({ id: 'cp', vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 1 });
      const [node] = await waitForNodes(c, 'cp', 1);
      await c.job.add({ id: 'cj', poolInfo: { poolId: 'cp' } });
      await c.task.add('cj', {
        id: 'ct',
        commandLine: 'hostname -f',
        containerSettings: { imageName: 'registry.local/app:1', containerRunOptions: '--network host' },
      });
      await waitForTask(c, 'cj', 'ct');
      const [argsLine, envLine] = (await readTaskFile(c, 'cj', 'ct', 'stdout.txt')).trim().split('\n');
      const args = argsLine.split('|').slice(0, -1);
      const root = withDocker.nodes('cp').find((n) => n.id === node.id)?.rootDir as string;
      expect(args.slice(0, 2)).toEqual(['run', '--rm']);
      expect(args).toEqual(expect.arrayContaining(['-v', `${root}:${root}`, '-w', `${root}/workitems/cj/job-1/ct/wd`, '--network', 'host']));
      expect(args.slice(-3)).toEqual(['registry.local/app:1', 'hostname', '-f']);
      expect(envLine).toBe('task=ct');
    });
  });

  it('stop() kills running task processes and removes its data dir', async () => {
    const own = await startBatchEmulator({ timing: FAST });
    const c = sdkClient(own);
    await c.pool.add({ id: 'sp', vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 1 });
    await waitForNodes(c, 'sp', 1);
    await c.job.add({ id: 'sj', poolInfo: { poolId: 'sp' } });
    await c.task.add('sj', { id: 'st', commandLine: `/bin/sh -c 'sleep 600 & sleep 600'` });
    await waitForTask(c, 'sj', 'st', 'running');
    await waitFor('task processes', async () => (processesMentioning(own.dataDir).length >= 3 ? true : undefined));
    await own.stop();
    expect(existsSync(own.dataDir)).toBe(false);
    await waitFor('processes gone', async () => (processesMentioning(own.dataDir).length === 0 ? true : undefined), 5_000);
  });
});
