/**
 * The emulator refuses what Azure Batch refuses, with Batch's status, code and property path (issue 19: every
 * case here was accepted by the emulator before). Requests the SDK would refuse to build, or would retry, are
 * sent with `signedFetch` (signed by the SDK's own signer); the rest go through the real @azure/batch client.
 */
import type { BatchServiceClient } from '@azure/batch';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { createContractRecorder, createContractValidator, defaultSpecPath } from '../../local/batch/contract';
import { sdkClient, signedFetch, waitFor, waitForNodes, waitForTask } from '../../local/batch/testing/sdkHelpers';

const FAST = { allocateMs: 20, bootMs: 20, leaveMs: 20, rebootMs: 20, startTaskPollMs: 50 };
/** The smallest pool Batch accepts: a VM configuration, a size and a target. */
const VM = {
  imageReference: { publisher: 'canonical', offer: '0001-com-ubuntu-server-jammy', sku: '22_04-lts', version: 'latest' },
  nodeAgentSKUId: 'batch.node.ubuntu 22.04',
};

type BatchErrorBody = { code?: string; message?: { value?: string }; values?: { key: string; value: string }[] };

/** The error body's values as a map, e.g. { PropertyName: 'resizeTimeout' }. */
function valuesOf(json: unknown): Record<string, string> {
  return Object.fromEntries(((json as BatchErrorBody)?.values ?? []).map((v) => [v.key, v.value]));
}

let seq = 0;
const uid = (p: string) => `${p}-${++seq}`;

