/**
 * The parts of the Batch adapter that need no server: request bodies (checked against the official
 * spec with the contract validator), error reading, and the retry policy.
 */
import { WebResource } from '@azure/ms-rest-js';
import fc from 'fast-check';
import { createContractValidator, defaultSpecPath } from '../../local/batch/contract';
import { checkJobAdd, checkPoolAdd, checkTaskAdd } from '../../local/batch/handlers/rules';
import {
  BatchError,
  BearerTokenCredentials,
  backoffDelay,
  buildJobAddParameter,
  buildMpiTaskParameter,
  buildNodeTaskParameter,
  buildPoolAddParameter,
  callWithRetry,
  describeSdkError,
  isRetryable,
  parseRetryAfter,
  type RetryEvent,
  type RetryPolicy,
} from '../../shared/adapters/batch';

const contract = createContractValidator({ specPath: defaultSpecPath() });
const API = 'api-version=2022-10-01.16.0';

function requestProblems(method: string, path: string, body: unknown): string[] {
  return contract.validateRequest({ method, path: `${path}?${API}`, requestBody: JSON.stringify(body) });
}

/** Batch's documented rules beyond the schema, as the emulator applies them (undefined when the body passes). */
function ruleProblem(check: () => void): string | undefined {
  try {
    check();
    return undefined;
  } catch (e) {
    return `${(e as { code?: string }).code}: ${(e as Error).message}`;
  }
}
const asJson = (b: unknown) => JSON.parse(JSON.stringify(b)) as Record<string, unknown>;
/** The job the tasks go to, as buildJobAddParameter makes it (onTaskFailure noaction, no task dependencies). */
const PRODUCT_JOB = { onTaskFailure: 'noaction', usesTaskDependencies: false };

