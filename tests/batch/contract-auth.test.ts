/**
 * Data-plane roles for Microsoft Entra tokens (issue 29): a valid token of the tenant is not enough; its principal
 * must hold a Batch data role on the account. Contributor: everything; reader: GET/HEAD only; anyone else (the pool
 * identity, a user without a role): 403 AuthorizationFailure. Raw REST, tokens signed by a key the tenant publishes.
 */
import { exportJWK, generateKeyPair, SignJWT, type JSONWebKeySet } from 'jose';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { dataRoleAllows } from '../../local/batch/auth/bearer';

const TENANT = '00000000-0000-0000-0000-00000000aaaa';
const OIDS = {
  contributor: '11111111-0000-0000-0000-000000000001',
  reader: '11111111-0000-0000-0000-000000000002',
  poolIdentity: '11111111-0000-0000-0000-000000000003',
};
const API = 'api-version=2022-10-01.16.0';

describe('Batch data-plane roles', () => {
  let emu: BatchEmulatorHandle;
  let sign: (oid: string) => Promise<string>;
  beforeAll(async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwks: JSONWebKeySet = { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] };
    sign = (oid) =>
      new SignJWT({ oid, tid: TENANT })
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer(`https://sts.windows.net/${TENANT}/`)
        .setAudience('https://batch.core.windows.net/')
        .setIssuedAt()
        .setExpirationTime('10m')
        .sign(privateKey);
    emu = await startBatchEmulator({ aad: { tenantId: TENANT, jwks: () => jwks, roles: { contributors: [OIDS.contributor], readers: [OIDS.reader] } } });
  });
  afterAll(async () => {
    await emu?.stop();
  });

  const send = async (oid: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${emu.url}${path}?${API}`, {
      method,
      headers: { authorization: `Bearer ${await sign(oid)}`, ...(body ? { 'content-type': 'application/json; odata=minimalmetadata' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as { code?: string; values?: { key: string; value: string }[] }) : undefined };
  };
  const job = (id: string) => ({ id, poolInfo: { poolId: 'nopool' } });

  it('a contributor reads and writes', async () => {
    expect((await send(OIDS.contributor, 'GET', '/pools')).status).toBe(200);
    expect((await send(OIDS.contributor, 'POST', '/jobs', job('by-contributor'))).status).toBe(201);
  });

  it('a reader reads, and a write is 403 AuthorizationFailure', async () => {
    expect((await send(OIDS.reader, 'GET', '/jobs')).status).toBe(200);
    const write = await send(OIDS.reader, 'POST', '/jobs', job('by-reader'));
    expect(write.status).toBe(403);
    expect(write.body?.code).toBe('AuthorizationFailure');
  });

  it('the pool identity, holding no data role, gets 403 on GET /pools', async () => {
    const r = await send(OIDS.poolIdentity, 'GET', '/pools');
    expect(r.status).toBe(403);
    expect(r.body?.code).toBe('AuthorizationFailure');
    expect(r.body?.values?.find((v) => v.key === 'AuthorizationErrorDetail')?.value).toContain(OIDS.poolIdentity);
  });

  it('the role rule itself: readers GET/HEAD only, a token without oid nothing', () => {
    const roles = { contributors: ['c'], readers: ['r'] };
    expect(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'].map((m) => dataRoleAllows(roles, 'r', m))).toEqual([true, true, false, false, false, false]);
    expect(dataRoleAllows(roles, 'c', 'DELETE')).toBe(true);
    expect(dataRoleAllows(roles, undefined, 'GET')).toBe(false);
  });
});
