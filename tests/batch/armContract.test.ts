/**
 * The Batch management plane (Microsoft.Batch/batchAccounts/pools, api-version 2023-11-01) of the emulator, driven
 * by the product's own adapter (shared/adapters/batch/armPools.ts over @azure/arm-batch 9.1.0) with the bodies the product
 * builds (shared/core/planning/batchRequests.ts jobPoolSpec from a job plan), authenticated as the app's managed identity
 * through the App Service managed identity endpoint the local Functions host gives the app (IDENTITY_ENDPOINT, the
 * path DefaultAzureCredential takes in a Function App). Every exchange is
 * validated against the official management spec (BatchManagement-2023-11-01.json and the ARM common types),
 * strictly; the operations the product calls must all be among them. Also: the SDK's delete poller follows the
 * long-running operation to its end, list pages follow nextLink, Resource Manager's 401/403/404 bodies, and the
 * identity on the nodes (their IMDS answers for the pool identity only).
 */
import type { AccessToken, TokenCredential } from '@azure/core-auth';
import { ManagedIdentityCredential } from '@azure/identity';
import { startBatchEmulator, type BatchEmulatorHandle, type ExchangeRecord } from '../../local/batch';
import { createManagementValidator, defaultManagementSpecDir, MANAGEMENT_API_VERSION } from '../../local/batch/contract/managementValidator';
import { startIdentityService, type IdentityService } from '../../local/identity';
import { localIdentityWiring, type LocalIdentityWiring } from '../../local/supervisor/identityWiring';
import { loadConfig } from '../../shared/adapters/config';
import * as batch from '../../shared/adapters/batch';
import { planJob } from '../../shared/core/planning/jobPlan';
import { jobPoolSpec } from '../../shared/core/planning/batchRequests';
import { parseJobSpec } from '../../shared/core/spec';
import { productArmOperations } from './productOperations';
import { until } from './until';
import { sdkClient } from '../../local/batch/testing/sdkHelpers';

let identity: IdentityService;
let wiring: LocalIdentityWiring;
let emu: BatchEmulatorHandle;
const exchanges: ExchangeRecord[] = [];
const validator = createManagementValidator(defaultManagementSpecDir());
let arm: batch.ArmBatchContext;

/** A token credential as a given identity on a given host would get one (tests of other principals). */
function miCredential(resourceId: string, resource = 'https://management.azure.com/', lifetimeSeconds?: number): TokenCredential {
  return {
    getToken: async (): Promise<AccessToken> => ({
      token: await identity.resourceToken(resource, { identity: identity.managedIdentities.byResourceId(resourceId)! }, { lifetimeSeconds }),
      expiresOnTimestamp: Date.now() + 3_600_000,
    }),
  };
}

function appConfig(extra: Record<string, string> = {}) {
  return loadConfig({
    BATCH_ACCOUNT_URL: emu.url,
    BATCH_ACCOUNT_NAME: emu.accountName,
    BATCH_ACCOUNT_KEY: emu.accountKey,
    AzureWebJobsStorage: 'UseDevelopmentStorage=true',
    STAGING_ACCOUNTS: 'devstoreaccount1',
    BATCH_SUBSCRIPTION_ID: wiring.arm.subscriptionId,
    BATCH_RESOURCE_GROUP: wiring.arm.resourceGroup,
    POOL_IDENTITY_RESOURCE_ID: wiring.pool.resourceId,
    POOL_IDENTITY_CLIENT_ID: wiring.pool.clientId,
    ARM_ENDPOINT: emu.armUrl as string,
    ...extra,
  });
}

/** The pool the product asks for, for a job spec. */
function productPool(jobId: string, specYaml: string, resourceFiles?: batch.ResourceFileSpec[]): batch.JobPoolSpec {
  const parsed = parseJobSpec(specYaml, 'application/yaml');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return jobPoolSpec(planJob(jobId, parsed.spec).poolCreate, { startTaskFiles: resourceFiles, identityResourceId: wiring.pool.resourceId });
}

