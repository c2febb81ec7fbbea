/**
 * The pure parts of pools with a managed identity and private registries: the settings (shared/adapters/config), the door
 * (shared/core/intake/containerPolicy.ts), the pull task's sign-in lines (shared/core/mpi/registryLogin.ts, shared/core/planning),
 * the management-plane pool body (shared/adapters/batch/armPools.ts from shared/core/planning/batchRequests.ts jobPoolSpec), the
 * wire body a dry run shows for it (checked against what @azure/arm-batch sends, captured by an HTTP client that
 * answers in process) and how an ARM error is read (shared/adapters/batch/errors.ts). No network.
 */
import { ConfigError, loadConfig } from '../../shared/adapters/config';
import { checkContainerPolicy, containerPolicy } from '../../shared/core/intake/containerPolicy';
import { ACR_REFRESH_TOKEN_USER, registryLoginLines, registryLogoutLines, registryScheme } from '../../shared/core/mpi/registryLogin';
import { pullTask } from '../../shared/core/planning/mpiTaskRequest';
import { planJob } from '../../shared/core/planning/jobPlan';
import { jobPoolSpec } from '../../shared/core/planning/batchRequests';
import { armPoolRequestBody, buildArmPool, describeSdkError, type JobPoolSpec } from '../../shared/adapters/batch';
import { BatchManagementClient } from '@azure/arm-batch';
import { createHttpHeaders, type HttpClient, type PipelineRequest } from '@azure/core-rest-pipeline';
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { PlanningError } from '../../shared/core/planning/errors';

const BASE = {
  BATCH_ACCOUNT_URL: 'https://acct.westeurope.batch.azure.com',
  BATCH_ACCOUNT_NAME: 'acct',
  AzureWebJobsStorage__accountName: 'sthost',
  STAGING_ACCOUNTS: 'stg1',
};
const SUB = '0b1f6471-1bf0-4dda-aec3-111122223333';
const IDENTITY = `/subscriptions/${SUB}/resourceGroups/hpc-cp/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-pool-x`;
const CLIENT = '6f2b3a10-8d4e-4c1b-9a7f-0123456789ab';
const POOL_IDENTITY = { BATCH_SUBSCRIPTION_ID: SUB, BATCH_RESOURCE_GROUP: 'hpc-cp', POOL_IDENTITY_RESOURCE_ID: IDENTITY, POOL_IDENTITY_CLIENT_ID: CLIENT };

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...BASE, ...env });
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
}

function spec(yaml: string): JobSpec {
  const r = parseJobSpec(
    `name: t\npool: { vmSize: Standard_D4s_v5, nodes: 2 }\nmpi: { runtime: openmpi, processesPerNode: 1, command: app }\n${yaml}`,
    'application/yaml',
  );
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
}

describe('pool identity settings', () => {
  test("none: no pool identity (data-plane pools); all four: the identity and Resource Manager's public endpoint", () => {
    expect(loadConfig(BASE).poolIdentity).toBeUndefined();
    expect(loadConfig({ ...BASE, ...POOL_IDENTITY }).poolIdentity).toEqual({
      subscriptionId: SUB,
      resourceGroup: 'hpc-cp',
      accountName: 'acct',
      resourceId: IDENTITY,
      clientId: CLIENT,
      armEndpoint: 'https://management.azure.com',
      armScope: 'https://management.azure.com/.default',
    });
    expect(loadConfig({ ...BASE, ...POOL_IDENTITY, ARM_ENDPOINT: 'http://127.0.0.1:4567' }).poolIdentity?.armEndpoint).toBe('http://127.0.0.1:4567');
  });

  test('some but not all, or a malformed value, names each setting', () => {
    expect(problems({ POOL_IDENTITY_RESOURCE_ID: IDENTITY })).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^BATCH_SUBSCRIPTION_ID is required/),
        expect.stringMatching(/^BATCH_RESOURCE_GROUP is required/),
        expect.stringMatching(/^POOL_IDENTITY_CLIENT_ID is required/),
      ]),
    );
    expect(problems({ ...POOL_IDENTITY, POOL_IDENTITY_CLIENT_ID: 'id-pool' })).toEqual([
      expect.stringMatching(/^POOL_IDENTITY_CLIENT_ID: must be the identity's client id/),
    ]);
    expect(problems({ ...POOL_IDENTITY, POOL_IDENTITY_RESOURCE_ID: '/subscriptions/x/id-pool' })).toEqual([
      expect.stringMatching(/^POOL_IDENTITY_RESOURCE_ID: must be the ARM id/),
    ]);
    expect(problems({ ...POOL_IDENTITY, ARM_ENDPOINT: 'http://management.example.com' })).toEqual([
      expect.stringMatching(/^ARM_ENDPOINT: must be an https URL/),
    ]);
    expect(problems({ ARM_ENDPOINT: 'https://management.azure.com' })).toEqual([expect.stringMatching(/^ARM_ENDPOINT is only used with a pool identity/)]);
  });
});

