/**
 * One task shape from planning to the Batch request (issue 25, item 3): the MpiTaskRequest planning builds is what
 * the activity map carries and what buildMpiTaskParameter turns into Batch's TaskAddParameter. Every field must reach
 * the request, and an input written to a running orchestration's history by the previous code must give the same
 * request.
 */
import { buildMpiTaskParameter } from '../../shared/adapters/batch/mpiTask';
import type { MpiTaskRequest } from '../../shared/core/contract';

const KEY_VAULT = { clientId: 'cid-1', urlTemplate: 'https://{vault}.vault.azure.net' };

/** Every field set (`Required`: a field added to the shape must be added here, or this file does not compile). */
const FULL: Required<MpiTaskRequest> = {
  batchJobId: 'mpijob-j-7',
  taskId: 'mpi',
  numberOfInstances: 2,
  coordinationCommandLine: 'coordinate',
  applicationCommandLine: 'mpirun',
  environment: [{ name: 'A', value: '1' }],
  commonResourceFiles: [{ httpUrl: 'https://a/x', filePath: 'x' }],
  outputFiles: [{ filePattern: '*.txt', containerUrl: 'https://a/out?sig=w', path: 'logs', uploadCondition: 'taskCompletion' }],
  maxWallClockSeconds: 60,
  maxTaskRetryCount: 1,
  keyVault: true,
};

/** A different value of every field. */
const OTHER: Record<keyof MpiTaskRequest, unknown> = {
  batchJobId: 'mpijob-j-8',
  taskId: 'mpi-a2',
  numberOfInstances: 3,
  coordinationCommandLine: 'coordinate again',
  applicationCommandLine: 'mpirun again',
  environment: [{ name: 'B', value: '2' }],
  commonResourceFiles: [{ storageContainerUrl: 'https://a/c?sig=r', blobPrefix: 'p/', filePath: 'wd' }],
  outputFiles: [{ filePattern: '*.dat', containerUrl: 'https://a/out?sig=w', path: 'data', uploadCondition: 'taskSuccess' }],
  maxWallClockSeconds: 120,
  maxTaskRetryCount: 2,
  keyVault: undefined,
};

/** Fields that are not in the request body, with where they go instead. */
const NOT_IN_BODY: Partial<Record<keyof MpiTaskRequest, string>> = { batchJobId: 'the request path (addMpiTask)' };

describe('the MPI task request carries every field of the shape', () => {
  const base = JSON.stringify(buildMpiTaskParameter(FULL, KEY_VAULT));
  const fields = Object.keys(FULL) as (keyof MpiTaskRequest)[];

  test.each(fields.filter((k) => !NOT_IN_BODY[k]))('%s changes the request', (field) => {
    const changed = { ...FULL, [field]: OTHER[field] } as MpiTaskRequest;
    expect(JSON.stringify(buildMpiTaskParameter(changed, KEY_VAULT))).not.toEqual(base);
  });

  test('the fields left out of the body are named, with where they go', () => {
    expect(Object.keys(NOT_IN_BODY)).toEqual(['batchJobId']);
  });

  test('the Key Vault access is added where the request is built, after the task environment, only for a task that reads secrets', () => {
    expect(buildMpiTaskParameter(FULL, KEY_VAULT).environmentSettings).toEqual([
      { name: 'A', value: '1' },
      { name: 'MPIJOB_KEYVAULT_CLIENT_ID', value: 'cid-1' },
      { name: 'MPIJOB_KEYVAULT_URL_TEMPLATE', value: 'https://{vault}.vault.azure.net' },
    ]);
    expect(buildMpiTaskParameter({ ...FULL, keyVault: undefined }, KEY_VAULT).environmentSettings).toEqual([{ name: 'A', value: '1' }]);
  });
});

describe("an input from a running orchestration's history", () => {
  // The mpiTaskAdd input as main a2ad27c scheduled it (MpiTaskRequestShape), and the TaskAddParameter that code built
  // from it (mpiTaskSpec, then buildMpiTaskParameter): a replayed orchestration hands the activity this JSON.
  const historyInput = JSON.parse(
    '{"batchJobId":"mpijob-j-7","taskId":"mpi-a2","numberOfInstances":2,"coordinationCommandLine":"/bin/bash -c \\"start-sshd\\"",' +
      '"applicationCommandLine":"/bin/bash -c \\"mpirun -np 4 ./app\\"","environment":[{"name":"PLAIN","value":"x"}],' +
      '"commonResourceFiles":[{"httpUrl":"https://a.blob.core.windows.net/c/run.sh?sig=r","filePath":"wd/run.sh","fileMode":"0755"},' +
      '{"storageContainerUrl":"https://a.blob.core.windows.net/cases?sig=r","blobPrefix":"motorbike/","filePath":"wd"}],' +
      '"outputFiles":[{"filePattern":"../*.txt","containerUrl":"https://a.blob.core.windows.net/results?sig=w","path":"j-7/logs","uploadCondition":"taskCompletion"}],' +
      '"maxWallClockSeconds":3600,"maxTaskRetryCount":1,"keyVault":true}',
  ) as MpiTaskRequest;
  const requestThen = {
    id: 'mpi-a2',
    commandLine: '/bin/bash -c "mpirun -np 4 ./app"',
    multiInstanceSettings: {
      numberOfInstances: 2,
      coordinationCommandLine: '/bin/bash -c "start-sshd"',
      commonResourceFiles: [
        { httpUrl: 'https://a.blob.core.windows.net/c/run.sh?sig=r', filePath: 'wd/run.sh', fileMode: '0755' },
        { storageContainerUrl: 'https://a.blob.core.windows.net/cases?sig=r', blobPrefix: 'motorbike/', filePath: 'wd' },
      ],
    },
    outputFiles: [
      {
        filePattern: '../*.txt',
        destination: { container: { containerUrl: 'https://a.blob.core.windows.net/results?sig=w', path: 'j-7/logs' } },
        uploadOptions: { uploadCondition: 'taskcompletion' },
      },
    ],
    environmentSettings: [
      { name: 'PLAIN', value: 'x' },
      { name: 'MPIJOB_KEYVAULT_CLIENT_ID', value: 'cid-1' },
      { name: 'MPIJOB_KEYVAULT_URL_TEMPLATE', value: 'https://{vault}.vault.azure.net' },
    ],
    constraints: { maxWallClockTime: 'PT3600S', maxTaskRetryCount: 1 },
    requiredSlots: 1,
    userIdentity: { autoUser: { scope: 'pool', elevationLevel: 'admin' } },
  };

  test('the MPI task: the same request as before', () => {
    expect(JSON.parse(JSON.stringify(buildMpiTaskParameter(historyInput, KEY_VAULT)))).toEqual(requestThen);
  });

  test('a preflight check without files or environment: the same request as before', () => {
    const preflight = JSON.parse(
      '{"batchJobId":"mpijob-j-7","taskId":"preflight-1-1","numberOfInstances":2,"coordinationCommandLine":"c","applicationCommandLine":"a","environment":[],"commonResourceFiles":[],"maxTaskRetryCount":0}',
    ) as MpiTaskRequest;
    expect(JSON.parse(JSON.stringify(buildMpiTaskParameter(preflight, KEY_VAULT)))).toEqual({
      id: 'preflight-1-1',
      commandLine: 'a',
      multiInstanceSettings: { numberOfInstances: 2, coordinationCommandLine: 'c' },
      constraints: { maxTaskRetryCount: 0 },
      requiredSlots: 1,
      userIdentity: { autoUser: { scope: 'pool', elevationLevel: 'admin' } },
    });
  });
});
