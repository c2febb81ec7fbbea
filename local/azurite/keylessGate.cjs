/**
 * The keyless storage gate: loaded into Azurite's process (`node --require keylessGate.cjs azurite.js`) when the
 * local stack runs keyless, it stands in front of Azurite's request handling and does what a storage account with
 * shared key access disabled (allowSharedKeyAccess: false, as infra/main.bicep sets) does and Azurite cannot:
 *
 *   - Authorization: SharedKey / SharedKeyLite, and SAS tokens signed with an account key (service and account SAS:
 *     a `sig` without the user delegation key's `skoid`), are refused with 403 KeyBasedAuthenticationNotPermitted,
 *     "Key based authentication is not permitted on this storage account." (Azure's answer). Azurite always accepts
 *     them: its shared key authenticator is registered whatever the options (BlobRequestListenerFactory.js).
 *   - Authorization: Bearer tokens are validated as Azure Storage validates them: signed by the local tenant's key
 *     (Azurite's `--oauth basic` skips signatures, so any self-made token would pass), issued by the tenant
 *     (https://sts.windows.net/<tenant>/; Azurite accepts any tenant of the public clouds' STS), for a storage
 *     audience, within its lifetime. A bad one gets Azure's 401 InvalidAuthenticationInfo with the
 *     AuthenticationErrorDetail and the WWW-Authenticate challenge. Azurite then checks issuer, audience and
 *     lifetime again itself.
 * User delegation SAS (signed with a key from Get User Delegation Key, which needs a token) and anonymous requests
 * go on to Azurite untouched. Role assignments (RBAC) are not emulated: a valid token of the tenant may do anything.
 *
 * Configuration (environment of Azurite's process): HPC_STORAGE_GATE_TENANT (tenant id), HPC_STORAGE_GATE_JWKS
 * (the tenant's JSON Web Key Set). Plain JavaScript: it runs inside Azurite, before any TypeScript tooling.
 */
'use strict';
const https = require('node:https');
const crypto = require('node:crypto');
const { Buffer } = require('node:buffer');
const { URL } = require('node:url');

const tenantId = process.env.HPC_STORAGE_GATE_TENANT;
const jwks = JSON.parse(process.env.HPC_STORAGE_GATE_JWKS || '{"keys":[]}');
if (!tenantId || !Array.isArray(jwks.keys) || jwks.keys.length === 0) {
  throw new Error('keylessGate: HPC_STORAGE_GATE_TENANT and HPC_STORAGE_GATE_JWKS must be set');
}
const ISSUER = `https://sts.windows.net/${tenantId}/`;
const KEYS = new Map(jwks.keys.map((k) => [k.kid, crypto.createPublicKey({ key: k, format: 'jwk' })]));
/**
 * Tokens already verified, with their expiry (ms): a client sends the same token for an hour. Keyed by account and
 * token, as an account's own endpoint is an audience that holds for that account only.
 */
const verified = new Map();
const VERIFIED_MAX = 1000;

const KEY_BASED = {
  status: 403,
  code: 'KeyBasedAuthenticationNotPermitted',
  message: 'Key based authentication is not permitted on this storage account.',
};

function invalidToken(detail) {
  return {
    status: 401,
    code: 'InvalidAuthenticationInfo',
    message: 'Server failed to authenticate the request. Please refer to the information in the www-authenticate header.',
    detail,
    headers: {
      'WWW-Authenticate': `Bearer authorization_uri=https://login.microsoftonline.com/${tenantId}/oauth2/authorize resource_id=https://storage.azure.com`,
    },
  };
}

function decodePart(part) {
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
}

/** The storage audiences Azure accepts: the service's app id URI, or the account's own endpoint. */
function audienceMatches(aud, account) {
  if (aud === 'https://storage.azure.com' || aud === 'https://storage.azure.com/') return true;
  const m = /^https:\/\/([a-z0-9]+)\.(blob|queue|table)\.core\.windows\.net\/?$/.exec(String(aud));
  return m !== null && m[1] === account;
}