describe('REGISTRY_CREDENTIALS', () => {
  const secret = 'a-registry-token-value-0123456789';

  test('declares, per server, the settings holding registry secrets', () => {
    const cfg = loadConfig({
      ...BASE,
      REGISTRY_CREDENTIALS: 'MyReg.azurecr.io=REG_TOKEN, 127.0.0.1:5000=LOCAL_PW',
      REG_TOKEN: secret,
      LOCAL_PW: 'pw-local-000000',
    });
    expect(cfg.registryCredentials).toEqual([
      { server: 'myreg.azurecr.io', setting: 'REG_TOKEN', secret },
      { server: '127.0.0.1:5000', setting: 'LOCAL_PW', secret: 'pw-local-000000' },
    ]);
    expect(loadConfig(BASE).registryCredentials).toEqual([]);
  });

  test("refuses the app's and the platform's own settings, unset or unresolved secrets, malformed entries; never prints a value", () => {
    const all = problems({
      REGISTRY_CREDENTIALS:
        'a.io=BATCH_ACCOUNT_KEY,b.io=AzureWebJobsStorage,c.io=OPERATOR_API_KEYS,d.io=MISSING,e.io=KV_REF,junk,f.io=REG_TOKEN,g.io=REG_TOKEN',
      KV_REF: '@Microsoft.KeyVault(VaultName=kv;SecretName=reg)',
      REG_TOKEN: secret,
    });
    expect(all).toEqual([
      expect.stringMatching(/entry 1: BATCH_ACCOUNT_KEY is a setting of the app or the platform/),
      expect.stringMatching(/entry 2: AzureWebJobsStorage is a setting of the app or the platform/),
      expect.stringMatching(/entry 3: OPERATOR_API_KEYS is a setting of the app or the platform/),
      expect.stringMatching(/entry 4: the app setting MISSING is not set or empty/),
      expect.stringMatching(/entry 5: KV_REF is an unresolved Key Vault reference/),
      expect.stringMatching(/entry 6 must be "<registry server>=<app setting name>"/),
      expect.stringMatching(/entry 8: REG_TOKEN is already the secret of f\.io/),
    ]);
    expect(all.join('\n')).not.toContain(secret);
  });
});

