/**
 * The keyless local stack (issue 19, second part): the stack runs the app with the identity-based settings it has in
 * Azure, the app gets its managed identity's tokens from the App Service identity endpoint, and every local service
 * refuses what Azure refuses once keys are off: shared keys and key-signed SAS at Azurite (403
 * KeyBasedAuthenticationNotPermitted), wrong or expired tokens at Azurite (401 InvalidAuthenticationInfo) and at
 * the Batch emulator (401 AuthenticationFailed; a shared key 403). Requests are sent raw where the answer's shape
 * is the point. Each of these fails on the code before: the stack set connection strings and BATCH_ACCOUNT_KEY,
 * Azurite spoke http and took its keys, the identity endpoint did not exist, and Batch answered 501 to any token.
 * The registry takes no token in this branch (its token auth comes with the managed-identity pools work), so there
 * is nothing to refuse there yet. Needs the compiled app (dist/).
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { SignJWT, decodeJwt, generateKeyPair } from 'jose';
import { DefaultAzureCredential, ManagedIdentityCredential } from '@azure/identity';
import { BlobSASPermissions, BlobServiceClient, ContainerClient, generateBlobSASQueryParameters, StorageSharedKeyCredential } from '@azure/storage-blob';
import { QueueServiceClient } from '@azure/storage-queue';
import { TableClient } from '@azure/data-tables';
import { BatchServiceClient, BatchSharedKeyCredentials } from '@azure/batch';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { APP_IDENTITY, AZURE_RESOURCES } from '../../local/identity';
import { BATCH_TOKEN_SCOPE, loadConfig } from '../../shared/adapters/config';
import { containerSasUrl, readOnlyBlobUrl, SAS_VERSION } from '../../shared/adapters/storage/sas';
import { blobAccount } from '../../shared/adapters/storage/clients';

let stack: Stack;

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({ port: 0, logDestination: path.join(logs, 'security-keyless-host.log'), demoImage: false, env: { SWEEP_SCHEDULE: '0 0 0 1 1 *' } });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

const STORAGE = 'https://storage.azure.com';
const claims = (token: string) => decodeJwt(token) as Record<string, unknown>;
const operatorToken = (resource: string, lifetimeSeconds?: number) => stack.identity.resourceToken(resource, { user: 'admin' }, { lifetimeSeconds });

/** A token shaped like the tenant's, signed with a key the tenant never had. */
async function forgedToken(resource: string): Promise<string> {
  const { privateKey } = await generateKeyPair('RS256');
  const good = claims(await operatorToken(resource));
  return new SignJWT({ ...good }).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: 'not-a-tenant-key' }).sign(privateKey);
}

/** Another tenant's token (its own issuer), signed with this tenant's key shape but not its key. */
async function otherTenantToken(resource: string): Promise<string> {
  const { privateKey } = await generateKeyPair('RS256');
  const now = Math.floor(Date.now() / 1000);
  const other = '11111111-2222-4333-a444-555555555555';
  return new SignJWT({ aud: resource, iss: `https://sts.windows.net/${other}/`, tid: other, oid: other, ver: '1.0' })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(now + 600)
    .sign(privateKey);
}