const DOCKER_JOB = `
name: arm-contract
pool: { vmSize: Standard_D4s_v5, nodes: 2, startTask: { command: "echo ready", resourceFiles: [{ account: data1, container: software, blob: setup.sh, path: setup.sh }] } }
container: { runtime: docker, images: [myregistry.azurecr.io/hpc/app:1.0], registry: { server: myregistry.azurecr.io, identity: managed } }
mpi: { runtime: openmpi, processesPerNode: 1, command: app }
`;

beforeAll(async () => {
  identity = await startIdentityService();
  wiring = localIdentityWiring(identity);
  emu = await startBatchEmulator({
    timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20, poolDeleteMs: 1200 },
    identity: wiring.nodeIdentities,
    arm: wiring.arm,
    onArmExchange: (ex) => exchanges.push(ex),
  });
  // The app's credential exactly as in Azure Functions (managed identity, AZURE_CLIENT_ID's client id), through the
  // App Service identity endpoint as the local host sets it.
  process.env.IDENTITY_ENDPOINT = identity.appServiceIdentity.endpoint;
  process.env.IDENTITY_HEADER = identity.appServiceIdentity.header;
  const cfg = appConfig();
  arm = batch.createArmBatchContext(cfg, {
    credential: new ManagedIdentityCredential({ clientId: wiring.app.clientId }),
    policy: { maxAttempts: 2, initialMs: 20, maxMs: 200, multiplier: 2, jitter: 0.5 },
  }) as batch.ArmBatchContext;
}, 60_000);

afterAll(async () => {
  delete process.env.IDENTITY_ENDPOINT;
  delete process.env.IDENTITY_HEADER;
  await emu?.stop();
  await identity?.stop();
});