describe('the door: how a job may sign in to its registry', () => {
  const cfg = loadConfig({ ...BASE, ...POOL_IDENTITY, REGISTRY_CREDENTIALS: 'myreg.azurecr.io=REG_TOKEN', REG_TOKEN: 'tok-000000000000' });
  const noIdentity = loadConfig({ ...BASE, REGISTRY_CREDENTIALS: 'myreg.azurecr.io=REG_TOKEN', REG_TOKEN: 'tok-000000000000' });
  const data = { accounts: [], containers: undefined } as never;
  const job = (registry: string) => spec(`container: { runtime: docker, images: [myreg.azurecr.io/app:1], registry: ${registry} }`);

  test('managed needs a pool identity', () => {
    expect(checkContainerPolicy(job('{ server: myreg.azurecr.io, identity: managed }'), containerPolicy(cfg), data)).toEqual([]);
    expect(checkContainerPolicy(job('{ server: myreg.azurecr.io, identity: managed }'), containerPolicy(noIdentity), data)).toEqual([
      { path: 'container.registry.identity', message: expect.stringMatching(/this deployment has no pool identity/) },
    ]);
  });

  test('secretRef must be a setting declared for that server; a Key Vault URI is refused', () => {
    const policy = containerPolicy(cfg);
    expect(checkContainerPolicy(job('{ server: myreg.azurecr.io, identity: { secretRef: REG_TOKEN, username: puller } }'), policy, data)).toEqual([]);
    expect(checkContainerPolicy(job('{ server: myreg.azurecr.io, identity: { secretRef: BATCH_ACCOUNT_KEY, username: puller } }'), policy, data)).toEqual([
      {
        path: 'container.registry.identity.secretRef',
        message: 'BATCH_ACCOUNT_KEY is not a registry credential of myreg.azurecr.io on this deployment; its credentials are: REG_TOKEN',
      },
    ]);
    // The secret of one registry is never sent to another.
    const elsewhere = spec(
      'container: { runtime: docker, images: [evil.example.com/app:1], registry: { server: evil.example.com, identity: { secretRef: REG_TOKEN, username: puller } } }',
    );
    expect(checkContainerPolicy(elsewhere, policy, data)).toEqual([
      { path: 'container.registry.identity.secretRef', message: 'this deployment has no registry credential for evil.example.com (REGISTRY_CREDENTIALS)' },
    ]);
    expect(
      checkContainerPolicy(
        job('{ server: myreg.azurecr.io, identity: { secretRef: "https://kv1.vault.azure.net/secrets/reg", username: puller } }'),
        policy,
        data,
      ),
    ).toEqual([{ path: 'container.registry.identity.secretRef', message: expect.stringMatching(/does not read Key Vault itself/) }]);
  });
});