describe('request bodies', () => {
  const poolSpec = {
    poolId: 'job7-pool',
    jobId: 'job7',
    vmSize: 'Standard_HB120rs_v3',
    targetDedicatedNodes: 4,
    image: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204' },
    nodeAgentSkuId: 'batch.node.ubuntu 22.04',
    containerRegistries: [{ registryServer: 'hpcacr.azurecr.io', identityResourceId: '/subscriptions/s/rg/id' }],
    startTask: {
      commandLine: '/bin/bash -c "echo ok"',
      elevated: true,
      environment: [{ name: 'A', value: '1' }],
      resourceFiles: [{ httpUrl: 'https://acct.blob.core.windows.net/c/setup.sh?sig=x', filePath: 'setup.sh' }],
    },
    resizeTimeoutMinutes: 20,
  };

  test('pool: inter-node communication, one slot per node, container config without image preload, ownership tags', () => {
    const p = buildPoolAddParameter(poolSpec);
    expect(p.enableInterNodeCommunication).toBe(true);
    expect(p.taskSlotsPerNode).toBe(1);
    // The SDK model omits 'type' (a constant it adds itself); we set it explicitly all the same.
    expect((p.virtualMachineConfiguration?.containerConfiguration as { type?: string }).type).toBe('dockerCompatible');
    expect(p.virtualMachineConfiguration?.containerConfiguration).not.toHaveProperty('containerImageNames');
    expect(p.metadata).toEqual([
      { name: 'hpc-cp-owner', value: 'hpc-mpi-control-plane' },
      { name: 'hpc-cp-job', value: 'job7' },
    ]);
    expect(p.resizeTimeout).toBe('PT20M');
    expect(requestProblems('POST', '/pools', p)).toEqual([]);
    expect(ruleProblem(() => checkPoolAdd(asJson(p)))).toBeUndefined();
    // The smallest resize timeout the spec allows is what the activity asks for at least.
    expect(ruleProblem(() => checkPoolAdd(asJson(buildPoolAddParameter({ ...poolSpec, resizeTimeoutMinutes: 5 }))))).toBeUndefined();
  });

  test('job: created with noaction, prep and release tasks, valid against the spec', () => {
    const j = buildJobAddParameter({
      batchJobId: 'job7',
      jobId: 'job7',
      poolId: 'job7-pool',
      preparationTask: { commandLine: '/bin/true' },
      releaseTask: { commandLine: '/bin/bash -c "docker rm -f mpi || true"', elevated: true, maxWallClockSeconds: 600 },
      maxWallClockSeconds: 7200,
    });
    expect(j.onAllTasksComplete).toBe('noaction');
    expect(j.constraints?.maxWallClockTime).toBe('PT7200S');
    expect(requestProblems('POST', '/jobs', j)).toEqual([]);
    expect(ruleProblem(() => checkJobAdd(asJson(j)))).toBeUndefined();
    // The task rules below are checked against this very job.
    expect({ onTaskFailure: j.onTaskFailure, usesTaskDependencies: j.usesTaskDependencies ?? false }).toEqual(PRODUCT_JOB);
  });

  test('the other bodies the adapter sends (patch, terminate, resize, remove nodes) are valid against the spec', () => {
    expect(requestProblems('PATCH', '/jobs/job7', { onAllTasksComplete: 'terminatejob' })).toEqual([]);
    expect(requestProblems('POST', '/jobs/job7/terminate', { terminateReason: 'ControlPlane:cancelled' })).toEqual([]);
    expect(requestProblems('POST', '/pools/job7-pool/resize', { targetDedicatedNodes: 5, targetLowPriorityNodes: 0, resizeTimeout: 'PT15M' })).toEqual([]);
    expect(requestProblems('POST', '/pools/job7-pool/removenodes', { nodeList: ['tvmps_1'], nodeDeallocationOption: 'requeue' })).toEqual([]);
  });

  test('a release task without a preparation task is refused before Batch sees it', () => {
    expect(() => buildJobAddParameter({ batchJobId: 'j', jobId: 'j', poolId: 'p', releaseTask: { commandLine: 'x' } })).toThrow(BatchError);
  });

  test('node task: pinned by affinity, valid against the spec', () => {
    const t = buildNodeTaskParameter({
      id: 'pull-node1',
      affinityId: 'TVM:tvmps_abc',
      commandLine: '/bin/bash -c "docker pull img"',
      resourceFiles: [{ httpUrl: 'https://s.blob.core.windows.net/c/shard-0?sig=x', filePath: 'shards/0' }],
      maxWallClockSeconds: 900,
      elevated: true,
    });
    expect(t.affinityInfo).toEqual({ affinityId: 'TVM:tvmps_abc' });
    expect(requestProblems('POST', '/jobs/job7/tasks', t)).toEqual([]);
    expect(ruleProblem(() => checkTaskAdd(asJson(t), PRODUCT_JOB))).toBeUndefined();
  });

  test('a resource file needs exactly one source', () => {
    expect(() => buildNodeTaskParameter({ id: 't', affinityId: 'a', commandLine: 'x', resourceFiles: [{ filePath: 'f' }] })).toThrow(
      /exactly one of httpUrl or storageContainerUrl/,
    );
  });

  test('MPI task: multi-instance settings mapped, one slot, valid against the spec', () => {
    const t = buildMpiTaskParameter({
      batchJobId: 'job7',
      taskId: 'mpi',
      numberOfInstances: 4,
      coordinationCommandLine: '/bin/bash -c "start-sshd"',
      applicationCommandLine: '/bin/bash -c "mpirun -np 8 --host $AZ_BATCH_HOST_LIST ./app"',
      commonResourceFiles: [{ httpUrl: 'https://x/y', filePath: 'y' }],
      environment: [{ name: 'OMPI_MCA_btl', value: 'self,tcp' }],
      maxWallClockSeconds: 7200,
    });
    expect(t.multiInstanceSettings).toEqual({
      numberOfInstances: 4,
      coordinationCommandLine: '/bin/bash -c "start-sshd"',
      commonResourceFiles: [{ httpUrl: 'https://x/y', filePath: 'y' }],
    });
    expect(t.commandLine).toContain('mpirun');
    expect(t.requiredSlots).toBe(1);
    expect(t.constraints).toEqual({ maxWallClockTime: 'PT7200S', maxTaskRetryCount: 0 });
    expect(requestProblems('POST', '/jobs/job7/tasks', t)).toEqual([]);
    expect(ruleProblem(() => checkTaskAdd(asJson(t), PRODUCT_JOB))).toBeUndefined();
  });

  test("files for every node, shared file systems and outputs: the bodies pass the spec and Batch's rules", () => {
    const mounts = buildPoolAddParameter({
      ...poolSpec,
      mounts: [
        { kind: 'nfs', relativeMountPath: 'home', source: '10.0.0.4:/exports/home', mountOptions: '-o vers=4.1' },
        { kind: 'cifs', relativeMountPath: 'lic', source: '//fs01/licenses', username: 'svc', password: 'pw' },
        { kind: 'azureFiles', relativeMountPath: 'ref', accountName: 'data1', azureFileUrl: 'https://data1.file.core.windows.net/refdata', accountKey: 'a2V5' },
        { kind: 'blobfuse', relativeMountPath: 'in', accountName: 'data1', containerName: 'inputs', sasKey: 'sv=x&sig=y', blobfuseOptions: '-o ro' },
      ],
    });
    expect(mounts.mountConfiguration).toEqual([
      { nfsMountConfiguration: { source: '10.0.0.4:/exports/home', relativeMountPath: 'home', mountOptions: '-o vers=4.1' } },
      { cifsMountConfiguration: { username: 'svc', source: '//fs01/licenses', password: 'pw', relativeMountPath: 'lic' } },
      {
        azureFileShareConfiguration: {
          accountName: 'data1',
          azureFileUrl: 'https://data1.file.core.windows.net/refdata',
          accountKey: 'a2V5',
          relativeMountPath: 'ref',
        },
      },
      {
        azureBlobFileSystemConfiguration: {
          accountName: 'data1',
          containerName: 'inputs',
          sasKey: 'sv=x&sig=y',
          relativeMountPath: 'in',
          blobfuseOptions: '-o ro',
        },
      },
    ]);
    expect(requestProblems('POST', '/pools', mounts)).toEqual([]);
    expect(ruleProblem(() => checkPoolAdd(asJson(mounts)))).toBeUndefined();
    expect(buildPoolAddParameter(poolSpec)).not.toHaveProperty('mountConfiguration');

    const outputFiles = [
      {
        filePattern: '../*.txt',
        containerUrl: 'https://data1.blob.core.windows.net/results?sig=w',
        path: 'job/logs',
        uploadCondition: 'taskCompletion' as const,
      },
      {
        filePattern: '$AZ_BATCH_NODE_SHARED_DIR/scratch/job/case/**',
        containerUrl: 'https://data1.blob.core.windows.net/results?sig=w',
        path: 'job/scratch/case',
        uploadCondition: 'taskSuccess' as const,
      },
    ];
    const mpi = buildMpiTaskParameter({
      batchJobId: 'j',
      taskId: 'mpi',
      numberOfInstances: 2,
      coordinationCommandLine: 'c',
      applicationCommandLine: 'a',
      environment: [],
      commonResourceFiles: [
        { httpUrl: 'https://releases.example.org/a/run.sh', filePath: 'wd/run.sh', fileMode: '0755' },
        { storageContainerUrl: 'https://data1.blob.core.windows.net/cases?sig=r', blobPrefix: 'motorbike/', filePath: 'wd' },
      ],
      outputFiles,
    });
    expect(mpi.outputFiles).toEqual([
      {
        filePattern: '../*.txt',
        destination: { container: { containerUrl: 'https://data1.blob.core.windows.net/results?sig=w', path: 'job/logs' } },
        uploadOptions: { uploadCondition: 'taskcompletion' },
      },
      {
        filePattern: '$AZ_BATCH_NODE_SHARED_DIR/scratch/job/case/**',
        destination: { container: { containerUrl: 'https://data1.blob.core.windows.net/results?sig=w', path: 'job/scratch/case' } },
        uploadOptions: { uploadCondition: 'tasksuccess' },
      },
    ]);
    expect(requestProblems('POST', '/jobs/j/tasks', mpi)).toEqual([]);
    expect(ruleProblem(() => checkTaskAdd(asJson(mpi), PRODUCT_JOB))).toBeUndefined();
    const upload = buildNodeTaskParameter({ id: 'up-0-a1', affinityId: 'aff', commandLine: '/bin/true', outputFiles, maxWallClockSeconds: 3600 });
    expect(upload.outputFiles).toHaveLength(2);
    expect(requestProblems('POST', '/jobs/j/tasks', upload)).toEqual([]);
    expect(ruleProblem(() => checkTaskAdd(asJson(upload), PRODUCT_JOB))).toBeUndefined();
  });

  test('an MPI task with no instances is refused', () => {
    expect(() =>
      buildMpiTaskParameter({
        batchJobId: 'j',
        taskId: 'm',
        numberOfInstances: 0,
        coordinationCommandLine: 'c',
        applicationCommandLine: 'a',
        environment: [],
        commonResourceFiles: [],
      }),
    ).toThrow(/numberOfInstances must be a positive integer/);
  });
});

