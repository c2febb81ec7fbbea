/**
 * Identity and tenancy, the pure parts: claims → principal → permissions, operator keys, the authentication
 * decision, the settings, and token validation with real RS256 keys (jose). The issuer's two HTTP documents
 * (OpenID metadata, JWKS) are served from memory through the validator's fetch parameter: the boundary is
 * HTTP, the crypto and the checks are the real ones. The stack tests (tests/security) do the same over the wire.
 */
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import {
  ACTIONS,
  OPERATOR,
  anonymousPrincipal,
  authenticate,
  can,
  createTokenValidator,
  listOwnerFilter,
  matchesOperatorKey,
  maySeeJob,
  principalFromClaims,
  rolesFromClaim,
  IssuerUnavailableError,
  TokenRejectedError,
  type Principal,
  type TokenValidator,
} from '../../shared/adapters/auth';
import { parseAuthConfig, type AuthConfig } from '../../shared/core/config/auth';

const TID = '11111111-2222-4333-8444-555555555555';
const OID = 'AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE';

describe('roles and principals', () => {
  test('app role values map to roles; unknown values and non-arrays grant nothing', () => {
    expect(rolesFromClaim(['Jobs.Admin', 'Jobs.Read', 'Jobs.Read', 'Jobs.Owner', 42])).toEqual(['reader', 'admin']);
    expect(rolesFromClaim(['Jobs.Submit'])).toEqual(['submitter']);
    expect(rolesFromClaim('Jobs.Admin')).toEqual([]);
    expect(rolesFromClaim(undefined)).toEqual([]);
    expect(rolesFromClaim(['jobs.admin', 'toString', '__proto__'])).toEqual([]);
  });

  test('a user token: owner is tid/oid (lowercase), the name comes from name, then preferred_username', () => {
    const out = principalFromClaims({
      tid: TID,
      oid: OID,
      scp: 'user_impersonation',
      name: 'Ada\u0007 Lovelace',
      preferred_username: 'ada@x',
      roles: ['Jobs.Submit'],
    });
    expect(out).toEqual({
      ok: true,
      principal: { id: `${TID}/${OID.toLowerCase()}`, name: 'Ada Lovelace', kind: 'user', roles: ['submitter'], tenantId: TID, objectId: OID.toLowerCase() },
    });
    const noName = principalFromClaims({ tid: TID, oid: OID, scp: 'x', preferred_username: 'ada@x' });
    expect(noName.ok && noName.principal.name).toBe('ada@x');
    const long = principalFromClaims({ tid: TID, oid: OID, scp: 'x', name: 'n'.repeat(500) });
    expect(long.ok && long.principal.name).toHaveLength(128);
  });

  test('an app-only token (no scp, or idtyp app) is an application named by its client id', () => {
    const app = principalFromClaims({ tid: TID, oid: OID, azp: 'client-1', roles: ['Jobs.Submit'] });
    expect(app).toMatchObject({ ok: true, principal: { kind: 'application', name: 'client-1', roles: ['submitter'] } });
    expect(principalFromClaims({ tid: TID, oid: OID, idtyp: 'app', scp: 'x', azp: 'c' })).toMatchObject({ principal: { kind: 'application' } });
  });

  test('no tid or oid (or not GUIDs): no principal, so no owner to record', () => {
    expect(principalFromClaims({ oid: OID, scp: 'x' })).toEqual({ ok: false, reason: 'the token has no tenant id (tid)' });
    expect(principalFromClaims({ tid: TID, scp: 'x' })).toEqual({ ok: false, reason: 'the token has no object id (oid)' });
    expect(principalFromClaims({ tid: TID, oid: "x' or owner ne '", scp: 'x' }).ok).toBe(false);
  });
});