describe("the pull task's sign-in", () => {
  test('by identity: IMDS for the client id, /oauth2/exchange, docker login on stdin; no token in the script', () => {
    const lines = registryLoginLines('docker', { kind: 'identity', server: 'myreg.azurecr.io', clientId: CLIENT });
    const text = lines.join('\n');
    expect(text).toContain('${AZURE_POD_IDENTITY_AUTHORITY_HOST:-http://169.254.169.254}');
    expect(text).toContain(`resource=https%3A%2F%2Fcontainerregistry.azure.net&client_id=${CLIENT}`);
    expect(text).toContain('https://myreg.azurecr.io/oauth2/exchange');
    expect(text).toContain(`docker login --username ${ACR_REFRESH_TOKEN_USER} --password-stdin myreg.azurecr.io`);
    // The token only ever travels through printf (a builtin) and pipes, never as a command's argument.
    expect(text).not.toMatch(/curl[^|]*\$mpijob_(aad|registry_password)/);
    expect(registryLogoutLines('docker', { kind: 'identity', server: 'myreg.azurecr.io', clientId: CLIENT })).toEqual([
      'docker logout myreg.azurecr.io >/dev/null',
    ]);
    expect(registryLoginLines('singularity', { kind: 'identity', server: '127.0.0.1:5000', clientId: CLIENT }).join('\n')).toMatch(
      /http:\/\/127\.0\.0\.1:5000\/oauth2\/exchange[\s\S]*export SINGULARITY_DOCKER_PASSWORD="\$mpijob_registry_password"/,
    );
  });

  test("registries on loopback are reached over http, as Docker's default insecure registries; others over https", () => {
    expect(registryScheme('127.0.0.1:5000')).toBe('http');
    expect(registryScheme('localhost:5000')).toBe('http');
    expect(registryScheme('myreg.azurecr.io')).toBe('https');
  });

  test('refuses what would break the script or the shell', () => {
    expect(() => registryLoginLines('docker', { kind: 'identity', server: 'my reg', clientId: CLIENT })).toThrow(PlanningError);
    expect(() => registryLoginLines('docker', { kind: 'identity', server: 'myreg.azurecr.io', clientId: 'not-a-guid' })).toThrow(PlanningError);
    expect(() => registryLoginLines('docker', { kind: 'secret', server: 'myreg.azurecr.io', username: 'u', passwordEnvVar: 'A-B' })).toThrow(PlanningError);
  });

  test('the plan: a credential by reference names the setting (never its value) for the activity; managed needs the client id', () => {
    const secretJob = spec(
      'container: { runtime: singularity, images: ["docker://myreg.azurecr.io/app:1"], registry: { server: myreg.azurecr.io, identity: { secretRef: REG_TOKEN, username: puller } } }',
    );
    const t = pullTask('job1', secretJob, []);
    expect(t.secretEnvironment).toEqual([{ name: 'MPIJOB_REGISTRY_PASSWORD', server: 'myreg.azurecr.io', setting: 'REG_TOKEN' }]);
    expect(t.commandLine).toContain('mpijob_registry_password="$MPIJOB_REGISTRY_PASSWORD"');
    expect(t.commandLine).toContain('export SINGULARITY_DOCKER_USERNAME=puller');
    const managed = spec('container: { runtime: docker, images: [myreg.azurecr.io/app:1], registry: { server: myreg.azurecr.io, identity: managed } }');
    expect(pullTask('job1', managed, [], CLIENT).secretEnvironment).toEqual([]);
    expect(() => pullTask('job1', managed, [])).toThrow(/needs a pool identity/);
    // No registry: no sign-in at all.
    expect(pullTask('job1', spec('container: { runtime: docker, images: [myreg.azurecr.io/app:1] }'), []).commandLine).not.toContain('login');
  });
});

