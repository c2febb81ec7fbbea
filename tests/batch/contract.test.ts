/**
 * Contract: a representative adapter workload (pool → idle nodes → job with preparation/release
 * tasks → node-pinned task → multi-instance task → files → terminate → delete, plus the "already
 * exists / not found" paths) runs through the real SDK against the emulator, and every request the
 * adapter sent and every response the emulator returned must validate against the official
 * Batch OpenAPI document (strictly: unknown or missing properties fail).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { createContractRecorder, createContractValidator, defaultSpecPath, type ContractRecorder } from '../../local/batch/contract';
import * as batch from '../../shared/adapters/batch';
import { readSupportedImages } from '../../shared/adapters/batch/facts';
import { productOperations } from './productOperations';
import { until } from './until';
import { emulatorBatchContext } from './emulatorContext';

const JOB = 'contractjob';
const POOL = `${JOB}-pool`;
const BJOB = `${JOB}-run`;
/** The workload must touch at least this many distinct spec operations. */
const MIN_OPERATIONS = 22;

describe('every exchange of the adapter workload conforms to the Batch OpenAPI document', () => {
  let emu: BatchEmulatorHandle;
  let files: http.Server;
  let fileUrl: string;
  let recorder: ContractRecorder;
  let ctx: batch.BatchContext;

  beforeAll(async () => {
    files = http.createServer((_req, res) => res.end('#!/bin/sh\necho helper ran\n'));
    await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
    fileUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}/helper.sh`;
    recorder = createContractRecorder();
    emu = await startBatchEmulator({
      timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 },
      onExchange: (ex) => recorder.onExchange(ex),
    });
    ctx = emulatorBatchContext(emu, 3);
  });

  afterAll(async () => {
    await emu?.stop();
    await new Promise<void>((r) => (files ? files.close(() => r()) : r()));
  });

  test('workload', async () => {
    await batch.createJobPool(ctx, {
      poolId: POOL,
      jobId: JOB,
      vmSize: 'standard_hb120rs_v3',
      targetDedicatedNodes: 2,
      image: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204', version: 'latest' },
      nodeAgentSkuId: 'batch.node.ubuntu 22.04',
      containerRegistries: [
        {
          registryServer: 'hpcacr.azurecr.io',
          identityResourceId: '/subscriptions/0/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/pull',
        },
      ],
      startTask: {
        commandLine: '/bin/sh -c "sh helper.sh"',
        resourceFiles: [{ httpUrl: fileUrl, filePath: 'helper.sh', fileMode: '0755' }],
        environment: [{ name: 'STAGE', value: 'start' }],
        elevated: true,
      },
      resizeTimeoutMinutes: 10,
    });
    await batch.createJobPool(ctx, {
      poolId: POOL,
      jobId: JOB,
      vmSize: 'standard_hb120rs_v3',
      targetDedicatedNodes: 2,
      image: { publisher: 'p', offer: 'o', sku: 's' },
      nodeAgentSkuId: 'batch.node.ubuntu 22.04',
    }); // PoolExists → look and compare
    await batch.inspectPool(ctx, 'absentpool'); // 404
    await batch.listOwnedPools(ctx);
    const pool = await until('idle nodes', async () => {
      const s = await batch.getPoolSnapshot(ctx, POOL);
      return s && s.nodes.length === 2 && s.nodes.every((n) => n.state === 'idle') ? s : undefined;
    });
    const [n0, n1] = pool.nodes;
    await batch.readNodeFile(ctx, POOL, n0.id, 'startup/stdout.txt');

    await batch.createJob(ctx, {
      batchJobId: BJOB,
      jobId: JOB,
      poolId: POOL,
      displayName: 'contract job',
      environment: [{ name: 'JOB_WIDE', value: '1' }],
      preparationTask: { commandLine: '/bin/sh -c "echo prep"', resourceFiles: [{ httpUrl: fileUrl, filePath: 'prep.sh' }] },
      releaseTask: { commandLine: '/bin/sh -c "echo release"', elevated: true, maxWallClockSeconds: 300 },
      maxWallClockSeconds: 3600,
    });
    await batch.createJob(ctx, { batchJobId: BJOB, jobId: JOB, poolId: POOL }); // JobExists → look and compare
    await batch.listOwnedJobs(ctx);

    await batch.addNodeTask(ctx, BJOB, {
      id: 'pull-0',
      affinityId: n1.affinityId,
      commandLine: '/bin/sh -c "echo pulled on $AZ_BATCH_NODE_ID"',
      resourceFiles: [{ httpUrl: fileUrl, filePath: 'helper.sh' }],
      environment: [{ name: 'IMAGE', value: 'hpc/mpi:1' }],
      maxWallClockSeconds: 60,
      maxTaskRetryCount: 1,
    });
    await batch.addNodeTask(ctx, BJOB, { id: 'pull-0', affinityId: n1.affinityId, commandLine: '/bin/sh -c "echo pulled on $AZ_BATCH_NODE_ID"' }); // TaskExists
    // The per-node tasks as the product adds them (Task_AddCollection), a repeat of an existing id among them.
    await batch.addTaskCollection(ctx, BJOB, [
      batch.buildNodeTaskParameter({ id: 'pull-1', affinityId: n1.affinityId, commandLine: '/bin/sh -c "echo pulled on $AZ_BATCH_NODE_ID"' }),
      batch.buildNodeTaskParameter({ id: 'pull-0', affinityId: n1.affinityId, commandLine: '/bin/sh -c "echo pulled on $AZ_BATCH_NODE_ID"' }),
    ]);
    await until('pull done', async () => ((await batch.getTask(ctx, BJOB, 'pull-0')).state === 'completed' ? true : undefined));
    await batch.readTaskFile(ctx, BJOB, 'pull-0', 'stdout.txt', { maxBytes: 8 });
    await batch.readTaskFile(ctx, BJOB, 'pull-0', 'missing.txt'); // 404
    await batch.listTaskFiles(ctx, BJOB, 'pull-0');

    const mpiTask = batch.buildMpiTaskParameter({
      batchJobId: BJOB,
      taskId: 'mpi',
      numberOfInstances: 2,
      coordinationCommandLine: '/bin/sh -c "echo coordinating"',
      applicationCommandLine: '/bin/sh -c "echo hosts=$AZ_BATCH_HOST_LIST"',
      commonResourceFiles: [{ httpUrl: fileUrl, filePath: 'helper.sh', fileMode: '0755' }],
      environment: [{ name: 'OMPI_MCA_btl', value: 'self,tcp' }],
      maxWallClockSeconds: 600,
    });
    // Primary-only resource files are Batch's, not the product's (its tasks take every file on every node): added
    // to the body here so the emulator's handling of them stays checked against the spec.
    await batch.addTask(ctx, BJOB, { ...mpiTask, resourceFiles: [{ httpUrl: fileUrl, filePath: 'primary-only.sh' }] }, 'mpiTask.add');
    await batch.enableAutoTerminate(ctx, BJOB);
    const mpi = await until('mpi done', async () => {
      const t = await batch.getTask(ctx, BJOB, 'mpi');
      return t.state === 'completed' ? t : undefined;
    });
    expect(mpi.exitCode).toBe(0);
    const subtasks = await batch.listSubtasks(ctx, BJOB, 'mpi');
    await batch.readNodeFile(ctx, POOL, subtasks[0].nodeId!, `${subtasks[0].taskRootDirectory}/stdout.txt`);
    // The node-upload check lists a task's directory on its node (File_ListFromComputeNode).
    await batch.listNodeFiles(ctx, POOL, subtasks[0].nodeId!, subtasks[0].taskRootDirectory!);
    await batch.listTasks(ctx, BJOB);
    // Validation checks pool.image against the account's supported images (Account_ListSupportedImages).
    expect((await readSupportedImages(ctx)).length).toBeGreaterThan(0);
    await until('job ended', async () => ((await batch.getJob(ctx, BJOB))?.state === 'completed' ? true : undefined));
    await batch.getNodeLifecycleStatus(ctx, BJOB);
    await batch.enableAutoTerminate(ctx, BJOB); // 409 JobCompleted
    await batch.terminateTask(ctx, BJOB, 'pull-0'); // 409 TaskCompleted: done already
    await batch.deleteTask(ctx, BJOB, 'pull-0');
    await batch.getTask(ctx, BJOB, 'pull-0'); // 404
    await batch.terminateJob(ctx, BJOB); // 409 JobCompleted
    await batch.deleteJob(ctx, BJOB);

    await batch.resizePool(ctx, POOL, 3, 5);
    const grown = await until('3 nodes', async () => {
      const s = await batch.getPoolSnapshot(ctx, POOL);
      return s && s.allocationState === 'steady' && s.nodes.length === 3 ? s : undefined;
    });
    await batch.removeNodes(ctx, POOL, [grown.nodes[2].id]);
    await batch.deletePool(ctx, POOL);
    await batch.deletePool(ctx, POOL); // 409 PoolBeingDeleted or 404
    await batch.addNodeTask(ctx, 'absentjob', { id: 't', affinityId: 'a', commandLine: '/bin/true' }).catch(() => undefined); // 404
  });

  test('every request and every response validated', () => {
    const report = recorder.report();
    console.log(`Batch contract coverage\n${report}`);
    const violations = recorder.violations();
    expect(violations.map((v) => `${v.method} ${v.path} -> ${v.status}\n    ${v.problems.join('\n    ')}`)).toEqual([]);
    const operations = [...recorder.coverage().keys()];
    expect(operations).not.toContain('(no operation)');
    expect(operations.length).toBeGreaterThanOrEqual(MIN_OPERATIONS);
    // Every operation the product calls (read from shared/adapters/batch's sources) went over the wire here.
    expect(productOperations().filter((op) => !operations.includes(op))).toEqual([]);
    // Error responses were exercised and validated against BatchError too.
    const errorStatuses = [...recorder.statuses().values()].flat().filter((s) => s >= 400);
    expect(errorStatuses).toEqual(expect.arrayContaining([404, 409]));
  });

  test('the checks bite on the recorded traffic: one stray or missing property fails', () => {
    const v = createContractValidator({ specPath: defaultSpecPath() });
    const ex = recorder.exchanges();
    const poolGet = ex.find((e) => v.matchOperation(e.method, e.path) === 'Pool_Get' && e.status === 200)!;
    const poolAdd = ex.find((e) => v.matchOperation(e.method, e.path) === 'Pool_Add' && e.status === 201)!;
    const nodeList = ex.find((e) => v.matchOperation(e.method, e.path) === 'ComputeNode_List' && e.status === 200)!;
    expect(v.validateResponse(poolGet)).toEqual([]);
    expect(v.validateResponse({ ...poolGet, responseBody: { ...(poolGet.responseBody as object), bogus: 1 } })).toEqual([
      'Pool_Get response 200 body: / has property "bogus" that the spec does not define',
    ]);
    const { vmSize: _drop, ...withoutVmSize } = poolAdd.requestBody as Record<string, unknown>;
    expect(v.validateRequest({ ...poolAdd, requestBody: withoutVmSize })).toEqual(['Pool_Add request body: / is missing required property "vmSize"']);
    const nodes = nodeList.responseBody as { value: Record<string, unknown>[] };
    const tampered = { ...nodes, value: [{ ...nodes.value[0], gpuCount: 8 }, ...nodes.value.slice(1)] };
    expect(v.validateResponse({ ...nodeList, responseBody: tampered })[0]).toMatch(/\/value\/0 has property "gpuCount"/);
  });
});