describe('permissions', () => {
  const user = (roles: Principal['roles'], id = 't/me'): Principal => ({ id, name: id, kind: 'user', roles });

  test('reader reads; submitter also submits and cancels; admin everything; no role nothing', () => {
    const matrix = (p: Principal) => ACTIONS.filter((a) => can(p, a));
    expect(matrix(user(['reader']))).toEqual(['job:read', 'usage:read']);
    expect(matrix(user(['submitter']))).toEqual(['job:read', 'job:submit', 'job:cancel', 'usage:read']);
    expect(matrix(user(['admin']))).toEqual([...ACTIONS]);
    expect(matrix(user([]))).toEqual([]);
    expect(matrix(OPERATOR)).toEqual([...ACTIONS]);
  });

  test('own jobs only, admins all: visibility and the list filter agree', () => {
    const me = user(['submitter'], 't/me');
    expect(maySeeJob(me, 't/me')).toBe(true);
    expect(maySeeJob(me, 't/you')).toBe(false);
    expect(maySeeJob(me, 'queue')).toBe(false);
    expect(listOwnerFilter(me)).toBe('t/me');
    const admin = user(['admin'], 't/boss');
    expect(maySeeJob(admin, 't/you')).toBe(true);
    expect(maySeeJob(admin, 'queue')).toBe(true);
    expect(listOwnerFilter(admin)).toBeUndefined();
    expect(listOwnerFilter(anonymousPrincipal('reader'))).toBe('anonymous');
  });
});

describe('operator keys', () => {
  test('exact match against any configured key; prefixes, case changes and empty lists do not match', () => {
    const keys = ['k'.repeat(40), 'second-operator-key-0123456789'];
    expect(matchesOperatorKey('k'.repeat(40), keys)).toBe(true);
    expect(matchesOperatorKey('second-operator-key-0123456789', keys)).toBe(true);
    expect(matchesOperatorKey('k'.repeat(39), keys)).toBe(false);
    expect(matchesOperatorKey('K'.repeat(40), keys)).toBe(false);
    expect(matchesOperatorKey('k'.repeat(40), [])).toBe(false);
  });
});

describe('authenticate', () => {
  const config = (over: Partial<AuthConfig> = {}): AuthConfig => ({
    bearer: {
      issuer: 'https://issuer/t/v2.0',
      audiences: ['api://x'],
      metadataUrl: 'https://issuer/t/v2.0/.well-known/openid-configuration',
      clockSkewSeconds: 60,
    },
    operatorKeys: ['operator-key-0123456789abcdef'],
    anonymousRole: 'none',
    ...over,
  });
  const validator = (result: Record<string, unknown> | Error): TokenValidator => ({
    verify: async () => {
      if (result instanceof Error) throw result;
      return result;
    },
  });
  const good = validator({ tid: TID, oid: OID, scp: 's', name: 'Ada', roles: ['Jobs.Read'] });

  test('no credentials: 401 with a Bearer challenge, unless ANONYMOUS_ROLE says otherwise', async () => {
    const none = await authenticate({}, config(), good);
    expect(none).toMatchObject({ ok: false, status: 401, challenge: 'Bearer realm="hpc-jobs"' });
    expect(await authenticate({}, config({ anonymousRole: 'reader' }), good)).toEqual({ ok: true, principal: anonymousPrincipal('reader') });
  });

  test('a valid bearer token gives its principal; it decides even when a key is sent too', async () => {
    const out = await authenticate({ authorization: 'Bearer a.b.c', apiKey: 'operator-key-0123456789abcdef' }, config(), good);
    expect(out).toMatchObject({ ok: true, principal: { name: 'Ada', roles: ['reader'], kind: 'user' } });
    const lower = await authenticate({ authorization: 'bearer a.b.c' }, config(), good);
    expect(lower.ok).toBe(true);
  });

  test('refused tokens are 401 invalid_token with the reason; an unreachable issuer is 503', async () => {
    const expired = await authenticate({ authorization: 'Bearer a.b.c' }, config(), validator(new TokenRejectedError('the token has expired')));
    expect(expired).toMatchObject({
      ok: false,
      status: 401,
      challenge: 'Bearer realm="hpc-jobs", error="invalid_token", error_description="the token has expired"',
    });
    const down = await authenticate({ authorization: 'Bearer a.b.c' }, config(), validator(new IssuerUnavailableError('down')));
    expect(down).toMatchObject({ ok: false, status: 503 });
    const noOid = await authenticate({ authorization: 'Bearer a.b.c' }, config(), validator({ tid: TID, scp: 's' }));
    expect(noOid).toMatchObject({ ok: false, status: 401, message: 'the token has no object id (oid)' });
  });

  test('a malformed Authorization header, or bearer tokens not configured: 401', async () => {
    expect(await authenticate({ authorization: 'Basic dXNlcjpwdw==' }, config(), good)).toMatchObject({
      ok: false,
      status: 401,
      challenge: expect.stringContaining('invalid_request'),
    });
    expect(await authenticate({ authorization: 'Bearer a.b.c' }, config({ bearer: undefined }), undefined)).toMatchObject({ ok: false, status: 401 });
  });

  test('an operator key makes the caller the operator (admin); a wrong key is 401, never anonymous', async () => {
    expect(await authenticate({ apiKey: 'operator-key-0123456789abcdef' }, config(), undefined)).toEqual({ ok: true, principal: OPERATOR });
    expect(await authenticate({ apiKey: 'nope' }, config({ anonymousRole: 'admin' }), undefined)).toMatchObject({ ok: false, status: 401 });
  });
});