describe("the product's pool operations", () => {
  test("create with the pool identity, repeat (idempotent), inspect; refuse another job's pool; the data plane sees the identity", async () => {
    const spec = productPool('armjob1', DOCKER_JOB, [
      { httpUrl: 'http://127.0.0.1:1/data1/software/setup.sh', filePath: 'setup.sh', identityResourceId: wiring.pool.resourceId },
    ]);
    expect(await batch.createJobPoolArm(arm, spec)).toEqual({ poolId: spec.poolId, created: true });
    // The body: the identity assigned, registries and files by identityReference, no password or SAS anywhere.
    const put = exchanges.find((e) => e.method === 'PUT' && e.status === 200);
    const body = put?.requestBody as {
      identity: unknown;
      properties: { deploymentConfiguration: { virtualMachineConfiguration: { containerConfiguration: unknown } }; startTask: { resourceFiles: unknown[] } };
    };
    expect(body.identity).toEqual({ type: 'UserAssigned', userAssignedIdentities: { [wiring.pool.resourceId]: {} } });
    expect(body.properties.deploymentConfiguration.virtualMachineConfiguration.containerConfiguration).toEqual({
      type: 'DockerCompatible',
      containerRegistries: [{ registryServer: 'myregistry.azurecr.io', identityReference: { resourceId: wiring.pool.resourceId } }],
    });
    expect(body.properties.startTask.resourceFiles).toEqual([
      { httpUrl: 'http://127.0.0.1:1/data1/software/setup.sh', filePath: 'setup.sh', identityReference: { resourceId: wiring.pool.resourceId } },
    ]);
    expect(JSON.stringify(put?.requestBody)).not.toMatch(/password|sig=/i);
    expect(put?.headers['if-none-match']).toBe('*');

    // The activity ran twice: If-None-Match makes the second PUT a 412, and the pool is recognised as ours.
    expect(await batch.createJobPoolArm(arm, spec)).toEqual({ poolId: spec.poolId, created: false });
    expect(exchanges.some((e) => e.method === 'PUT' && e.status === 412)).toBe(true);
    const inspected = await batch.inspectArmPool(arm, spec.poolId);
    expect(inspected).toMatchObject({ exists: true, provisioningState: 'Succeeded', ownedByJob: 'armjob1', identities: [wiring.pool.resourceId] });
    expect(await batch.inspectArmPool(arm, 'no-such-pool')).toEqual({ exists: false });

    // Another job asking for the same pool id: a conflict, not a silent reuse.
    await expect(batch.createJobPoolArm(arm, { ...spec, jobId: 'other-job' })).rejects.toMatchObject({ code: 'PoolExists', status: 409 });

    const dataPlane = await sdkClient(emu).pool.get(spec.poolId);
    expect(dataPlane.identity).toEqual({
      type: 'UserAssigned',
      userAssignedIdentities: [{ resourceId: wiring.pool.resourceId, clientId: wiring.pool.clientId, principalId: wiring.pool.principalId }],
    });
  });

  test('the nodes get an instance metadata service that answers for the pool identity, and for nothing else', async () => {
    const nodes = await until('two nodes', async () => {
      const n = emu.nodes('hpc-armjob1');
      return n.length === 2 && n.every((x) => x.state !== 'creating') ? n : undefined;
    });
    const env = Object.fromEntries(
      (await import('node:fs'))
        .readFileSync(nodes[0].envFile, 'utf8')
        .split('\n')
        .map((l) => /^export ([A-Z_][A-Z0-9_]*)=(.*)$/.exec(l))
        .filter((m): m is RegExpExecArray => !!m)
        .map((m) => [m[1], m[2].replace(/^'|'$/g, '')]),
    );
    const imds = env.AZURE_POD_IDENTITY_AUTHORITY_HOST;
    expect(imds).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/imds\//);
    const ask = (q: string, headers: Record<string, string> = { Metadata: 'true' }) =>
      fetch(`${imds}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=${encodeURIComponent('https://containerregistry.azure.net')}${q}`, {
        headers,
      });
    const ok = await ask(`&client_id=${wiring.pool.clientId}`);
    expect(ok.status).toBe(200);
    const claims = JSON.parse(Buffer.from(((await ok.json()) as { access_token: string }).access_token.split('.')[1], 'base64url').toString()) as Record<
      string,
      unknown
    >;
    expect(claims).toMatchObject({
      oid: wiring.pool.principalId,
      appid: wiring.pool.clientId,
      xms_mirid: wiring.pool.resourceId,
      aud: 'https://containerregistry.azure.net',
    });
    // The only identity of the pool is the default; the app's identity is not on these nodes; IMDS needs its header.
    expect((await ask('')).status).toBe(200);
    expect(await (await ask(`&client_id=${wiring.app.clientId}`)).json()).toMatchObject({ error: 'invalid_request', error_description: 'Identity not found' });
    expect((await ask(`&client_id=${wiring.pool.clientId}`, {})).status).toBe(400);
  });

  test('delete (long-running: Location polled to the end) and list by account (nextLink paging) through the SDK', async () => {
    const client = arm.client;
    for (const id of ['armjob2', 'armjob3']) await batch.createJobPoolArm(arm, productPool(id, DOCKER_JOB));
    const listed: string[] = [];
    for await (const page of client.poolOperations.listByBatchAccount(wiring.arm.resourceGroup, emu.accountName, { maxresults: 1 }).byPage()) {
      expect(page.length).toBeLessThanOrEqual(1);
      for (const p of page) listed.push(p.name as string);
    }
    expect(listed).toEqual(['hpc-armjob1', 'hpc-armjob2', 'hpc-armjob3']);
    const started = Date.now();
    await client.poolOperations.beginDeleteAndWait(wiring.arm.resourceGroup, emu.accountName, 'hpc-armjob2', { updateIntervalInMs: 100 });
    // The poller waited for the deletion (the emulator reclaims a pool in poolDeleteMs, 1.2 s here) …
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(exchanges.filter((e) => e.path.includes('/operationResults/')).map((e) => e.status)).toEqual(expect.arrayContaining([202, 204]));
    // … and the pool is gone on both planes.
    expect(await batch.inspectArmPool(arm, 'hpc-armjob2')).toEqual({ exists: false });
    expect(emu.nodes('hpc-armjob2')).toEqual([]);
  });
});