/** Shaped like the ms-rest-js RestError the SDK rejects with (the SDK's own class is not exported by @azure/batch). */
function restError(status: number, code: string, headers: Record<string, string> = {}) {
  return {
    statusCode: status,
    code,
    message: { lang: 'en-US', value: `${code} happened\nRequestId:abc\nTime:now` },
    body: { code, message: { lang: 'en-US', value: `${code} happened\nRequestId:abc\nTime:now` }, values: [{ key: 'Reason', value: 'because' }] },
    response: { headers: { get: (name: string) => headers[name.toLowerCase()] } },
  };
}

describe('errors', () => {
  test('describeSdkError reads code, status, message, details, request id and Retry-After', () => {
    const f = describeSdkError(restError(429, 'TooManyRequests', { 'request-id': 'rid-1', 'retry-after': '3' }));
    expect(f).toEqual({
      status: 429,
      code: 'TooManyRequests',
      message: 'TooManyRequests happened',
      requestId: 'rid-1',
      retryAfterMs: 3000,
      details: { Reason: 'because' },
    });
  });

  test('a transport error (no response) keeps its system code', () => {
    const err = Object.assign(new Error('request to http://127.0.0.1:1/pools failed, reason: socket hang up'), { code: 'ECONNRESET' });
    expect(describeSdkError(err)).toMatchObject({ code: 'ECONNRESET', status: undefined });
  });

  test('BatchError message names operation, resource, status, code, details and request id; JSON is plain', () => {
    const e = new BatchError({
      ...describeSdkError(restError(409, 'PoolExists', { 'request-id': 'rid-2' })),
      operation: 'pools.create',
      resource: 'pool p1',
      attempts: 2,
    });
    expect(e.message).toBe('pools.create on pool p1 failed after 2 attempts: HTTP 409 PoolExists: PoolExists happened (Reason=because) [request-id rid-2]');
    expect(JSON.parse(JSON.stringify(e))).toMatchObject({ name: 'BatchError', code: 'PoolExists', status: 409, resource: 'pool p1' });
  });

  test('Retry-After as seconds or HTTP date', () => {
    expect(parseRetryAfter('2', 0)).toBe(2000);
    expect(parseRetryAfter('Thu, 01 Jan 1970 00:00:10 GMT', 4000)).toBe(6000);
    expect(parseRetryAfter('soon', 0)).toBeUndefined();
    expect(parseRetryAfter(undefined, 0)).toBeUndefined();
  });
});

