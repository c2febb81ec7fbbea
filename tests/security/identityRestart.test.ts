/**
 * The local identity service keeps its signing key and its ports in its data folder (issue 28, item 7): a token
 * signed before a restart (the CLI's saved sign-in) still validates after it, with the app's own validator reading
 * the restarted service's metadata and keys. Without a data folder the key is new at every start, as before.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startIdentityService, type IdentityService } from '../../local/identity';
import { signingKeyFile } from '../../local/identity/signingKey';
import { createTokenValidator } from '../../shared/adapters/auth';

const validatorFor = (id: Pick<IdentityService, 'issuer' | 'audiences' | 'metadataUrl'>) =>
  createTokenValidator({ issuer: id.issuer, audiences: id.audiences, metadataUrl: id.metadataUrl, clockSkewSeconds: 60 });
const portOf = (url: string) => Number(new URL(url).port);

describe('the identity service across a restart', () => {
  let dir: string;
  let running: IdentityService | undefined;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'identity-restart-'));
  });
  afterEach(async () => {
    await running?.stop();
    running = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps its signing key in the data folder: a token from before the restart still validates', async () => {
    running = await startIdentityService({ dataDir: dir });
    const before = { issuer: running.issuer, audiences: running.audiences, metadataUrl: running.metadataUrl, jwks: running.jwks() };
    const token = await running.userToken('dev');
    const ports = { httpsPort: portOf(running.authorityHost), httpPort: portOf(running.httpUrl) };
    await running.stop();
    running = undefined;
    // Only the owner reads the private key.
    expect(statSync(signingKeyFile(dir)).mode & 0o077).toBe(0);

    running = await startIdentityService({ dataDir: dir, ...ports });
    expect(running.issuer).toBe(before.issuer);
    expect(running.jwks()).toEqual(before.jwks);
    const served = await (await fetch(`${running.httpUrl}/${running.tenantId}/discovery/v2.0/keys`)).json();
    expect(served).toEqual(before.jwks);
    const claims = await validatorFor(running).verify(token);
    expect(claims.preferred_username ?? claims.upn ?? claims.oid).toBeDefined();
  }, 60_000);

  it('without a data folder makes a new key at every start, and old tokens are refused', async () => {
    const first = await startIdentityService();
    const token = await first.userToken('dev');
    const ports = { httpsPort: portOf(first.authorityHost), httpPort: portOf(first.httpUrl) };
    const jwks = first.jwks();
    await first.stop();
    running = await startIdentityService(ports);
    expect(running.jwks()).not.toEqual(jwks);
    await expect(validatorFor(running).verify(token)).rejects.toThrow('the token is not signed by a key of the issuer');
  }, 60_000);

  it('refuses a kept key file that is not an RSA private key, naming the file', async () => {
    writeFileSync(signingKeyFile(dir), JSON.stringify({ kty: 'RSA', n: 'x', e: 'AQAB' }));
    await expect(startIdentityService({ dataDir: dir })).rejects.toThrow(`${signingKeyFile(dir)} is not an RSA private key`);
  }, 60_000);
});