describe("Resource Manager's door", () => {
  const poolPath = () =>
    `${emu.armUrl}/subscriptions/${wiring.arm.subscriptionId}/resourceGroups/${wiring.arm.resourceGroup}/providers/Microsoft.Batch/batchAccounts/${emu.accountName}/pools/hpc-armjob1?api-version=${MANAGEMENT_API_VERSION}`;
  const get = async (url: string, token?: string) => {
    const res = await fetch(url, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
    return {
      status: res.status,
      body: (await res.json().catch(() => undefined)) as { error?: { code: string; message: string } } | undefined,
      headers: res.headers,
    };
  };
  const appToken = (resource = 'https://management.azure.com/', lifetime?: number) =>
    identity.resourceToken(resource, { identity: wiring.app }, { lifetimeSeconds: lifetime });

  test('401 without a token, with an expired one, or one for another audience', async () => {
    const none = await get(poolPath());
    expect(none.status).toBe(401);
    expect(none.body?.error?.code).toBe('AuthenticationFailed');
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer authorization_uri="https:\/\/127\.0\.0\.1:\d+", error="invalid_token"/);
    expect((await get(poolPath(), await appToken('https://management.azure.com/', -600))).body?.error?.code).toBe('ExpiredAuthenticationToken');
    expect((await get(poolPath(), await appToken('https://storage.azure.com/'))).body?.error?.code).toBe('InvalidAuthenticationTokenAudience');
    expect((await get(poolPath(), 'not-a-token')).body?.error?.code).toBe('InvalidAuthenticationToken');
    expect((await get(poolPath(), await appToken())).status).toBe(200);
  });

  test('403 for a principal without a role on the account; LinkedAuthorizationFailed without Managed Identity Operator on the identity', async () => {
    // The pool identity itself holds no role on the account.
    const asPool = batch.createArmBatchContext(appConfig(), {
      credential: miCredential(wiring.pool.resourceId),
      policy: { maxAttempts: 1, initialMs: 1, maxMs: 1, multiplier: 1, jitter: 0 },
    }) as batch.ArmBatchContext;
    await expect(batch.createJobPoolArm(asPool, productPool('armjob4', DOCKER_JOB))).rejects.toMatchObject({
      code: 'AuthorizationFailed',
      status: 403,
      requestId: expect.any(String),
    });
    // A contributor on the account who may not assign the identity.
    const other = wiring.app;
    const emu2 = await startBatchEmulator({
      identity: wiring.nodeIdentities,
      arm: { ...wiring.arm, access: { ...wiring.arm.access, identityOperators: {} } },
      onArmExchange: (ex) => exchanges.push(ex),
    });
    try {
      const ctx2 = batch.createArmBatchContext(
        { ...appConfig(), poolIdentity: { ...appConfig().poolIdentity!, armEndpoint: emu2.armUrl as string } },
        { credential: miCredential(other.resourceId), policy: { maxAttempts: 1, initialMs: 1, maxMs: 1, multiplier: 1, jitter: 0 } },
      ) as batch.ArmBatchContext;
      const err = (await batch.createJobPoolArm(ctx2, productPool('armjob5', DOCKER_JOB)).catch((e: unknown) => e)) as batch.BatchError;
      expect(err).toMatchObject({ code: 'LinkedAuthorizationFailed', status: 403 });
      expect(err.message).toContain('Microsoft.ManagedIdentity/userAssignedIdentities/assign/action');
      expect(emu2.nodes('hpc-armjob5')).toEqual([]);
    } finally {
      await emu2.stop();
    }
  });

  test('404s name the missing subscription, resource group, account or pool; api-version is required; unknown identities are refused', async () => {
    const token = await appToken();
    const base = `${emu.armUrl}/subscriptions/${wiring.arm.subscriptionId}/resourceGroups/${wiring.arm.resourceGroup}/providers/Microsoft.Batch/batchAccounts/${emu.accountName}`;
    expect((await get(poolPath().replace(wiring.arm.subscriptionId, '11111111-1111-4111-8111-111111111111'), token)).body?.error?.code).toBe(
      'SubscriptionNotFound',
    );
    expect((await get(poolPath().replace(`resourceGroups/${wiring.arm.resourceGroup}`, 'resourceGroups/nope'), token)).body?.error?.code).toBe(
      'ResourceGroupNotFound',
    );
    expect(
      (await get(`${base.replace(`batchAccounts/${emu.accountName}`, 'batchAccounts/other')}/pools/x?api-version=${MANAGEMENT_API_VERSION}`, token)).body?.error
        ?.code,
    ).toBe('ResourceNotFound');
    expect((await get(`${base}/pools/nope?api-version=${MANAGEMENT_API_VERSION}`, token)).status).toBe(404);
    expect((await get(`${base}/pools/nope`, token)).body?.error?.code).toBe('MissingApiVersionParameter');
    expect((await get(`${base}/pools/nope?api-version=2022-01-01`, token)).body?.error?.code).toBe('InvalidApiVersionParameter');
    // An operation of the spec the emulator does not serve: 501, never a silent success.
    const stop = await fetch(`${base}/pools/hpc-armjob1/stopResize?api-version=${MANAGEMENT_API_VERSION}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(stop.status).toBe(501);
    // An identity that does not exist, a property the model does not have.
    const put = (body: unknown) =>
      fetch(`${base}/pools/badpool?api-version=${MANAGEMENT_API_VERSION}`, {
        method: 'PUT',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
    // The product's body as it went over the wire (the SDK nests the model's flattened properties).
    const good = exchanges.find((e) => e.method === 'PUT' && e.status === 200)?.requestBody as { properties: object };
    const ghost = `/subscriptions/${wiring.arm.subscriptionId}/resourceGroups/${wiring.arm.resourceGroup}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/ghost`;
    const noIdentity = await put({ ...good, identity: { type: 'UserAssigned', userAssignedIdentities: { [ghost]: {} } } });
    expect(await noIdentity.json()).toMatchObject({ error: { code: 'FailedIdentityOperation', message: expect.stringContaining(ghost) } });
    expect(noIdentity.status).toBe(400);
    const extra = await put({ ...good, properties: { ...good.properties, surprise: true } });
    expect(extra.status).toBe(400);
    expect(((await extra.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'InvalidRequestContent',
      message: expect.stringContaining('surprise'),
    });
  });
});

test('every management exchange conforms to BatchManagement-2023-11-01; the operations the product calls were all exercised', () => {
  const problems: string[] = [];
  const operations = new Set<string>();
  for (const ex of exchanges) {
    // The Location of a deletion is an operation monitor, not an operation of the spec.
    if (ex.path.includes('/operationResults/')) continue;
    const op = validator.matchOperation(ex.method, ex.path);
    if (op && ex.status < 400) operations.add(op);
    // Requests the test forged on purpose (no api-version, another subscription, an unknown property) are the door's tests.
    if (ex.status >= 400) {
      problems.push(...validator.validateResponse(ex).map((p) => `${ex.method} ${ex.path} → ${p}`));
      continue;
    }
    problems.push(
      ...validator
        .validateRequest({ ...ex, query: Object.fromEntries(Object.entries(ex.query).filter(([k]) => k !== '$skiptoken')) })
        .map((p) => `${ex.method} ${ex.path}: ${p}`),
    );
    problems.push(...validator.validateResponse(ex).map((p) => `${ex.method} ${ex.path} → ${p}`));
  }
  expect(problems).toEqual([]);
  expect(productArmOperations()).toEqual(['Pools_Create', 'Pools_Get']);
  expect(productArmOperations().filter((op) => !operations.has(op))).toEqual([]);
  expect([...operations].sort()).toEqual(['Pools_Create', 'Pools_Delete', 'Pools_Get', 'Pools_ListByBatchAccount']);
});