/** Why a bearer token is refused, or undefined when it is good. */
function checkToken(token, account, nowMs) {
  const cacheKey = `${account} ${token}`;
  const known = verified.get(cacheKey);
  if (known !== undefined) return known > nowMs ? undefined : 'Lifetime validation failed. The token is expired.';
  const parts = token.split('.');
  if (parts.length !== 3) return 'Signature validation failed. The token is not a signed JWT.';
  let header;
  let claims;
  try {
    header = decodePart(parts[0]);
    claims = decodePart(parts[1]);
  } catch {
    return 'Signature validation failed. The token is not a signed JWT.';
  }
  const key = KEYS.get(header.kid);
  if (header.alg !== 'RS256' || !key) return 'Signature validation failed. The token was not signed by a key of this tenant.';
  const signed = crypto.verify('RSA-SHA256', Buffer.from(`${parts[0]}.${parts[1]}`), key, Buffer.from(parts[2], 'base64url'));
  if (!signed) return 'Signature validation failed. The signature does not match.';
  if (claims.iss !== ISSUER) return 'Issuer validation failed. Issuer did not match.';
  if (!audienceMatches(claims.aud, account)) return 'Audience validation failed. Audience did not match.';
  if (typeof claims.exp !== 'number' || typeof claims.nbf !== 'number') return 'Lifetime validation failed. The token has no lifetime.';
  if (nowMs < claims.nbf * 1000) return 'Lifetime validation failed. The token is not yet valid.';
  if (nowMs >= claims.exp * 1000) return 'Lifetime validation failed. The token is expired.';
  if (verified.size >= VERIFIED_MAX) verified.clear();
  verified.set(cacheKey, claims.exp * 1000);
  return undefined;
}

/** What the gate answers instead of Azurite, or undefined to let the request through. */
function refusal(req) {
  const url = new URL(req.url || '/', 'https://gate.invalid');
  const auth = String(req.headers.authorization || '');
  if (/^SharedKey(Lite)?\s/i.test(auth)) return KEY_BASED;
  if (url.searchParams.has('sig') && !url.searchParams.has('skoid')) return KEY_BASED;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(auth);
  if (bearer) {
    const account = url.pathname.split('/').filter(Boolean)[0] || '';
    const why = checkToken(bearer[1], account, Date.now());
    if (why) return invalidToken(why);
  }
  return undefined;
}

function xmlEscape(text) {
  return text.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]);
}

/** Azure's error body: JSON (odata) for the Table service's JSON requests, XML otherwise. */
function answer(req, res, r) {
  req.resume();
  const requestId = crypto.randomUUID();
  const message = `${r.message}\nRequestId:${requestId}\nTime:${new Date().toISOString()}`;
  const json = /json/i.test(String(req.headers.accept || ''));
  const body = json
    ? JSON.stringify({ 'odata.error': { code: r.code, message: { lang: 'en-US', value: message } } })
    : `<?xml version="1.0" encoding="utf-8"?><Error><Code>${r.code}</Code><Message>${xmlEscape(message)}</Message>` +
      (r.detail ? `<AuthenticationErrorDetail>${xmlEscape(r.detail)}</AuthenticationErrorDetail>` : '') +
      '</Error>';
  res.writeHead(r.status, r.message, {
    'Content-Type': json ? 'application/json;odata=minimalmetadata;streaming=true;charset=utf-8' : 'application/xml',
    'Content-Length': Buffer.byteLength(body),
    'x-ms-request-id': requestId,
    'x-ms-error-code': r.code,
    ...(req.headers['x-ms-version'] ? { 'x-ms-version': String(req.headers['x-ms-version']) } : {}),
    ...(r.headers || {}),
  });
  res.end(body);
}

const createServer = https.createServer;
https.createServer = function gatedCreateServer(...args) {
  const server = createServer.apply(this, args);
  const emit = server.emit;
  server.emit = function gatedEmit(event, req, res) {
    if (event === 'request') {
      let r;
      try {
        r = refusal(req);
      } catch (err) {
        r = invalidToken(`The request could not be authenticated: ${err.message}`);
      }
      if (r) {
        answer(req, res, r);
        return true;
      }
    }
    return emit.apply(this, arguments);
  };
  return server;
};