describe('retry policy', () => {
  const policy: RetryPolicy = { maxAttempts: 5, initialMs: 100, maxMs: 2000, multiplier: 2, jitter: 0.5 };

  test('what may be retried depends on whether the call could have taken effect', () => {
    expect(isRetryable({ status: 429, code: 'x', message: '' }, 'unsafe')).toBe(true);
    expect(isRetryable({ status: 503, code: 'ServerBusy', message: '' }, 'unsafe')).toBe(true);
    expect(isRetryable({ status: 500, code: 'InternalError', message: '' }, 'unsafe')).toBe(false);
    expect(isRetryable({ status: 500, code: 'InternalError', message: '' }, 'idempotent')).toBe(true);
    expect(isRetryable({ code: 'ECONNRESET', message: '' }, 'idempotent')).toBe(true);
    expect(isRetryable({ code: 'ECONNRESET', message: '' }, 'unsafe')).toBe(false);
    expect(isRetryable({ status: 409, code: 'PoolExists', message: '' }, 'idempotent')).toBe(false);
    expect(isRetryable({ status: 400, code: 'InvalidPropertyValue', message: '' }, 'idempotent')).toBe(false);
  });

  test('backoff stays within its jitter band, never above the cap, never below Retry-After', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        fc.option(fc.integer({ min: 0, max: 1500 }), { nil: undefined }),
        (attempt, r, retryAfter) => {
          const d = backoffDelay(attempt, policy, () => r, retryAfter);
          const base = Math.min(policy.maxMs, policy.initialMs * 2 ** (attempt - 1));
          expect(d).toBeGreaterThanOrEqual(Math.min(Math.floor(base * 0.5), policy.maxMs));
          expect(d).toBeLessThanOrEqual(Math.max(policy.maxMs, retryAfter ?? 0));
          if (retryAfter !== undefined) expect(d).toBeGreaterThanOrEqual(retryAfter);
        },
      ),
    );
  });

  function runtime(events: RetryEvent[], slept: number[]) {
    return { policy, random: () => 0.5, sleep: async (ms: number) => void slept.push(ms), onRetry: (e: RetryEvent) => void events.push(e) };
  }

  test('429s are retried honouring Retry-After, then the call succeeds', async () => {
    const events: RetryEvent[] = [];
    const slept: number[] = [];
    let calls = 0;
    const result = await callWithRetry(runtime(events, slept), { operation: 'pools.get', resource: 'pool p' }, async () => {
      calls++;
      if (calls < 3) throw restError(429, 'TooManyRequests', { 'retry-after': '1' });
      return 'ok';
    });
    expect(result).toBe('ok');
    expect(calls).toBe(3);
    expect(events.map((e) => [e.attempt, e.status, e.retryAfterMs])).toEqual([
      [1, 429, 1000],
      [2, 429, 1000],
    ]);
    expect(slept.every((ms) => ms >= 1000)).toBe(true);
  });

  test('gives up after maxAttempts with a BatchError counting the attempts', async () => {
    const slept: number[] = [];
    const err = await callWithRetry(runtime([], slept), { operation: 'jobs.get', resource: 'job j' }, async () => {
      throw restError(503, 'ServerBusy');
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BatchError);
    expect(err).toMatchObject({ code: 'ServerBusy', status: 503, attempts: 5, operation: 'jobs.get', resource: 'job j' });
    expect(slept).toEqual([100, 200, 400, 800]);
  });

  test('an unsafe call is not repeated after a 500', async () => {
    let calls = 0;
    await expect(
      callWithRetry(runtime([], []), { operation: 'x', resource: 'y', safety: 'unsafe' }, async () => {
        calls++;
        throw restError(500, 'InternalError');
      }),
    ).rejects.toMatchObject({ code: 'InternalError', attempts: 1 });
    expect(calls).toBe(1);
  });

  test('a Retry-After longer than the cap is handed back to the caller instead of sleeping', async () => {
    const slept: number[] = [];
    const err = await callWithRetry(runtime([], slept), { operation: 'x', resource: 'y' }, async () => {
      throw restError(429, 'TooManyRequests', { 'retry-after': '60' });
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'TooManyRequests', retryAfterMs: 60000, attempts: 1 });
    expect(slept).toEqual([]);
  });
});

describe('BearerTokenCredentials', () => {
  // Microsoft Entra ID cannot be reached here: a TokenCredential stand-in checks the scope we ask for
  // and that the header is set and the token cached.
  test('asks for the Batch scope, sets a bearer header and caches the token until near expiry', async () => {
    const scopes: string[] = [];
    const credential = {
      getToken: async (scope: string | string[]) => {
        scopes.push(String(scope));
        return { token: `t${scopes.length}`, expiresOnTimestamp: Date.now() + 3600_000 };
      },
    };
    const creds = new BearerTokenCredentials(credential, 'https://batch.core.windows.net/.default');
    const a = await creds.signRequest(new WebResource('https://acct.region.batch.azure.com/pools'));
    const b = await creds.signRequest(new WebResource('https://acct.region.batch.azure.com/jobs'));
    expect(a.headers.get('authorization')).toBe('Bearer t1');
    expect(b.headers.get('authorization')).toBe('Bearer t1');
    expect(scopes).toEqual(['https://batch.core.windows.net/.default']);
  });
});
