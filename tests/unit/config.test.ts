import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { BATCH_TOKEN_SCOPE, ConfigError, loadConfig, parseStorageAccountRef, SETTING_NAMES } from '../../shared/adapters/config';
import { pipelineSettings } from '../../shared/adapters/intake/settings';

const AZURITE_A = 'DefaultEndpointsProtocol=http;AccountName=stage1;AccountKey=a2V5MQ==;BlobEndpoint=http://127.0.0.1:10000/stage1;';
const AZURITE_B = 'DefaultEndpointsProtocol=http;AccountName=stage2;AccountKey=a2V5Mg==;BlobEndpoint=http://127.0.0.1:10000/stage2;';

const localEnv = {
  BATCH_ACCOUNT_URL: 'http://127.0.0.1:45123',
  BATCH_ACCOUNT_NAME: 'localbatch',
  BATCH_ACCOUNT_KEY: 'a2V5a2V5a2V5',
  AzureWebJobsStorage: 'UseDevelopmentStorage=true',
  STAGING_ACCOUNTS: `${AZURITE_A},${AZURITE_B}`,
};

function problemsOf(env: Record<string, string | undefined>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected loadConfig to throw');
}

describe('mount settings', () => {
  test('DATA_MOUNT_SOURCES lists NFS exports and SMB shares, exact or as a prefix', () => {
    const c = loadConfig({ ...localEnv, DATA_MOUNT_SOURCES: ' 10.0.0.4:/exports/home , anf01.example.com:/vol1* ,//fs01/licenses ' });
    expect(c.dataAccess.mountSources).toEqual(['10.0.0.4:/exports/home', 'anf01.example.com:/vol1*', '//fs01/licenses']);
  });

  test('a DATA_MOUNT_SOURCES entry that is neither an NFS export nor an SMB share is refused by position', () => {
    const problems = problemsOf({ ...localEnv, DATA_MOUNT_SOURCES: '10.0.0.4:/ok,https://x/y,fs01' });
    expect(problems).toEqual([
      expect.stringMatching(/^DATA_MOUNT_SOURCES: entry 2 must be "host:\/path"/),
      expect.stringMatching(/^DATA_MOUNT_SOURCES: entry 3 /),
    ]);
  });

  test('MOUNT_SECRET_<name> settings become the mount secrets by name; empty ones are absent; a bad name is refused', () => {
    const c = loadConfig({ ...localEnv, MOUNT_SECRET_refdata: 'key==', MOUNT_SECRET_LIC_PW: 'pw', MOUNT_SECRET_EMPTY: '' });
    expect(c.mountSecrets).toEqual({ refdata: 'key==', LIC_PW: 'pw' });
    expect(Object.isFrozen(c.mountSecrets)).toBe(true);
    expect(problemsOf({ ...localEnv, MOUNT_SECRET_9bad: 'x' })).toEqual([expect.stringMatching(/^MOUNT_SECRET_9bad: /)]);
  });
});