describe('the Batch emulator is as strict as Batch', () => {
  let emu: BatchEmulatorHandle;
  let client: BatchServiceClient;
  const call = (method: string, path: string, body?: unknown, opts?: Parameters<typeof signedFetch>[4]) => signedFetch(emu, method, path, body, opts);

  const recorder = createContractRecorder();
  beforeAll(async () => {
    emu = await startBatchEmulator({ timing: FAST, onExchange: (ex) => recorder.onExchange(ex) });
    client = sdkClient(emu);
  });
  afterAll(async () => {
    await emu?.stop();
  });

  describe('authentication', () => {
    it('accepts an ocp-date within 15 minutes and answers 403 AuthenticationFailed outside the window', async () => {
      const at = (offsetMin: number) => ({ headers: { 'ocp-date': new Date(Date.now() + offsetMin * 60_000).toUTCString() } });
      expect((await call('GET', '/pools', undefined, at(-10))).status).toBe(200);
      for (const offset of [-20, 20]) {
        const r = await call('GET', '/pools', undefined, at(offset));
        expect(r.status).toBe(403);
        expect((r.json as BatchErrorBody).code).toBe('AuthenticationFailed');
        expect(valuesOf(r.json).AuthenticationErrorDetail).toMatch(/more than 15 minutes/);
      }
    });

    it('answers 400 InvalidAuthenticationInfo for an Authorization header that is not SharedKey account:signature', async () => {
      const res = await fetch(`${emu.url}/pools?api-version=2022-10-01.16.0`, {
        headers: { Authorization: 'SharedKey no-signature', 'ocp-date': new Date().toUTCString() },
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as BatchErrorBody).code).toBe('InvalidAuthenticationInfo');
    });

    it('answers 501 for a Microsoft Entra ID bearer token when it was started without a tenant to check it against', async () => {
      const res = await fetch(`${emu.url}/pools?api-version=2022-10-01.16.0`, { headers: { Authorization: 'Bearer eyJ0eXAi.x.y' } });
      expect(res.status).toBe(501);
    });
  });

  describe('api-version and operations', () => {
    it('refuses an api-version other than the one it implements, and a missing one', async () => {
      const other = await call('GET', '/pools', undefined, { apiVersion: '2023-05-01.17.0' });
      expect(other.status).toBe(400);
      expect((other.json as BatchErrorBody).code).toBe('UnsupportedRequestVersion');
      expect(valuesOf(other.json)).toMatchObject({ QueryParameterName: 'api-version', QueryParameterValue: '2023-05-01.17.0' });
      const none = await call('GET', '/pools', undefined, { apiVersion: null });
      expect(none.status).toBe(400);
      expect((none.json as BatchErrorBody).code).toBe('MissingRequiredQueryParameter');
    });

    it.each([
      ['POST', '/pools/p1/enableautoscale', { autoScaleFormula: '$TargetDedicatedNodes = 1;' }, 'Pool_EnableAutoScale'],
      ['GET', '/jobschedules', undefined, 'JobSchedule_List'],
      ['GET', '/applications', undefined, 'Application_List'],
      [
        'POST',
        '/pools/p1/nodes/n1/uploadbatchservicelogs',
        { containerUrl: 'https://a.blob.core.windows.net/c?sig=x', startTime: '2026-01-01T00:00:00Z' },
        'ComputeNode_UploadBatchServiceLogs',
      ],
      ['GET', '/certificates(thumbprintAlgorithm=sha1,thumbprint=abc)', undefined, 'Certificate_Get'],
    ])('answers 501 naming the operation for %s %s (a spec operation it does not emulate)', async (method, path, body, operationId) => {
      const r = await call(method, path, body);
      expect(r.status).toBe(501);
      expect((r.json as BatchErrorBody).code).toBe('NotImplemented');
      expect(valuesOf(r.json).OperationId).toBe(operationId);
      expect((r.json as BatchErrorBody).message?.value).toContain(operationId);
    });

    it('answers 400 InvalidUri for a path no operation has, 405 for a verb the resource does not take, 400 for a broken URL', async () => {
      expect((await call('GET', '/nonsense')).status).toBe(400);
      expect((await call('PUT', '/pools/p1', { id: 'p1' })).status).toBe(405);
      const broken = await call('GET', '/pools/%E0%A4%A');
      expect({ status: broken.status, code: (broken.json as BatchErrorBody).code }).toEqual({ status: 400, code: 'RequestUrlFailedToParse' });
    });
  });

  describe('request bodies and query parameters are checked against the spec', () => {
    const pool = (extra: object) => ({ id: uid('schema'), vmSize: 'standard_d2s_v3', virtualMachineConfiguration: VM, targetDedicatedNodes: 0, ...extra });

    it.each([
      ['a wrong type', { targetDedicatedNodes: 'two' }, 'InvalidPropertyValue', 'targetDedicatedNodes'],
      [
        'a nested wrong type',
        { taskSlotsPerNode: 1, startTask: { commandLine: '/bin/true', maxTaskRetryCount: '1' } },
        'InvalidPropertyValue',
        'startTask.maxTaskRetryCount',
      ],
      ['a value outside an enum', { taskSchedulingPolicy: { nodeFillType: 'random' } }, 'InvalidPropertyValue', 'taskSchedulingPolicy.nodeFillType'],
      ['a bad duration', { resizeTimeout: '15 minutes' }, 'InvalidPropertyValue', 'resizeTimeout'],
      ['a property the spec does not define', { preloadEverything: true }, 'UnsupportedProperty', 'preloadEverything'],
      [
        'a nested property the spec does not define',
        { startTask: { commandLine: '/bin/true', runElevated: true } },
        'UnsupportedProperty',
        'startTask.runElevated',
      ],
      [
        'a missing required nested property',
        { virtualMachineConfiguration: { imageReference: VM.imageReference } },
        'MissingRequiredProperty',
        'virtualMachineConfiguration.nodeAgentSKUId',
      ],
    ])('refuses a pool with %s', async (_what, extra, code, property) => {
      const r = await call('POST', '/pools', pool(extra));
      expect(r.status).toBe(400);
      expect((r.json as BatchErrorBody).code).toBe(code);
      expect(valuesOf(r.json).PropertyName).toBe(property);
    });

    it('names the task in a collection by its index', async () => {
      const p = uid('coll');
      await client.pool.add({ id: p, vmSize: 'standard_d2s_v3', virtualMachineConfiguration: VM, targetDedicatedNodes: 0 });
      await client.job.add({ id: p, poolInfo: { poolId: p } });
      const r = await call('POST', `/jobs/${p}/addtaskcollection`, {
        value: [
          { id: 'a', commandLine: '/bin/true' },
          { id: 'b', commandLine: '/bin/true', constraints: { maxTaskRetryCount: 'x' } },
        ],
      });
      expect(r.status).toBe(400);
      expect(valuesOf(r.json).PropertyName).toBe('value[1].constraints.maxTaskRetryCount');
    });

    it.each([
      ['/pools', "vmSize eq 'standard_d2s_v3' and startswith(id,'schema')", 200],
      ['/pools', "displayName eq 'x'", 400], // not a filterable pool property
      ['/pools', 'targetDedicatedNodes gt 1', 400],
      ['/pools', "allocationState ne 'steady'", 400], // allocationState takes eq only
      ['/pools', "startswith(vmSize,'standard')", 400], // vmSize takes eq, ne
      ['/jobs', "executionInfo/poolId eq 'p' or state eq 'active'", 200],
      ['/jobs', 'priority gt 0', 400],
      ['/jobs', "metadata eq 'x'", 400],
    ])('GET %s?$filter=%s answers %i (only the properties the Batch reference lists for that list)', async (path, filter, status) => {
      const r = await call('GET', `${path}?$filter=${encodeURIComponent(filter)}`);
      expect(r.status).toBe(status);
      if (status === 400) expect(valuesOf(r.json)).toMatchObject({ QueryParameterName: '$filter', QueryParameterValue: filter });
    });

    it('filters tasks on executionInfo/result and lastModifiedTime, and refuses commandLine', async () => {
      const j = uid('filters');
      await client.pool.add({ id: j, vmSize: 'standard_d2s_v3', virtualMachineConfiguration: VM, targetDedicatedNodes: 0 });
      await client.job.add({ id: j, poolInfo: { poolId: j } });
      await client.task.add(j, { id: 't1', commandLine: '/bin/true' });
      const since = new Date(Date.now() - 60_000).toISOString();
      const listed = await client.task.list(j, { taskListOptions: { filter: `state eq 'active' and lastModifiedTime ge datetime'${since}'` } });
      expect(listed.map((t) => t.id)).toEqual(['t1']);
      expect((await call('GET', `/jobs/${j}/tasks?$filter=${encodeURIComponent("commandLine eq '/bin/true'")}`)).status).toBe(400);
    });

    it('refuses query parameters the operation does not define, and badly typed ones', async () => {
      const unknown = await call('GET', '/pools?colour=red');
      expect(unknown.status).toBe(400);
      expect((unknown.json as BatchErrorBody).code).toBe('UnsupportedQueryParameter');
      expect(valuesOf(unknown.json).QueryParameterName).toBe('colour');
      const typed = await call('GET', '/jobs?timeout=soon');
      expect(typed.status).toBe(400);
      expect(valuesOf(typed.json)).toMatchObject({ QueryParameterName: 'timeout', QueryParameterValue: 'soon' });
    });
  });

  describe("Batch's documented rules beyond the schema", () => {
    const pool = (extra: object) => ({ id: uid('rules'), vmSize: 'standard_d2s_v3', virtualMachineConfiguration: VM, targetDedicatedNodes: 0, ...extra });
    const expectError = (r: { status: number; json: unknown }, status: number, code: string, property?: string) => {
      expect({ status: r.status, code: (r.json as BatchErrorBody).code }).toEqual({ status, code });
      if (property) expect(valuesOf(r.json).PropertyName).toBe(property);
    };
    let job: string;
    beforeAll(async () => {
      job = uid('rulesjob');
      await client.pool.add({ id: job, vmSize: 'standard_d2s_v3', virtualMachineConfiguration: VM, targetDedicatedNodes: 0 });
      await client.job.add({ id: job, poolInfo: { poolId: job } });
    });

    it('needs a VM configuration, and refuses Cloud Services pools (retired 29 February 2024)', async () => {
      const { virtualMachineConfiguration: _none, ...bare } = pool({});
      expectError(await call('POST', '/pools', bare), 400, 'MissingRequiredProperty', 'virtualMachineConfiguration');
      const { virtualMachineConfiguration: _vm, ...cloud } = pool({ cloudServiceConfiguration: { osFamily: '6' } });
      expectError(await call('POST', '/pools', cloud), 400, 'InvalidPropertyValue', 'cloudServiceConfiguration');
    });

    it('refuses a resizeTimeout under 5 minutes on add, resize and removenodes', async () => {
      expectError(await call('POST', '/pools', pool({ resizeTimeout: 'PT4M59S' })), 400, 'InvalidPropertyValue', 'resizeTimeout');
      const p = uid('resize');
      expect((await call('POST', '/pools', { ...pool({}), id: p, resizeTimeout: 'PT5M' })).status).toBe(201);
      expectError(await call('POST', `/pools/${p}/resize`, { targetDedicatedNodes: 1, resizeTimeout: 'PT1M' }), 400, 'InvalidPropertyValue', 'resizeTimeout');
      expectError(await call('POST', `/pools/${p}/removenodes`, { nodeList: ['n'], resizeTimeout: 'PT30S' }), 400, 'InvalidPropertyValue', 'resizeTimeout');
    });

    it.each([
      ['enableAutoScale with a dedicated target', { enableAutoScale: true, autoScaleFormula: '$TargetDedicatedNodes = 1;' }, 'targetDedicatedNodes'],
      ['enableAutoScale without a formula', { enableAutoScale: true, targetDedicatedNodes: undefined }, 'autoScaleFormula'],
      ['a formula without enableAutoScale', { autoScaleFormula: '$TargetDedicatedNodes = 1;' }, 'autoScaleFormula'],
    ])('refuses %s with 400 InvalidAutoScalingSettings', async (_what, extra, property) => {
      expectError(await call('POST', '/pools', pool(extra)), 400, 'InvalidAutoScalingSettings', property);
    });

    it('refuses fixed scaling without any target, and answers a valid autoscale pool with 501 (formulas are not evaluated)', async () => {
      expectError(await call('POST', '/pools', pool({ targetDedicatedNodes: undefined })), 400, 'MissingRequiredProperty', 'targetDedicatedNodes');
      expectError(
        await call('POST', '/pools', pool({ targetDedicatedNodes: undefined, enableAutoScale: true, autoScaleFormula: '$TargetDedicatedNodes = 1;' })),
        501,
        'NotImplemented',
        'enableAutoScale',
      );
    });

    it.each([
      // Mounts are modelled (tests/batch/emulator.mounts.test.ts); a blobfuse mount with a managed identity is not.
      [
        'mountConfiguration[0].azureBlobFileSystemConfiguration.identityReference',
        {
          mountConfiguration: [
            {
              azureBlobFileSystemConfiguration: {
                accountName: 'a',
                containerName: 'c',
                relativeMountPath: 'b',
                identityReference: { resourceId: '/subscriptions/x' },
              },
            },
          ],
        },
        501,
        'NotImplemented',
      ],
      [
        'virtualMachineConfiguration.containerConfiguration.containerImageNames',
        { virtualMachineConfiguration: { ...VM, containerConfiguration: { type: 'dockerCompatible', containerImageNames: ['busybox'] } } },
        501,
        'NotImplemented',
      ],
      ['applicationPackageReferences', { applicationPackageReferences: [{ applicationId: 'app' }] }, 409, 'InvalidApplicationPackageReferences'],
      ['metadata[0].name', { metadata: [{ name: '', value: 'x' }] }, 400, 'EmptyMetadataKey'],
    ])('refuses a pool with %s instead of ignoring it', async (property, extra, status, code) => {
      expectError(await call('POST', '/pools', pool(extra)), status, code, property);
    });

    it('needs exactly one source per resource file, a filePath with httpUrl, and a filePath inside the working directory', async () => {
      const task = (resourceFiles: object[]) => ({ id: uid('rf'), commandLine: '/bin/true', resourceFiles });
      expectError(await call('POST', `/jobs/${job}/tasks`, task([{ filePath: 'x' }])), 400, 'MissingRequiredProperty', 'resourceFiles[0].httpUrl');
      expectError(
        await call('POST', `/jobs/${job}/tasks`, task([{ httpUrl: 'http://h/a', storageContainerUrl: 'http://h/c', filePath: 'x' }])),
        400,
        'InvalidPropertyValue',
        'resourceFiles[0].httpUrl',
      );
      expectError(await call('POST', `/jobs/${job}/tasks`, task([{ httpUrl: 'http://h/a' }])), 400, 'MissingRequiredProperty', 'resourceFiles[0].filePath');
      expectError(
        await call('POST', `/jobs/${job}/tasks`, task([{ httpUrl: 'http://h/a', filePath: '../../escape' }])),
        400,
        'InvalidPropertyValue',
        'resourceFiles[0].filePath',
      );
      expectError(
        await call(
          'POST',
          '/pools',
          pool({ startTask: { commandLine: '/bin/true', resourceFiles: [{ autoStorageContainerName: 'c', httpUrl: 'http://h/a', filePath: 'a' }] } }),
        ),
        400,
        'InvalidPropertyValue',
        'startTask.resourceFiles[0].httpUrl',
      );
    });

    it("refuses an exitConditions jobAction when the job's onTaskFailure is noaction", async () => {
      const body = { id: uid('exit'), commandLine: '/bin/true', exitConditions: { default: { jobAction: 'terminate' } } };
      expectError(await call('POST', `/jobs/${job}/tasks`, body), 400, 'InvalidPropertyValue', 'exitConditions.default.jobAction');
    });

    it('answers 501 for job manager tasks and auto pools; takes output files uploaded with a managed identity', async () => {
      expectError(
        await call('POST', '/jobs', { id: uid('jm'), poolInfo: { poolId: job }, jobManagerTask: { id: 'jm', commandLine: '/bin/true' } }),
        501,
        'NotImplemented',
        'jobManagerTask',
      );
      expectError(
        await call('POST', '/jobs', {
          id: uid('ap'),
          poolInfo: { autoPoolSpecification: { poolLifetimeOption: 'job', pool: { vmSize: 'standard_d2s_v3', virtualMachineConfiguration: VM } } },
        }),
        501,
        'NotImplemented',
        'poolInfo.autoPoolSpecification',
      );
      const outputFiles = [
        {
          filePattern: '*.txt',
          destination: { container: { containerUrl: 'https://acct.blob.core.windows.net/out', identityReference: { resourceId: '/subscriptions/0/x' } } },
          uploadOptions: { uploadCondition: 'taskcompletion' },
        },
      ];
      // identityReference is honoured at upload time (with the pool's identity), so the task is accepted.
      expect((await call('POST', `/jobs/${job}/tasks`, { id: uid('of'), commandLine: '/bin/true', outputFiles })).status).toBe(201);
    });

    it('refuses a task collection of 1 MB or more with 413 RequestBodyTooLarge, even under 100 tasks', async () => {
      const big = 'x'.repeat(120 * 1024);
      const value = Array.from({ length: 10 }, (_, i) => ({ id: `big${i}`, commandLine: '/bin/true', environmentSettings: [{ name: 'PAD', value: big }] }));
      const r = await call('POST', `/jobs/${job}/addtaskcollection`, { value });
      expectError(r, 413, 'RequestBodyTooLarge');
      expect((await call('GET', `/jobs/${job}/tasks/big0`)).status).toBe(404);
    });
  });

  describe('conflicts answer 409 with the state they conflict with', () => {
    let pool: string;
    let job: string;
    let nodeId: string;
    beforeAll(async () => {
      pool = uid('conflicts');
      job = pool;
      await client.pool.add({ id: pool, vmSize: 'standard_d2s_v3', virtualMachineConfiguration: VM, targetDedicatedNodes: 1, taskSlotsPerNode: 2 });
      [nodeId] = (await waitForNodes(client, pool, 1)).map((n) => n.id as string);
      await client.job.add({ id: job, poolInfo: { poolId: pool } });
    });

    it('refuses to disable (or enable) scheduling on a node already in that state', async () => {
      await client.computeNode.disableScheduling(pool, nodeId);
      const again = await call('POST', `/pools/${pool}/nodes/${nodeId}/disablescheduling`, {});
      expect({ status: again.status, code: (again.json as BatchErrorBody).code }).toEqual({ status: 409, code: 'NodeAlreadyInTargetSchedulingState' });
      expect((await client.computeNode.get(pool, nodeId)).state).toBe('offline');
      await client.computeNode.enableScheduling(pool, nodeId);
      expect((await call('POST', `/pools/${pool}/nodes/${nodeId}/enablescheduling`)).status).toBe(409);
      expect((await client.computeNode.get(pool, nodeId)).state).toBe('idle');
    });

    it('disabling scheduling requeues running tasks by default, or lets them finish with taskcompletion', async () => {
      await client.task.add(job, { id: 'requeued', commandLine: '/bin/sleep 30' });
      await waitForTask(client, job, 'requeued', 'running');
      await client.computeNode.disableScheduling(pool, nodeId);
      const t = await waitForTask(client, job, 'requeued', 'active');
      expect(t.executionInfo?.requeueCount).toBe(1);
      expect((await client.computeNode.get(pool, nodeId)).state).toBe('offline');
      await client.computeNode.enableScheduling(pool, nodeId);
      await waitForTask(client, job, 'requeued', 'running');
      await client.task.terminate(job, 'requeued');

      await client.task.add(job, { id: 'finishes', commandLine: '/bin/sleep 0.5' });
      await waitForTask(client, job, 'finishes', 'running');
      await client.computeNode.disableScheduling(pool, nodeId, { nodeDisableSchedulingOption: 'taskcompletion' });
      expect((await waitForTask(client, job, 'finishes')).executionInfo?.result).toBe('success');
      await waitFor('node offline', async () => ((await client.computeNode.get(pool, nodeId)).state === 'offline' ? true : undefined));
      await client.computeNode.enableScheduling(pool, nodeId);
    });

    it('refuses to terminate or update a completed task (TaskCompleted) and to reactivate one that did not fail', async () => {
      await client.task.add(job, { id: 'done', commandLine: '/bin/true' });
      await waitForTask(client, job, 'done');
      for (const [method, path, body] of [
        ['POST', `/jobs/${job}/tasks/done/terminate`, undefined],
        ['PUT', `/jobs/${job}/tasks/done`, { constraints: { maxTaskRetryCount: 1 } }],
      ] as const) {
        const r = await call(method, path, body);
        expect({ status: r.status, code: (r.json as BatchErrorBody).code }).toEqual({ status: 409, code: 'TaskCompleted' });
      }
      const reactivate = await call('POST', `/jobs/${job}/tasks/done/reactivate`);
      expect({ status: reactivate.status, code: (reactivate.json as BatchErrorBody).code }).toEqual({ status: 409, code: 'TaskSucceeded' });
      await client.task.add(job, {
        id: 'waiting',
        commandLine: '/bin/true',
        affinityInfo: { affinityId: 'TVM:nowhere' },
        multiInstanceSettings: { numberOfInstances: 2, coordinationCommandLine: '/bin/true' },
      });
      const notDone = await call('POST', `/jobs/${job}/tasks/waiting/reactivate`);
      expect({ status: notDone.status, code: (notDone.json as BatchErrorBody).code }).toEqual({ status: 409, code: 'TaskNotCompleted' });
    });

    it('refuses to disable a job that is not active, and to terminate a terminating one', async () => {
      const j = uid('states');
      await client.job.add({
        id: j,
        poolInfo: { poolId: pool },
        jobPreparationTask: { commandLine: '/bin/true' },
        jobReleaseTask: { commandLine: '/bin/sleep 1' },
      });
      await client.job.disable(j, 'requeue');
      const twice = await call('POST', `/jobs/${j}/disable`, { disableTasks: 'requeue' });
      expect({ status: twice.status, code: (twice.json as BatchErrorBody).code }).toEqual({ status: 409, code: 'JobNotActive' });
      await client.job.enable(j);
      await client.task.add(j, { id: 'quick', commandLine: '/bin/true' });
      await waitForTask(client, j, 'quick');
      await client.job.terminate(j);
      const again = await call('POST', `/jobs/${j}/terminate`);
      expect({ status: again.status, code: (again.json as BatchErrorBody).code }).toEqual({ status: 409, code: 'JobBeingTerminated' });
    });

    it('refuses a resize while the pool is resizing (PoolBeingResized) and a reboot of a node still being created', async () => {
      const p = uid('resizing');
      emu.setFaults({ slowNodes: { count: 1, extraAllocateMs: 1000, poolId: p } });
      try {
        await client.pool.add({ id: p, vmSize: 'standard_d2s_v3', virtualMachineConfiguration: VM, targetDedicatedNodes: 1 });
        const r = await call('POST', `/pools/${p}/resize`, { targetDedicatedNodes: 2 });
        expect({ status: r.status, code: (r.json as BatchErrorBody).code }).toEqual({ status: 409, code: 'PoolBeingResized' });
        const [creating] = await client.computeNode.list(p);
        const reboot = await call('POST', `/pools/${p}/nodes/${creating.id}/reboot`, {});
        expect({ status: reboot.status, code: (reboot.json as BatchErrorBody).code }).toEqual({ status: 409, code: 'NodeBeingCreated' });
      } finally {
        emu.setFaults({ slowNodes: undefined });
      }
    });
  });

  describe('deletion takes a while, as on Batch', () => {
    let slow: BatchEmulatorHandle;
    let c: BatchServiceClient;
    beforeAll(async () => {
      slow = await startBatchEmulator({ timing: { ...FAST, poolDeleteMs: 800, jobDeleteMs: 800 } });
      c = sdkClient(slow);
    });
    afterAll(async () => {
      await slow?.stop();
    });
    const raw = (method: string, path: string, body?: unknown) => signedFetch(slow, method, path, body);

    it('keeps a deleted pool in state deleting and refuses its id with 409 PoolBeingDeleted until it is gone', async () => {
      const body = { id: 'reused-pool', vmSize: 'standard_d2s_v3', virtualMachineConfiguration: VM, targetDedicatedNodes: 1 };
      await c.pool.add(body);
      await waitForNodes(c, 'reused-pool', 1);
      await c.pool.deleteMethod('reused-pool');
      expect((await c.pool.get('reused-pool')).state).toBe('deleting');
      const again = await raw('POST', '/pools', body);
      expect({ status: again.status, code: (again.json as BatchErrorBody).code }).toEqual({ status: 409, code: 'PoolBeingDeleted' });
      expect((await raw('POST', '/pools/reused-pool/resize', { targetDedicatedNodes: 2 })).status).toBe(409);
      await waitFor('pool gone', async () => ((await c.pool.exists('reused-pool')).body === false ? true : undefined));
      expect((await raw('POST', '/pools', body)).status).toBe(201);
    });

    it('keeps a deleted job in state deleting and refuses its id with 409 JobBeingDeleted until it is gone', async () => {
      await c.pool.add({ id: 'jp', vmSize: 'standard_d2s_v3', virtualMachineConfiguration: VM, targetDedicatedNodes: 0 });
      await c.job.add({ id: 'reused-job', poolInfo: { poolId: 'jp' } });
      await c.job.deleteMethod('reused-job');
      expect((await c.job.get('reused-job')).state).toBe('deleting');
      const again = await raw('POST', '/jobs', { id: 'reused-job', poolInfo: { poolId: 'jp' } });
      expect({ status: again.status, code: (again.json as BatchErrorBody).code }).toEqual({ status: 409, code: 'JobBeingDeleted' });
      expect((await raw('POST', '/jobs/reused-job/tasks', { id: 't', commandLine: '/bin/true' })).status).toBe(409);
      await waitFor('job gone', async () => ((await raw('GET', '/jobs/reused-job')).status === 404 ? true : undefined));
      expect((await raw('POST', '/jobs', { id: 'reused-job', poolInfo: { poolId: 'jp' } })).status).toBe(201);
    });
  });

  describe('exitConditions, onTaskFailure and disableTasks are carried out', () => {
    let pool: string;
    beforeAll(async () => {
      pool = uid('exits');
      await client.pool.add({ id: pool, vmSize: 'standard_d2s_v3', virtualMachineConfiguration: VM, targetDedicatedNodes: 1, taskSlotsPerNode: 4 });
      await waitForNodes(client, pool, 1);
    });
    const exitJob = async (extra: object = {}) => {
      const id = uid('exitjob');
      await client.job.add({ id, poolInfo: { poolId: pool }, onTaskFailure: 'performexitoptionsjobaction', ...extra });
      return id;
    };
    const jobState = async (id: string) => (await client.job.get(id)).state;

    it('terminates the job (terminateReason TaskFailed) for an exit code mapped to jobAction terminate', async () => {
      const j = await exitJob();
      await client.task.add(j, {
        id: 'ok-exit-1',
        commandLine: '/bin/sh -c "exit 1"',
        exitConditions: { exitCodes: [{ code: 1, exitOptions: { jobAction: 'none' } }] },
      });
      await waitForTask(client, j, 'ok-exit-1');
      expect(await jobState(j)).toBe('active');
      await client.task.add(j, {
        id: 'exit-3',
        commandLine: '/bin/sh -c "exit 3"',
        exitConditions: { exitCodeRanges: [{ start: 2, end: 5, exitOptions: { jobAction: 'terminate' } }] },
      });
      const done = await waitFor('job completed', async () => {
        const got = await client.job.get(j);
        return got.state === 'completed' ? got : undefined;
      });
      expect(done.executionInfo?.terminateReason).toBe('TaskFailed');
    });

    it('terminates on any failure by default (jobAction defaults to terminate), but never with onTaskFailure noaction', async () => {
      const j = await exitJob();
      await client.task.add(j, { id: 'fails', commandLine: '/bin/sh -c "exit 7"' });
      await waitFor('job completed', async () => ((await jobState(j)) === 'completed' ? true : undefined));
      const plain = uid('noaction');
      await client.job.add({ id: plain, poolInfo: { poolId: pool } });
      await client.task.add(plain, { id: 'fails', commandLine: '/bin/sh -c "exit 7"' });
      await waitForTask(client, plain, 'fails');
      expect(await jobState(plain)).toBe('active');
    });

    it('disables the job for jobAction disable, even on exit code 0 when it is listed', async () => {
      const j = await exitJob();
      await client.task.add(j, {
        id: 'disabler',
        commandLine: '/bin/true',
        exitConditions: { exitCodes: [{ code: 0, exitOptions: { jobAction: 'disable' } }] },
      });
      await waitFor('job disabled', async () => ((await jobState(j)) === 'disabled' ? true : undefined));
      await client.task.add(j, { id: 'held', commandLine: '/bin/true' });
      await new Promise((r) => setTimeout(r, 300));
      expect((await client.task.get(j, 'held')).state).toBe('active');
      await client.job.enable(j);
      await waitForTask(client, j, 'held');
    });

    it('takes preProcessingError for a task that could not start, and does not retry it', async () => {
      const j = await exitJob();
      await client.task.add(j, {
        id: 'no-download',
        commandLine: '/bin/true',
        resourceFiles: [{ httpUrl: 'http://127.0.0.1:9/missing', filePath: 'x' }],
        constraints: { maxTaskRetryCount: 2 },
        exitConditions: { preProcessingError: { jobAction: 'none' }, default: { jobAction: 'terminate' } },
      });
      const t = await waitForTask(client, j, 'no-download');
      expect(t.executionInfo).toMatchObject({ result: 'failure', retryCount: 0, failureInfo: { code: 'BlobDownloadMiscError' } });
      expect(await jobState(j)).toBe('active');
    });

    it('lets dependent tasks run after a failure whose dependencyAction is satisfy, and holds them after a blocking one', async () => {
      const j = uid('deps');
      await client.job.add({ id: j, poolInfo: { poolId: pool }, usesTaskDependencies: true });
      await client.task.add(j, { id: 'soft', commandLine: '/bin/sh -c "exit 4"', exitConditions: { default: { dependencyAction: 'satisfy' } } });
      await client.task.add(j, { id: 'hard', commandLine: '/bin/sh -c "exit 4"' });
      await client.task.add(j, { id: 'after-soft', commandLine: '/bin/true', dependsOn: { taskIds: ['soft'] } });
      await client.task.add(j, { id: 'after-hard', commandLine: '/bin/true', dependsOn: { taskIds: ['hard'] } });
      await waitForTask(client, j, 'after-soft');
      await waitForTask(client, j, 'hard');
      await new Promise((r) => setTimeout(r, 300));
      expect((await client.task.get(j, 'after-hard')).state).toBe('active');
    });

    it.each([
      ['requeue', 'active', 1],
      ['terminate', 'completed', 0],
    ] as const)('job disable with disableTasks %s: the running task is %s', async (disableTasks, taskState, requeues) => {
      const j = uid(`disable-${disableTasks}`);
      await client.job.add({ id: j, poolInfo: { poolId: pool } });
      await client.task.add(j, { id: 'long', commandLine: '/bin/sleep 30' });
      await waitForTask(client, j, 'long', 'running');
      await client.job.disable(j, disableTasks);
      const t = await waitForTask(client, j, 'long', taskState);
      expect(t.executionInfo?.requeueCount).toBe(requeues);
      if (disableTasks === 'terminate') expect(t.executionInfo?.failureInfo?.code).toBe('TaskEnded');
      expect(await jobState(j)).toBe('disabled');
      if (disableTasks === 'requeue') {
        await client.job.enable(j);
        await waitForTask(client, j, 'long', 'running');
      }
      await client.job.terminate(j);
    });

    it('job disable with disableTasks wait: the job is disabling until its running tasks finish', async () => {
      const j = uid('disable-wait');
      await client.job.add({ id: j, poolInfo: { poolId: pool } });
      await client.task.add(j, { id: 'finishing', commandLine: '/bin/sleep 1' });
      await waitForTask(client, j, 'finishing', 'running');
      await client.job.disable(j, 'wait');
      expect(await jobState(j)).toBe('disabling');
      expect((await waitForTask(client, j, 'finishing')).executionInfo?.result).toBe('success');
      await waitFor('job disabled', async () => ((await jobState(j)) === 'disabled' ? true : undefined));
    });
  });

  it('answered every request in these tests with a status and body the spec documents (errors are BatchError)', () => {
    const v = createContractValidator({ specPath: defaultSpecPath() });
    const answered = recorder.exchanges().filter((ex) => v.matchOperation(ex.method, ex.path));
    expect(answered.length).toBeGreaterThan(100);
    expect(answered.flatMap((ex) => v.validateResponse(ex).map((p) => `${ex.method} ${ex.path}: ${p}`))).toEqual([]);
  });
});