describe('settings', () => {
  const parse = (env: Record<string, string>) => {
    const problems: string[] = [];
    const config = parseAuthConfig(env, problems);
    return { config, problems };
  };

  test('defaults: no bearer tokens, no operator keys, anonymous none', () => {
    expect(parse({})).toEqual({ config: { bearer: undefined, operatorKeys: [], anonymousRole: 'none' }, problems: [] });
  });

  test('Entra settings: issuer, audiences, the metadata URL derived from the issuer, skew', () => {
    const { config, problems } = parse({
      AUTH_ISSUER: `https://login.microsoftonline.com/${TID}/v2.0`,
      AUTH_AUDIENCES: 'api://hpc-jobs, 0000-client',
      OPERATOR_API_KEYS: 'a'.repeat(30),
      ANONYMOUS_ROLE: 'Reader',
    });
    expect(problems).toEqual([]);
    expect(config).toEqual({
      bearer: {
        issuer: `https://login.microsoftonline.com/${TID}/v2.0`,
        audiences: ['api://hpc-jobs', '0000-client'],
        metadataUrl: `https://login.microsoftonline.com/${TID}/v2.0/.well-known/openid-configuration`,
        clockSkewSeconds: 120,
      },
      operatorKeys: ['a'.repeat(30)],
      anonymousRole: 'reader',
    });
  });

  test('each bad setting is named', () => {
    const { problems } = parse({
      AUTH_ISSUER: 'http://evil.example/t/v2.0',
      ANONYMOUS_ROLE: 'root',
      OPERATOR_API_KEYS: 'short',
      AUTH_CLOCK_SKEW_SECONDS: '9999',
    });
    expect(problems).toEqual([
      'ANONYMOUS_ROLE: must be one of none, reader, submitter, admin, got "root"',
      'OPERATOR_API_KEYS: key 1 is shorter than 24 characters',
      'AUTH_CLOCK_SKEW_SECONDS: must be an integer in [0, 600], got "9999"',
      'AUTH_ISSUER: must be an https URL (http only on a loopback host), got "http://evil.example/t/v2.0"',
      "AUTH_AUDIENCES is required with AUTH_ISSUER (the API's application id URI and/or client id)",
    ]);
    expect(parse({ AUTH_AUDIENCES: 'api://x' }).problems).toEqual(['AUTH_ISSUER is required when AUTH_AUDIENCES or AUTH_METADATA_URL is set']);
  });
});

