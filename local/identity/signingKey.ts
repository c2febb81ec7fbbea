/**
 * The service's one signing key (RS256, 2048-bit RSA) and the tokens it signs. The public half is the JWKS the API
 * validates against. With a data folder the key is kept there (signing-key.json, the private JWK, mode 0600) and
 * reused at the next start, so tokens a user saved (the CLI's sign-in) stay valid across a restart of the stack, as
 * Entra's keys outlive a restart of the app. Without one it is new at every start and tokens die with the service.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';

export interface SigningKey {
  kid: string;
  /** The public key as a JWK (with kid, use, alg). */
  publicJwk: JWK;
  /** Signs `claims` (iat, nbf, exp and uti are added; `lifetimeSeconds` may be negative for an expired token). */
  sign(claims: Record<string, unknown>, lifetimeSeconds: number): Promise<{ token: string; expiresOn: number }>;
}

/** The file a kept key lives in, inside the identity service's data folder. */
export function signingKeyFile(dir: string): string {
  return path.join(dir, 'signing-key.json');
}

/** A new key, or with `dir` the one kept there (made and kept on the first start). */
export async function createSigningKey(dir?: string): Promise<SigningKey> {
  if (dir) {
    const file = signingKeyFile(dir);
    if (existsSync(file)) return fromPrivateJwk(readKeptJwk(file));
    const { privateKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
    const jwk = await exportJWK(privateKey);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    // Written whole then renamed: a start killed halfway leaves no half key for the next one to choke on.
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(jwk) + '\n', { mode: 0o600 });
    renameSync(tmp, file);
    return fromPrivateJwk(jwk);
  }
  const { publicKey, privateKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
  return withKeys(privateKey, await exportJWK(publicKey));
}

function readKeptJwk(file: string): JWK {
  let jwk: JWK;
  try {
    jwk = JSON.parse(readFileSync(file, 'utf8')) as JWK;
  } catch (err) {
    throw new Error(`cannot read the local issuer's signing key ${file}: ${(err as Error).message} (delete it to make a new key; saved sign-ins then end)`);
  }
  if (jwk?.kty !== 'RSA' || typeof jwk.n !== 'string' || typeof jwk.e !== 'string' || typeof jwk.d !== 'string') {
    throw new Error(`${file} is not an RSA private key in JWK form (delete it to make a new key; saved sign-ins then end)`);
  }
  return jwk;
}

async function fromPrivateJwk(jwk: JWK): Promise<SigningKey> {
  const privateKey = (await importJWK(jwk, 'RS256')) as CryptoKey;
  return withKeys(privateKey, { kty: 'RSA', n: jwk.n, e: jwk.e });
}

async function withKeys(privateKey: CryptoKey, publicJwk: JWK): Promise<SigningKey> {
  const kid = await calculateJwkThumbprint(publicJwk);
  return {
    kid,
    publicJwk: { ...publicJwk, kid, use: 'sig', alg: 'RS256' },
    async sign(claims, lifetimeSeconds) {
      const now = Math.floor(Date.now() / 1000);
      const exp = now + lifetimeSeconds;
      // An expired token was valid once: its iat/nbf lie before its exp.
      const iat = Math.min(now, exp - 60);
      const token = await new SignJWT({ ...claims, uti: randomUUID().replace(/-/g, '') })
        .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid })
        .setIssuedAt(iat)
        .setNotBefore(iat)
        .setExpirationTime(exp)
        .sign(privateKey);
      return { token, expiresOn: exp };
    },
  };
}