describe('the management-plane pool', () => {
  test('the product\'s pool carries the identity; the registry only for identity "managed"; no password, no SAS', () => {
    const managed = planJob(
      'job1',
      spec('container: { runtime: docker, images: [myreg.azurecr.io/app:1], registry: { server: myreg.azurecr.io, identity: managed } }'),
    ).poolCreate;
    const pool = buildArmPool(
      jobPoolSpec(managed, {
        startTaskFiles: [{ httpUrl: 'https://data1.blob.core.windows.net/sw/setup.sh', filePath: 'setup.sh', identityResourceId: IDENTITY }],
        identityResourceId: IDENTITY,
      }),
      IDENTITY,
    );
    expect(pool.identity).toEqual({ type: 'UserAssigned', userAssignedIdentities: { [IDENTITY]: {} } });
    expect(pool.deploymentConfiguration?.virtualMachineConfiguration?.containerConfiguration).toEqual({
      type: 'DockerCompatible',
      containerRegistries: [{ registryServer: 'myreg.azurecr.io', identityReference: { resourceId: IDENTITY } }],
    });
    expect(pool).toMatchObject({
      interNodeCommunication: 'Enabled',
      taskSlotsPerNode: 1,
      taskSchedulingPolicy: { nodeFillType: 'Spread' },
      scaleSettings: { fixedScale: { targetDedicatedNodes: 2, targetLowPriorityNodes: 0, resizeTimeout: 'PT15M' } },
    });
    expect(pool.metadata).toEqual([
      { name: 'hpc-cp-owner', value: 'hpc-mpi-control-plane' },
      { name: 'hpc-cp-job', value: 'job1' },
    ]);
    expect(JSON.stringify(pool)).not.toMatch(/password|sig=/i);
    const secret = planJob(
      'job2',
      spec(
        'container: { runtime: docker, images: [myreg.azurecr.io/app:1], registry: { server: myreg.azurecr.io, identity: { secretRef: REG_TOKEN, username: puller } } }',
      ),
    ).poolCreate;
    expect(jobPoolSpec(secret, { identityResourceId: IDENTITY }).containerRegistries).toBeUndefined();
    // Without a pool identity (data plane) the registry is not listed on the pool either: the pull task signs in.
    expect(jobPoolSpec(managed).containerRegistries).toBeUndefined();
  });

  test('the body a dry run shows is the body @azure/arm-batch sends (envelope, wire names, mounts)', async () => {
    const managed = planJob(
      'job3',
      spec('container: { runtime: docker, images: [myreg.azurecr.io/app:1], registry: { server: myreg.azurecr.io, identity: managed } }'),
    ).poolCreate;
    const poolSpec: JobPoolSpec = {
      ...jobPoolSpec(managed, {
        startTaskFiles: [{ httpUrl: 'https://data1.blob.core.windows.net/sw/setup.sh', filePath: 'setup.sh', identityResourceId: IDENTITY }],
        identityResourceId: IDENTITY,
      }),
      // Every shape that differs between the SDK's model and the wire: a registry user, a CIFS user, a container start task.
      containerRegistries: [
        { registryServer: 'myreg.azurecr.io', identityResourceId: IDENTITY },
        { registryServer: 'other.io', userName: 'puller', password: 'p' },
      ],
      mounts: [
        { kind: 'nfs', relativeMountPath: 'scratch', source: '10.0.0.4:/export' },
        { kind: 'cifs', relativeMountPath: 'share', source: '//files/share', username: 'svc', password: 'pw', mountOptions: '-o vers=3.0' },
        { kind: 'blobfuse', relativeMountPath: 'blob', accountName: 'data1', containerName: 'c', sasKey: 'sv=x' },
      ],
    };
    poolSpec.startTask = {
      ...poolSpec.startTask!,
      containerSettings: {
        imageName: 'app:1',
        workingDirectory: 'taskWorkingDirectory',
        registry: { registryServer: 'other.io', userName: 'puller', password: 'p' },
      },
    };
    const pool = buildArmPool(poolSpec, IDENTITY);
    let sent: PipelineRequest | undefined;
    const httpClient: HttpClient = {
      sendRequest: async (request) => {
        sent = request;
        return { request, status: 200, headers: createHttpHeaders({ 'content-type': 'application/json' }), bodyAsText: '{}' };
      },
    };
    const credential = { getToken: async () => ({ token: 't', expiresOnTimestamp: Date.now() + 3_600_000 }) };
    const client = new BatchManagementClient(credential, SUB, { httpClient, retryOptions: { maxRetries: 0 } });
    await client.poolOperations.create('hpc-cp', 'acct', 'pool-job3', pool);
    expect(JSON.parse(String(sent?.body))).toEqual(armPoolRequestBody(pool));
    const body = armPoolRequestBody(pool) as { properties: { mountConfiguration: { cifsMountConfiguration?: unknown }[] } };
    expect(body.properties.mountConfiguration[1].cifsMountConfiguration).toMatchObject({ userName: 'svc' });
  });

  test('an ARM error is read with its code, message and x-ms-request-id', () => {
    const headers = new Map([['x-ms-request-id', 'req-123']]);
    const f = describeSdkError({
      statusCode: 403,
      code: 'LinkedAuthorizationFailed',
      message: 'The client ... does not have permission',
      details: { error: { code: 'LinkedAuthorizationFailed', message: 'The client has no assign/action on the identity' } },
      response: { headers: { get: (n: string) => headers.get(n) } },
    });
    expect(f).toMatchObject({
      status: 403,
      code: 'LinkedAuthorizationFailed',
      message: 'The client has no assign/action on the identity',
      requestId: 'req-123',
    });
  });
});
