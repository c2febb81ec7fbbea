/**
 * The node-side secret fetch (shared/core/mpi/secretFetch.ts) run by real bash and curl against the local identity
 * service's IMDS and the local Key Vault (local/keyvault): the value arrives in the exported variable only; an
 * identity without the role, a missing secret, a wrong version each stop the script naming the field and Key
 * Vault's error code; the Key Vault stand-in answers Key Vault's errors (401 challenge, 400 api-version, 501).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { startIdentityService, createEntraTokenVerifier, type IdentityService } from '../../local/identity';
import { APP_IDENTITY, POOL_IDENTITY } from '../../local/identity/managedIdentities';
import { secretVersion, seedWithReaders, startKeyVault, type KeyVaultHandle } from '../../local/keyvault';
import { secretFetchLines, type SecretFetch } from '../../shared/core/mpi/secretFetch';
import { GLUE_STRICT } from '../../shared/core/mpi/userShell';

let identity: IdentityService;
let vault: KeyVaultHandle;
const canary = `canary-${randomBytes(12).toString('hex')}`;
const tricky = 'a "quoted" value with \\ backslash, $dollar and `ticks`';

beforeAll(async () => {
  identity = await startIdentityService();
  vault = await startKeyVault({
    seed: seedWithReaders({ labvault: { secrets: { podkey: canary, tricky } } }, [POOL_IDENTITY.principalId]),
    verify: createEntraTokenVerifier({ jwks: () => identity.jwks(), tenantId: identity.tenantId }),
    tenantId: identity.tenantId,
    authority: identity.authorityHost,
  });
});
afterAll(async () => {
  await vault?.stop();
  await identity?.stop();
});

/** Runs the fetch lines then `after` in strict bash on a "node" carrying `carrier`'s identity (async: the servers are in this process). */
async function runOnNode(fetches: SecretFetch[], after: string, carrier = POOL_IDENTITY): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const imds = identity.openImds([carrier.resourceId]);
  try {
    const script = [GLUE_STRICT, ...secretFetchLines(fetches), after].join('; ');
    const child = spawn('/bin/bash', ['-c', script], {
      // stdin not a socket: bash would read ~/.bashrc as for a remote shell.
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH,
        AZURE_POD_IDENTITY_AUTHORITY_HOST: imds.endpoint,
        MPIJOB_KEYVAULT_CLIENT_ID: carrier.clientId,
        MPIJOB_KEYVAULT_URL_TEMPLATE: vault.urlTemplate,
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const status = await new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    return { status, stdout, stderr };
  } finally {
    imds.close();
  }
}

const ref = (patch: Partial<SecretFetch> = {}): SecretFetch => ({ env: 'PODKEY', vault: 'labvault', name: 'podkey', from: 'mpi.env.PODKEY', ...patch });

describe('the node reads a referenced secret with the pool identity', () => {
  it('exports the value into the variable, and nowhere else', async () => {
    const r = await runOnNode(
      [ref(), ref({ env: 'TRICKY', name: 'tricky', from: 'mpi.env.TRICKY' })],
      'printf "%s\\n%s" "$PODKEY" "$TRICKY"; if [ -n "${mpijob_kv_token:-}" ]; then echo token-left >&2; fi',
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`${canary}\n${tricky}`);
  });

  it('reads a pinned version', async () => {
    const r = await runOnNode([ref({ version: secretVersion('labvault', 'podkey', canary) })], 'printf "%s" "$PODKEY"');
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(canary);
  });

  it('stops with the field and SecretNotFound for a missing secret or version', async () => {
    const missing = await runOnNode([ref({ name: 'nothere', from: 'mpi.env.PODKEY' })], 'echo ran');
    expect(missing.status).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toMatch(/mpi\.env\.PODKEY: Key Vault labvault answered HTTP 404 for secret nothere: SecretNotFound/);
    const version = await runOnNode([ref({ version: '0'.repeat(32) })], 'echo ran');
    expect(version.status).toBe(1);
    expect(version.stderr).toMatch(/HTTP 404 .*SecretNotFound/);
  });

  it('stops with 403 ForbiddenByRbac for an identity without the role on the vault', async () => {
    const r = await runOnNode([ref({ from: 'licenses[0].secretRef' })], 'echo ran', APP_IDENTITY);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/licenses\[0\]\.secretRef: Key Vault labvault answered HTTP 403 for secret podkey: Forbidden/);
    expect(r.stderr).not.toContain(canary);
  });

  it('stops when the node has no identity for Key Vault', async () => {
    const r = await runOnNode([ref()], 'echo ran', { ...POOL_IDENTITY, clientId: '00000000-0000-0000-0000-000000000001' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/no Key Vault token for the pool identity/);
  });

  it("puts no token or value in any process argument (the bearer goes through curl's config on stdin)", () => {
    const script = secretFetchLines([ref()]).join('; ');
    expect(script).toContain('-K -');
    expect(script).not.toMatch(/-H ["']?Authorization/);
    expect(script).toMatch(/export PODKEY="\$mpijob_kv_value"/);
  });
});

describe('the local Key Vault answers as Key Vault does', () => {
  const get = (path: string, init: RequestInit = {}) => fetch(`${vault.url}${path}`, init);

  it('401 with the Bearer challenge without a token; 401 for another audience', async () => {
    const r = await get('/labvault/secrets/podkey?api-version=7.4');
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toMatch(/^Bearer authorization=".*", resource="https:\/\/vault\.azure\.net"$/);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('Unauthorized');
    const storageToken = await identity.resourceToken('https://storage.azure.com/', { identity: POOL_IDENTITY });
    const wrong = await get('/labvault/secrets/podkey?api-version=7.4', { headers: { authorization: `Bearer ${storageToken}` } });
    expect(wrong.status).toBe(401);
    expect(JSON.stringify(await wrong.json())).toContain('AKV10022');
  });

  it("200 with Key Vault's shape for the pool identity; 400 without api-version; 501 for other operations", async () => {
    const token = await identity.resourceToken('https://vault.azure.net', { identity: POOL_IDENTITY });
    const auth = { authorization: `Bearer ${token}` };
    const ok = await get('/labvault/secrets/podkey?api-version=7.4', { headers: auth });
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { value: string; id: string; attributes: { enabled: boolean } };
    expect(body.value).toBe(canary);
    expect(body.id).toBe(`${vault.url}/labvault/secrets/podkey/${secretVersion('labvault', 'podkey', canary)}`);
    expect(body.attributes.enabled).toBe(true);
    expect((await get('/labvault/secrets/podkey', { headers: auth })).status).toBe(400);
    expect((await get('/labvault/secrets/podkey?api-version=7.4', { method: 'PUT', headers: auth, body: '{}' })).status).toBe(501);
    expect((await get('/labvault/keys/k?api-version=7.4', { headers: auth })).status).toBe(501);
    expect((await get('/nosuchvault/secrets/podkey?api-version=7.4', { headers: auth })).status).toBe(404);
  });
});