describe('loadConfig', () => {
  test('PREFLIGHT_FABRIC_DEFAULTS: on unless "false"; anything but true/false is refused by name', () => {
    expect(loadConfig({ ...localEnv, PREFLIGHT_FABRIC_DEFAULTS: 'false' }).pipeline.preflightFabricDefaults).toBe(false);
    expect(loadConfig({ ...localEnv, PREFLIGHT_FABRIC_DEFAULTS: 'true' }).pipeline.preflightFabricDefaults).toBe(true);
    expect(problemsOf({ ...localEnv, PREFLIGHT_FABRIC_DEFAULTS: 'no' }).join('\n')).toMatch(/PREFLIGHT_FABRIC_DEFAULTS.*must be "true" or "false"/);
  });

  test('local settings: shared key, Azurite connection strings, defaults for knobs', () => {
    const c = loadConfig(localEnv);
    expect(c.batch).toEqual({
      accountUrl: 'http://127.0.0.1:45123',
      accountName: 'localbatch',
      auth: { kind: 'sharedKey', accountKey: 'a2V5a2V5a2V5' },
    });
    expect(c.hostStorage.kind).toBe('connectionString');
    expect(c.hostStorage.accountName).toBe('devstoreaccount1');
    expect(c.stagingAccounts.map((a) => [a.kind, a.accountName])).toEqual([
      ['connectionString', 'stage1'],
      ['connectionString', 'stage2'],
    ]);
    expect(c.pipeline).toEqual({
      copyConcurrency: 8,
      sasMarginMinutes: 60,
      nodeTaskMaxAttempts: 3,
      sasMaxLifetimeMinutes: 7 * 24 * 60,
      defaultMaxWallClockMinutes: 24 * 60,
      preflightFabricDefaults: true,
      preflightHealthChecks: ['cpu', 'memory', 'ib', 'ibbw', 'stream', 'gpu', 'gdr', 'linkflap', 'site'],
      preflightSshWaitMinMs: 0,
      overlapStaging: true,
    });
    expect(c.dataAccess).toEqual({
      accounts: [],
      mountSources: [],
      allowedInternalHosts: [],
      sharedAreas: [],
      hnsAccounts: [],
      outputsRequireScopedSas: false,
    });
    expect(c.mountSecrets).toEqual({});
    expect(c.queueMaxDequeueCount).toBe(5);
    expect(c.polling).toEqual({ initialMs: 5000, maxMs: 60000, multiplier: 2, lookMaxMs: 30000 });
    expect(c.batchRetry.maxAttempts).toBeGreaterThan(1);
    expect(Object.isFrozen(c.batch)).toBe(true);
  });

  test('Azure settings: no key means AAD with the Batch scope; bare names mean managed identity', () => {
    const c = loadConfig({
      BATCH_ACCOUNT_URL: 'https://hpcbatch.westeurope.batch.azure.com/',
      BATCH_ACCOUNT_NAME: 'hpcbatch',
      AzureWebJobsStorage__accountName: 'hpchost',
      STAGING_ACCOUNTS: 'hpcstage1, hpcstage2,hpcstage3',
      STAGING_COPY_CONCURRENCY: '4',
      QUEUE_MAX_DEQUEUE_COUNT: '7',
      POLL_INITIAL_MS: '1000',
      POLL_MAX_MS: '30000',
    });
    expect(c.batch.accountUrl).toBe('https://hpcbatch.westeurope.batch.azure.com');
    expect(c.batch.auth).toEqual({ kind: 'aad', scope: BATCH_TOKEN_SCOPE });
    // The double slash makes the managed identity endpoint's resource https://batch.core.windows.net/ (see BATCH_TOKEN_SCOPE).
    expect(BATCH_TOKEN_SCOPE).toBe('https://batch.core.windows.net//.default');
    expect(c.hostStorage).toMatchObject({ kind: 'managedIdentity', accountName: 'hpchost' });
    expect(c.stagingAccounts).toHaveLength(3);
    expect(c.stagingAccounts[1]).toEqual({
      kind: 'managedIdentity',
      accountName: 'hpcstage2',
      blobEndpoint: 'https://hpcstage2.blob.core.windows.net',
      queueEndpoint: 'https://hpcstage2.queue.core.windows.net',
      tableEndpoint: 'https://hpcstage2.table.core.windows.net',
    });
    expect(c.pipeline.copyConcurrency).toBe(4);
    expect(c.queueMaxDequeueCount).toBe(7);
    expect(c.polling.initialMs).toBe(1000);
  });

  test("the keyless local stack's settings: host storage and accounts by their service URIs, with managed identity", () => {
    const c = loadConfig({
      BATCH_ACCOUNT_URL: 'http://127.0.0.1:45123',
      BATCH_ACCOUNT_NAME: 'localbatch',
      AzureWebJobsStorage__blobServiceUri: 'https://127.0.0.1:40001/devstoreaccount1',
      AzureWebJobsStorage__queueServiceUri: 'https://127.0.0.1:40002/devstoreaccount1/',
      AzureWebJobsStorage__tableServiceUri: 'https://127.0.0.1:40003/devstoreaccount1',
      STAGING_ACCOUNTS: 'https://127.0.0.1:40001/stage1,https://127.0.0.1:40001/stage2',
      DATA_ACCOUNTS: 'https://127.0.0.1:40001/data1,https://mydata.blob.core.windows.net',
    });
    expect(c.batch.auth.kind).toBe('aad');
    expect(c.hostStorage).toEqual({
      kind: 'managedIdentity',
      accountName: 'devstoreaccount1',
      blobEndpoint: 'https://127.0.0.1:40001/devstoreaccount1',
      queueEndpoint: 'https://127.0.0.1:40002/devstoreaccount1',
      tableEndpoint: 'https://127.0.0.1:40003/devstoreaccount1',
    });
    expect(c.stagingAccounts).toEqual([
      { kind: 'managedIdentity', accountName: 'stage1', blobEndpoint: 'https://127.0.0.1:40001/stage1' },
      { kind: 'managedIdentity', accountName: 'stage2', blobEndpoint: 'https://127.0.0.1:40001/stage2' },
    ]);
    expect(c.dataAccess.accounts.map((a) => a.accountName)).toEqual(['data1', 'mydata']);
  });

  test.each([
    [{ AzureWebJobsStorage__tableServiceUri: undefined }, /AzureWebJobsStorage__tableServiceUri is required with the other/],
    [{ AzureWebJobsStorage__queueServiceUri: 'http://127.0.0.1:40002/devstoreaccount1' }, /AzureWebJobsStorage__queueServiceUri: .* must be an https URL/],
    [{ AzureWebJobsStorage__queueServiceUri: 'https://127.0.0.1:40002/stage1' }, /name different accounts \(devstoreaccount1, stage1, devstoreaccount1\)/],
    [{ AzureWebJobsStorage__blobServiceUri: 'https://127.0.0.1:40001/devstoreaccount1/jobs' }, /must name the service, not a resource in it/],
    [{ AzureWebJobsStorage__blobServiceUri: 'https://devstoreaccount1.queue.core.windows.net' }, /is not a blob service URI/],
    [{ STAGING_ACCOUNTS: 'https://127.0.0.1:40001/stage1?sv=2025-11-05&sig=abc' }, /STAGING_ACCOUNTS: entry 1: .* must be a bare service URI/],
    [{ DATA_ACCOUNTS: 'https://127.0.0.1:40001/devstoreaccount1' }, /DATA_ACCOUNTS: entry 1: "devstoreaccount1" is the app's own host or staging storage/],
  ])('identity-based settings %j are refused, naming the setting', (patch, message) => {
    const env: Record<string, string | undefined> = {
      BATCH_ACCOUNT_URL: 'http://127.0.0.1:45123',
      BATCH_ACCOUNT_NAME: 'localbatch',
      AzureWebJobsStorage__blobServiceUri: 'https://127.0.0.1:40001/devstoreaccount1',
      AzureWebJobsStorage__queueServiceUri: 'https://127.0.0.1:40002/devstoreaccount1',
      AzureWebJobsStorage__tableServiceUri: 'https://127.0.0.1:40003/devstoreaccount1',
      STAGING_ACCOUNTS: 'https://127.0.0.1:40001/stage1',
      ...patch,
    };
    expect(problemsOf(env).join('\n')).toMatch(message);
  });

  test('a connection string in AzureWebJobsStorage wins over identity-based settings, as in the Functions host', () => {
    const c = loadConfig({ ...localEnv, AzureWebJobsStorage__blobServiceUri: 'https://127.0.0.1:40001/other1' });
    expect(c.hostStorage.kind).toBe('connectionString');
  });

  test('missing variables are each named', () => {
    const problems = problemsOf({});
    const text = problems.join('\n');
    for (const name of ['BATCH_ACCOUNT_URL', 'BATCH_ACCOUNT_NAME', 'STAGING_ACCOUNTS']) {
      expect(text).toContain(`${name} is required`);
    }
  });

  test('missing host storage is named', () => {
    const { AzureWebJobsStorage: _omit, ...rest } = localEnv;
    expect(problemsOf(rest).join('\n')).toMatch(/^AzureWebJobsStorage is required/m);
  });

  test.each([
    ['BATCH_ACCOUNT_URL', 'not a url', /BATCH_ACCOUNT_URL: must be an http\(s\) URL/],
    ['BATCH_ACCOUNT_URL', 'https://acct.batch.azure.com/some/path', /BATCH_ACCOUNT_URL/],
    ['BATCH_ACCOUNT_NAME', 'Bad_Name', /BATCH_ACCOUNT_NAME: must be 3-24 lowercase/],
    ['BATCH_ACCOUNT_KEY', 'not base64!', /BATCH_ACCOUNT_KEY: must be base64/],
    ['QUEUE_MAX_DEQUEUE_COUNT', '0', /QUEUE_MAX_DEQUEUE_COUNT: must be an integer in \[1, 1000\], got "0"/],
    ['QUEUE_MAX_DEQUEUE_COUNT', 'five', /QUEUE_MAX_DEQUEUE_COUNT: must be an integer/],
    ['NODE_TASK_MAX_ATTEMPTS', '11', /NODE_TASK_MAX_ATTEMPTS: must be an integer in \[1, 10\]/],
    ['STAGING_COPY_CONCURRENCY', '1.5', /STAGING_COPY_CONCURRENCY: must be an integer/],
    ['POLL_INITIAL_MS', '99999999', /POLL_INITIAL_MS/],
    ['STAGING_ACCOUNTS', 'Not A Name', /STAGING_ACCOUNTS: entry 1: "Not A Name" is neither/],
    ['STAGING_ACCOUNTS', `${AZURITE_A},,${AZURITE_B}`, /STAGING_ACCOUNTS: entry 2 is empty/],
    ['STAGING_ACCOUNTS', `${AZURITE_A},${AZURITE_A}`, /account "stage1" is listed twice/],
    ['STAGING_ACCOUNTS', 'AccountName=x1x;BlobEndpoint=http://127.0.0.1:1/x1x', /neither AccountKey nor SharedAccessSignature/],
    ['AzureWebJobsStorage', 'DefaultEndpointsProtocol=http;AccountKey=a2V5', /AzureWebJobsStorage: connection string has no AccountName/],
  ])('%s=%j is rejected with a message naming it', (name, value, message) => {
    expect(problemsOf({ ...localEnv, [name]: value }).join('\n')).toMatch(message);
  });

  test('cross-field: initial poll delay above the maximum is rejected', () => {
    expect(problemsOf({ ...localEnv, POLL_INITIAL_MS: '5000', POLL_MAX_MS: '1000' }).join('\n')).toContain(
      'POLL_INITIAL_MS (5000) must not exceed POLL_MAX_MS (1000)',
    );
  });

  test('several problems are reported together', () => {
    expect(problemsOf({ ...localEnv, BATCH_ACCOUNT_NAME: '', QUEUE_MAX_DEQUEUE_COUNT: '-1' }).length).toBe(2);
  });

  test('PIPELINE_OVERLAP takes true or false only, named in the problem', () => {
    expect(problemsOf({ ...localEnv, PIPELINE_OVERLAP: 'sometimes' })).toEqual([expect.stringContaining('PIPELINE_OVERLAP')]);
    expect(loadConfig({ ...localEnv, PIPELINE_OVERLAP: 'false' }).pipeline.overlapStaging).toBe(false);
  });

  test('the error message lists problems', () => {
    expect(() => loadConfig({})).toThrow(/Invalid configuration:\n {2}- /);
  });
});

describe('parseStorageAccountRef', () => {
  test('keeps base64 padding inside connection string values', () => {
    const ref = parseStorageAccountRef(AZURITE_A, 'core.windows.net');
    expect(ref).toEqual({ kind: 'connectionString', accountName: 'stage1', connectionString: AZURITE_A });
  });
  test('uses the given endpoint suffix (sovereign clouds)', () => {
    const ref = parseStorageAccountRef('abc123', 'core.chinacloudapi.cn');
    expect(ref.kind === 'managedIdentity' && ref.blobEndpoint).toBe('https://abc123.blob.core.chinacloudapi.cn');
  });
});

describe('admission settings', () => {
  test('defaults: one queue "default", no core quota, no pool/node/owner limits, backfill 4, poll 60 s', () => {
    expect(loadConfig(localEnv).admission).toEqual({
      queues: [{ name: 'default', priority: 0 }],
      coreQuota: { families: {} },
      maxPools: undefined,
      maxNodes: undefined,
      ownerMaxNodes: undefined,
      ownerMaxCores: undefined,
      backfillLimit: 4,
      pollMs: 60_000,
    });
  });

  test('queues, quota and limits as given', () => {
    const c = loadConfig({
      ...localEnv,
      ADMISSION_QUEUES: '[{"name":"default"},{"name":"urgent","priority":10,"maxNodes":40}]',
      ADMISSION_CORE_QUOTA: '{"standardHBv3Family":720,"total":900}',
      ADMISSION_MAX_POOLS: '20',
      ADMISSION_OWNER_MAX_CORES: '480',
      ADMISSION_BACKFILL_LIMIT: '0',
      ADMISSION_POLL_SECONDS: '15',
    });
    expect(c.admission).toMatchObject({
      queues: [
        { name: 'default', priority: 0 },
        { name: 'urgent', priority: 10, maxNodes: 40 },
      ],
      coreQuota: { total: 900, families: { standardHBv3Family: 720 } },
      maxPools: 20,
      ownerMaxCores: 480,
      backfillLimit: 0,
      pollMs: 15_000,
    });
    // Handed to every run at intake: how often a waiting job asks again.
    expect(pipelineSettings(c).queuePollMs).toBe(15_000);
  });

  test('each bad admission setting is named', () => {
    expect(problemsOf({ ...localEnv, ADMISSION_QUEUES: '[{"name":"urgent"}]' })).toEqual([
      'ADMISSION_QUEUES: must declare the queue "default" (jobs that name no queue wait there)',
    ]);
    expect(problemsOf({ ...localEnv, ADMISSION_QUEUES: '[{"name":"default"},{"name":"default"}]' })).toEqual([
      'ADMISSION_QUEUES: queue "default" is listed twice',
    ]);
    expect(problemsOf({ ...localEnv, ADMISSION_QUEUES: '[{"name":"Bad Name"}]' })[0]).toMatch(/^ADMISSION_QUEUES: 0\.name: queue names are/);
    expect(problemsOf({ ...localEnv, ADMISSION_QUEUES: 'default' })[0]).toMatch(/^ADMISSION_QUEUES: not JSON/);
    expect(problemsOf({ ...localEnv, ADMISSION_CORE_QUOTA: '{"standardHBv3Family":-1}' })[0]).toMatch(/^ADMISSION_CORE_QUOTA: standardHBv3Family: /);
    expect(problemsOf({ ...localEnv, ADMISSION_BACKFILL_LIMIT: 'many' })).toEqual(['ADMISSION_BACKFILL_LIMIT: must be an integer in [0, 1000], got "many"']);
    expect(problemsOf({ ...localEnv, ADMISSION_POLL_SECONDS: '0' })).toEqual(['ADMISSION_POLL_SECONDS: must be an integer in [1, 3600], got "0"']);
  });
});

describe('the README documents every setting', () => {
  it('lists each setting shared/adapters/config reads in its Configuration table, and no other', () => {
    const readme = readFileSync(path.join(__dirname, '..', '..', 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## Local stack'));
    const documented = new Set([...section.matchAll(/^\| ([^|]+) \|/gm)].flatMap((m) => [...m[1].matchAll(/`([A-Za-z_][A-Za-z0-9_]*)`/g)].map((n) => n[1])));
    for (const name of [...SETTING_NAMES, 'APP_VERSION']) expect({ name, documented: documented.has(name) }).toEqual({ name, documented: true });
    for (const name of documented) expect({ name, read: [...SETTING_NAMES, 'APP_VERSION'].includes(name) }).toEqual({ name, read: true });
  });
});