async function raw(url: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(url, { headers: { 'x-ms-version': SAS_VERSION, ...headers } });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

describe('the app runs with the settings it has in Azure', () => {
  it('holds no key: identity-based host storage, blob service URIs, no Batch key; shared/adapters/config reads them as managed identity', () => {
    const s = stack.settings;
    expect(stack.keyless).toBe(true);
    for (const [name, value] of Object.entries(s)) {
      expect({ name, key: /AccountKey=|SharedAccessSignature=|[?&]sig=/i.test(value) }).toEqual({ name, key: false });
    }
    expect(s.BATCH_ACCOUNT_KEY).toBeUndefined();
    expect(s.AzureWebJobsStorage).toBeUndefined();
    expect(s).toMatchObject({
      AzureWebJobsStorage__credential: 'managedidentity',
      AzureWebJobsStorage__clientId: APP_IDENTITY.clientId,
      AZURE_CLIENT_ID: APP_IDENTITY.clientId,
    });
    const config = loadConfig(s);
    expect(config.batch.auth).toEqual({ kind: 'aad', scope: BATCH_TOKEN_SCOPE });
    for (const ref of [config.hostStorage, ...config.stagingAccounts, ...config.dataAccess.accounts]) {
      expect(ref).toMatchObject({ kind: 'managedIdentity', blobEndpoint: expect.stringMatching(/^https:\/\/127\.0\.0\.1:\d+\/[a-z0-9]+$/) });
    }
    expect(config.hostStorage).toMatchObject({ accountName: 'devstoreaccount1', tableEndpoint: stack.azurite.tableEndpoint() });
  });

  it("DefaultAzureCredential and ManagedIdentityCredential in the app's process get the app identity's tokens from IDENTITY_ENDPOINT", async () => {
    // The in-process host has set the platform's variables, as App Service does for the worker.
    expect(process.env.IDENTITY_ENDPOINT).toBe(stack.identity.appServiceIdentity.endpoint);
    expect(process.env.IDENTITY_HEADER).toBe(stack.identity.appServiceIdentity.header);
    const storage = await new DefaultAzureCredential().getToken(`${STORAGE}/.default`);
    expect(claims(storage.token)).toMatchObject({
      aud: STORAGE,
      iss: stack.identity.resourceIssuer,
      appid: APP_IDENTITY.clientId,
      oid: APP_IDENTITY.principalId,
      idtyp: 'app',
      xms_mirid: APP_IDENTITY.resourceId,
      ver: '1.0',
    });
    const batch = await new ManagedIdentityCredential({ clientId: APP_IDENTITY.clientId }).getToken(BATCH_TOKEN_SCOPE);
    // The double slash of the app's scope is what gives Batch its exact audience.
    expect(claims(batch.token).aud).toBe(AZURE_RESOURCES.batch);
  });

  it('the identity endpoint answers as App Service: the secret header, an identity the app has, a resource the tenant knows', async () => {
    const { endpoint, header } = stack.identity.appServiceIdentity;
    const q = (params: Record<string, string>) => `${endpoint}?${new URLSearchParams({ 'api-version': '2019-08-01', resource: STORAGE, ...params })}`;
    const ok = await raw(q({ client_id: APP_IDENTITY.clientId }), { 'X-IDENTITY-HEADER': header });
    expect(ok.status).toBe(200);
    const body = JSON.parse(ok.text) as Record<string, string>;
    expect(body).toMatchObject({ resource: STORAGE, token_type: 'Bearer', client_id: APP_IDENTITY.clientId });
    expect(Number(body.expires_on)).toBeGreaterThan(Date.now() / 1000);
    expect((await raw(q({ mi_res_id: APP_IDENTITY.resourceId }), { 'X-IDENTITY-HEADER': header })).status).toBe(200);
    expect((await raw(q({ client_id: APP_IDENTITY.clientId }))).status).toBe(401);
    expect((await raw(q({ client_id: APP_IDENTITY.clientId }), { 'X-IDENTITY-HEADER': 'guessed' })).status).toBe(401);
    // Only a user-assigned identity: a request naming none (or another) gets App Service's answer.
    for (const params of [{}, { client_id: '00000000-0000-4000-a000-000000000000' }] as Record<string, string>[]) {
      const none = await raw(q(params), { 'X-IDENTITY-HEADER': header });
      expect(none.status).toBe(400);
      expect(JSON.parse(none.text)).toMatchObject({ statusCode: 400, message: 'Unable to load the proper Managed Identity.' });
    }
    const unknown = await raw(q({ client_id: APP_IDENTITY.clientId, resource: 'https://example.org' }), { 'X-IDENTITY-HEADER': header });
    expect(unknown.status).toBe(400);
    expect(unknown.text).toMatch(/AADSTS500011/);
  });
});

describe('Azurite refuses what a storage account with shared keys disabled refuses', () => {
  const account = 'data1';
  const dev = () => stack.azurite.accounts.find((a) => a.name === account) as { name: string; key: string };

  beforeAll(async () => {
    const c = stack.operator.blobService(account).getContainerClient('keyless');
    await c.createIfNotExists();
    await c.getBlockBlobClient('hello.txt').upload('hello', 5);
  });

  it("shared key: 403 KeyBasedAuthenticationNotPermitted on blob, queue and table, with Azure's body", async () => {
    const conn = stack.azurite.connectionString(account);
    // The Tables SDK leaves RestError.code unset and keeps the code in details.errorCode (as for Azurite's own errors).
    const refused = async (p: Promise<unknown>) =>
      p.then(
        () => ({ statusCode: 200, code: 'accepted' }),
        (e: { statusCode?: number; code?: string; details?: { errorCode?: string } }) => ({ statusCode: e.statusCode, code: e.code ?? e.details?.errorCode }),
      );
    const expected = { statusCode: 403, code: 'KeyBasedAuthenticationNotPermitted' };
    expect(await refused(BlobServiceClient.fromConnectionString(conn).getContainerClient('keyless').getProperties())).toEqual(expected);
    expect(await refused(QueueServiceClient.fromConnectionString(conn).getQueueClient('keyless').createIfNotExists())).toEqual(expected);
    expect(await refused(TableClient.fromConnectionString(conn, 'keyless').createTable())).toEqual(expected);
    // The raw answer: Azure's XML error and its reason phrase.
    const svc = new BlobServiceClient(stack.azurite.blobEndpoint(account), new StorageSharedKeyCredential(account, dev().key));
    const res = await svc
      .getContainerClient('keyless')
      .listBlobsFlat()
      .next()
      .catch((e: { response?: { bodyAsText?: string } }) => e.response?.bodyAsText);
    expect(String(res)).toMatch(
      /<Code>KeyBasedAuthenticationNotPermitted<\/Code><Message>Key based authentication is not permitted on this storage account\.\nRequestId:/,
    );
  });

  it('a SAS signed with the account key is refused (403); a user delegation SAS, signed with a key got with a token, is served', async () => {
    const blobUrl = `${stack.azurite.blobEndpoint(account)}/keyless/hello.txt`;
    const expiresOn = new Date(Date.now() + 3_600_000);
    const keySas = generateBlobSASQueryParameters(
      { containerName: 'keyless', blobName: 'hello.txt', permissions: BlobSASPermissions.parse('r'), expiresOn, version: SAS_VERSION },
      new StorageSharedKeyCredential(account, dev().key),
    );
    const byKey = await raw(`${blobUrl}?${keySas}`);
    expect(byKey.status).toBe(403);
    expect(byKey.headers.get('x-ms-error-code')).toBe('KeyBasedAuthenticationNotPermitted');
    // What the app hands nodes: shared/adapters/storage/sas.ts with the account reached by token.
    const url = await readOnlyBlobUrl(
      blobAccount({ kind: 'managedIdentity', accountName: account, blobEndpoint: stack.azurite.blobEndpoint(account) }),
      'keyless',
      'hello.txt',
      expiresOn,
    );
    expect(new URL(url).searchParams.get('skoid')).toBeTruthy();
    const byDelegation = await raw(url);
    expect(byDelegation).toMatchObject({ status: 200, text: 'hello' });
    // Its signature is checked: the same SAS for another blob is refused.
    expect((await raw(url.replace('/hello.txt?', '/other.txt?'))).status).toBe(403);
    // A container SAS (what outputs, prefix files and blobfuse mounts get) is a user delegation SAS too: it lists.
    const container = await containerSasUrl(
      blobAccount({ kind: 'managedIdentity', accountName: account, blobEndpoint: stack.azurite.blobEndpoint(account) }),
      'keyless',
      'rl',
      expiresOn,
    );
    expect(new URL(container).searchParams.get('sv')).toBe(SAS_VERSION);
    const listed = await raw(container.replace('?', '?restype=container&comp=list&'));
    expect({ status: listed.status, lists: listed.text.includes('<Name>hello.txt</Name>') }).toEqual({ status: 200, lists: true });
  });

  it('a wrong or expired token: 401 InvalidAuthenticationInfo with the reason and the Bearer challenge; the right one is served', async () => {
    const blob = `${stack.azurite.blobEndpoint(account)}/keyless/hello.txt`;
    const get = async (token: string) => raw(blob, { authorization: `Bearer ${token}` });
    expect((await get(await operatorToken(STORAGE))).text).toBe('hello');
    const cases: [string, Promise<string>, RegExp][] = [
      ['expired', operatorToken(STORAGE, -600), /Lifetime validation failed\. The token is expired\./],
      ['for Batch', operatorToken(AZURE_RESOURCES.batch), /Audience validation failed/],
      ['signed by another key', forgedToken(STORAGE), /Signature validation failed/],
      ['another tenant', otherTenantToken(STORAGE), /Signature validation failed|Issuer validation failed/],
      ['not a JWT', Promise.resolve('not-a-token'), /Signature validation failed/],
    ];
    for (const [what, token, detail] of cases) {
      const res = await get(await token);
      expect({ what, status: res.status, code: res.headers.get('x-ms-error-code') }).toEqual({ what, status: 401, code: 'InvalidAuthenticationInfo' });
      expect(res.text).toMatch(detail);
      expect(res.headers.get('www-authenticate')).toBe(
        `Bearer authorization_uri=https://login.microsoftonline.com/${stack.identity.tenantId}/oauth2/authorize resource_id=https://storage.azure.com`,
      );
    }
    // Tables answer JSON requests in JSON; queues in XML, as Azure.
    const table = await raw(`${stack.azurite.tableEndpoint(account)}/Tables`, {
      authorization: `Bearer ${await operatorToken(STORAGE, -600)}`,
      accept: 'application/json;odata=nometadata',
    });
    expect(table.status).toBe(401);
    expect(JSON.parse(table.text)['odata.error'].code).toBe('InvalidAuthenticationInfo');
    const queue = await raw(`${stack.azurite.queueEndpoint(account)}?comp=list`, { authorization: `Bearer ${await forgedToken(STORAGE)}` });
    expect(queue.status).toBe(401);
    expect(queue.text).toMatch(/<Code>InvalidAuthenticationInfo<\/Code>/);
    // Plain http is not served at all: Azurite listens with TLS only.
    await expect(fetch(blob.replace('https:', 'http:'))).rejects.toThrow();
  });

  it("an account's own audience holds for that account only, also after the gate served (and remembered) the token", async () => {
    // The gate keeps tokens it verified; keyed by the token alone, this one would have passed at stage1 from memory.
    const token = await operatorToken(`https://${account}.blob.core.windows.net`);
    const at = (name: string) => raw(`${stack.azurite.blobEndpoint(name)}/keyless/hello.txt`, { authorization: `Bearer ${token}` });
    expect((await at(account)).text).toBe('hello');
    const other = await at('stage1');
    expect({ status: other.status, code: other.headers.get('x-ms-error-code') }).toEqual({ status: 401, code: 'InvalidAuthenticationInfo' });
    expect(other.text).toMatch(/Audience validation failed/);
  });

  it('a token signed by the tenant for the job API (its v2.0 issuer) is no storage token: refused for its issuer', async () => {
    // Signed with the tenant's key, audience overridden to Storage, but issued the way the API's tokens are: Storage
    // takes v1.0 tokens of https://sts.windows.net/<tenant>/ only (Azurite itself accepts no other issuer prefix).
    const apiToken = await stack.identity.userToken('admin', { audience: STORAGE });
    const res = await raw(`${stack.azurite.blobEndpoint(account)}/keyless/hello.txt`, { authorization: `Bearer ${apiToken}` });
    expect(res.status).toBe(401);
    expect(res.text).toMatch(/Issuer validation failed/);
  });
});

describe('the Batch emulator takes Microsoft Entra ID tokens only', () => {
  const batchGet = async (headers: Record<string, string>) => {
    const res = await fetch(`${stack.batch.url}/pools?api-version=2022-10-01.16.0`, { headers });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as { code?: string; values?: { key: string; value: string }[] } };
  };
  const detail = (b: { values?: { key: string; value: string }[] }) => b.values?.find((v) => v.key === 'AuthenticationErrorDetail')?.value;

  it('a valid token of the tenant is served; the operator client works', async () => {
    expect((await batchGet({ authorization: `Bearer ${await operatorToken(AZURE_RESOURCES.batch)}` })).status).toBe(200);
    expect(await stack.operator.batch().pool.list()).toBeDefined();
  });

  it('the shared key is refused with 403 AuthenticationFailed: the account allows Microsoft Entra ID only', async () => {
    const client = new BatchServiceClient(new BatchSharedKeyCredentials(stack.batch.accountName, stack.batch.accountKey), stack.batch.url, {
      noRetryPolicy: true,
    });
    const err = await client.pool.list().then(
      () => undefined,
      (e: { statusCode?: number; body?: { code?: string; values?: { key: string; value: string }[] } }) => e,
    );
    expect(err?.statusCode).toBe(403);
    expect(err?.body?.code).toBe('AuthenticationFailed');
    expect(detail(err?.body ?? {})).toBe('The specified type of authentication SharedKey is not allowed for this account.');
  });

  it('wrong or expired tokens: 401 AuthenticationFailed with the reason Batch gives', async () => {
    const cases: [string, Promise<string>, RegExp][] = [
      ['expired', operatorToken(AZURE_RESOURCES.batch, -600), /The access token expiry UTC time '.*' is earlier than current UTC time/],
      ['for Storage', operatorToken(STORAGE), /wrong audience or resource 'https:\/\/storage\.azure\.com'/],
      // What a single-slash scope (https://batch.core.windows.net/.default) gets from a managed identity endpoint.
      [
        'without the slash',
        operatorToken('https://batch.core.windows.net'),
        /wrong audience or resource 'https:\/\/batch\.core\.windows\.net'\. It should exactly match \(including forward slash\)/,
      ],
      ['signed by another key', forgedToken(AZURE_RESOURCES.batch), /signature is invalid/],
      ['another tenant', otherTenantToken(AZURE_RESOURCES.batch), /signature is invalid|wrong issuer/],
    ];
    for (const [what, token, reason] of cases) {
      const { status, body } = await batchGet({ authorization: `Bearer ${await token}` });
      expect({ what, status, code: body.code }).toEqual({ what, status: 401, code: 'AuthenticationFailed' });
      expect(detail(body)).toMatch(reason);
    }
  });
});

describe("the operator's own tools are keyless too", () => {
  it("reach storage with the tenant admin's token (an https endpoint trusted in this process, no key)", async () => {
    const svc = stack.operator.blobService('data1');
    expect(svc.credential).not.toBeInstanceOf(StorageSharedKeyCredential);
    const c: ContainerClient = svc.getContainerClient('keyless-operator');
    await c.createIfNotExists();
    expect(svc.url).toMatch(/^https:/);
  });
});
