/**
 * The service's one signing key (RS256, 2048-bit RSA, made at start) and the tokens it signs. The public half is
 * the JWKS the API validates against; tokens die with the service, as when Entra rolls a key.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';

export interface SigningKey {
  kid: string;
  /** The public key as a JWK (with kid, use, alg). */
  publicJwk: JWK;
  /** Signs `claims` (iat, nbf, exp and uti are added; `lifetimeSeconds` may be negative for an expired token). */
  sign(claims: Record<string, unknown>, lifetimeSeconds: number): Promise<{ token: string; expiresOn: number }>;
}

export async function createSigningKey(): Promise<SigningKey> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
  const jwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(jwk);
  return {
    kid,
    publicJwk: { ...jwk, kid, use: 'sig', alg: 'RS256' },
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