describe('token validation (jose, RS256)', () => {
  const issuer = 'https://issuer.test/t/v2.0';
  const metadataUrl = `${issuer}/.well-known/openid-configuration`;
  let sign: (
    claims: Record<string, unknown>,
    opts?: { exp?: number; iss?: string; aud?: string; kid?: string; key?: CryptoKey; alg?: string },
  ) => Promise<string>;
  let jwk: JWK;
  let other: CryptoKey;
  let fetches: string[];
  let metadataIssuer = issuer;

  const fakeFetch = (async (input: string | URL | Request) => {
    const url = String(input instanceof Request ? input.url : input);
    fetches.push(url);
    if (url === metadataUrl) return Response.json({ issuer: metadataIssuer, jwks_uri: 'https://issuer.test/t/keys' });
    if (url === 'https://issuer.test/t/keys') return Response.json({ keys: [jwk] });
    return new Response('not found', { status: 404 });
  }) as typeof fetch;

  beforeAll(async () => {
    const pair = await generateKeyPair('RS256');
    other = (await generateKeyPair('RS256')).privateKey;
    jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    sign = async (claims, o = {}) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: o.alg ?? 'RS256', kid: o.kid ?? 'k1' })
        .setIssuer(o.iss ?? issuer)
        .setAudience(o.aud ?? 'api://x')
        .setIssuedAt()
        .setExpirationTime(o.exp ?? Math.floor(Date.now() / 1000) + 600)
        .sign(o.key ?? pair.privateKey);
  });
  beforeEach(() => {
    fetches = [];
    metadataIssuer = issuer;
  });

  const validator = () => createTokenValidator({ issuer, audiences: ['api://x', 'client-id'], metadataUrl, clockSkewSeconds: 60 }, fakeFetch);
  const claims = { tid: TID, oid: OID, scp: 's' };
  const reason = async (v: TokenValidator, token: string) =>
    v.verify(token).then(
      () => 'accepted',
      (e: Error) => `${e.name}: ${e.message}`,
    );

  test('a good token is accepted; metadata and keys are read once', async () => {
    const v = validator();
    expect(await v.verify(await sign(claims))).toMatchObject({ tid: TID, oid: OID });
    expect(await v.verify(await sign(claims, { aud: 'client-id' }))).toMatchObject({ oid: OID });
    expect(fetches).toEqual([metadataUrl, 'https://issuer.test/t/keys']);
  });

  test('expired (beyond the skew), wrong issuer, wrong audience, bad signature, unknown key, missing oid: refused', async () => {
    const v = validator();
    const now = Math.floor(Date.now() / 1000);
    expect(await reason(v, await sign(claims, { exp: now - 30 }))).toBe('accepted'); // within the 60 s skew
    expect(await reason(v, await sign(claims, { exp: now - 300 }))).toBe('TokenRejectedError: the token has expired');
    expect(await reason(v, await sign(claims, { iss: 'https://evil.test/t/v2.0' }))).toBe('TokenRejectedError: the token was issued by another issuer');
    expect(await reason(v, await sign(claims, { aud: 'api://other' }))).toBe('TokenRejectedError: the token is for another audience');
    expect(await reason(v, await sign(claims, { key: other }))).toBe('TokenRejectedError: the token signature does not verify');
    const good = await sign(claims);
    const [h, , s] = good.split('.');
    const forged = Buffer.from(JSON.stringify({ ...claims, roles: ['Jobs.Admin'], iss: issuer, aud: 'api://x', exp: now + 600 })).toString('base64url');
    expect(await reason(v, `${h}.${forged}.${s}`)).toBe('TokenRejectedError: the token signature does not verify');
    expect(await reason(v, await sign({ tid: TID, scp: 's' }))).toMatch(/^TokenRejectedError: the token's oid claim is missing/);
    expect(await reason(v, 'not-a-jwt')).toBe('TokenRejectedError: the token is not a valid JWT');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${forged}.`;
    expect(await reason(v, none)).toMatch(/^TokenRejectedError/);
  });

  test('metadata naming another issuer, or an unreachable issuer: IssuerUnavailableError (503), retried later', async () => {
    metadataIssuer = 'https://evil.test/t/v2.0';
    expect(await reason(validator(), await sign(claims))).toMatch(
      /^IssuerUnavailableError: the OpenID metadata at .* names issuer "https:\/\/evil.test\/t\/v2.0"/,
    );
    const down = createTokenValidator({ issuer, audiences: ['api://x'], metadataUrl: 'https://issuer.test/missing', clockSkewSeconds: 60 }, fakeFetch);
    expect(await reason(down, await sign(claims))).toMatch(/^IssuerUnavailableError: the issuer's OpenID metadata could not be read/);
  });
});
