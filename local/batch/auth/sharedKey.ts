import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Batch shared-key verification. The string to sign is the one `@azure/batch`'s
 * BatchSharedKeyCredentials builds: verb, eleven standard headers, the `ocp-*` headers sorted,
 * then `/account/path` and each query parameter (decoded, sorted by name) on its own line.
 */
export interface SignedRequest {
  method: string;
  /** Raw (still percent-encoded) path, as it appears on the request line. */
  rawPath: string;
  /** Query parameters, decoded. */
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * `malformed`: the Authorization header is not `SharedKey account:signature` (Batch: 400 InvalidAuthenticationInfo);
 * `failed`: missing, wrong account or key, or a date outside the window (Batch: 403 AuthenticationFailed);
 * `unsupported`: a Microsoft Entra ID bearer token, when the emulator was given no tenant to check it against
 * (with one, ../handlers/server.ts checks it with ./bearer.ts before coming here).
 */
export type AuthResult = { ok: true } | { ok: false; kind: 'malformed' | 'failed' | 'unsupported'; reason: string };

/** Batch must receive a request within 15 minutes of the time in its ocp-date (or Date) header. */
export const CLOCK_SKEW_MS = 15 * 60_000;

const STANDARD_HEADERS = [
  'content-encoding',
  'content-language',
  'content-length',
  'content-md5',
  'content-type',
  'date',
  'if-modified-since',
  'if-match',
  'if-none-match',
  'if-unmodified-since',
  'range',
];

function headerValue(headers: SignedRequest['headers'], name: string): string {
  const v = headers[name];
  return Array.isArray(v) ? v.join(',') : (v ?? '');
}

export function stringToSign(req: SignedRequest, accountName: string, contentLength: string): string {
  let s = req.method.toUpperCase() + '\n';
  for (const h of STANDARD_HEADERS) s += (h === 'content-length' ? contentLength : headerValue(req.headers, h)) + '\n';
  const ocp = Object.keys(req.headers)
    .map((h) => h.toLowerCase())
    .filter((h) => h.startsWith('ocp-'))
    .sort();
  for (const h of ocp) {
    const v = headerValue(req.headers, h);
    if (v) s += `${h}:${v}\n`;
  }
  s += `/${accountName}${req.rawPath || '/'}`;
  for (const name of Object.keys(req.query).sort()) s += `\n${name}:${req.query[name]}`;
  return s;
}

export function sign(text: string, accountKeyBase64: string): string {
  return createHmac('sha256', Buffer.from(accountKeyBase64, 'base64')).update(text, 'utf8').digest('base64');
}

/**
 * The SDK signs Content-Length as the body's byte length, "0" for a body-less POST and "" otherwise,
 * while the HTTP client may or may not send a `Content-Length: 0` header. Both spellings of an empty
 * length are therefore accepted; everything else must match exactly.
 */
export function verifySharedKey(req: SignedRequest, accountName: string, accountKey: string, nowMs: number = Date.now()): AuthResult {
  const auth = headerValue(req.headers, 'authorization');
  if (!auth) return { ok: false, kind: 'failed', reason: 'The Authorization header is missing.' };
  if (/^Bearer\s/i.test(auth)) {
    return {
      ok: false,
      kind: 'unsupported',
      reason:
        'Microsoft Entra ID (Bearer token) authentication needs a tenant: this emulator was started without one (BatchEmulatorOptions.aad); use SharedKey.',
    };
  }
  const m = /^SharedKey ([^:]+):(.+)$/.exec(auth.trim());
  if (!m) return { ok: false, kind: 'malformed', reason: 'The Authorization header is not in the form SharedKey account:signature.' };
  if (m[1] !== accountName) return { ok: false, kind: 'failed', reason: `The account ${m[1]} does not exist on this emulator (it serves ${accountName}).` };
  // ocp-date wins over Date when both are given, as on Batch.
  const date = headerValue(req.headers, 'ocp-date') || headerValue(req.headers, 'date');
  if (!date) return { ok: false, kind: 'failed', reason: 'Neither ocp-date nor Date is set.' };
  const at = Date.parse(date);
  if (Number.isNaN(at)) return { ok: false, kind: 'failed', reason: `The request date ${date} is not an RFC 1123 date.` };
  if (Math.abs(nowMs - at) > CLOCK_SKEW_MS) {
    return { ok: false, kind: 'failed', reason: `The request date ${date} is more than 15 minutes from the server time ${new Date(nowMs).toUTCString()}.` };
  }
  const given = Buffer.from(m[2], 'base64');
  const len = headerValue(req.headers, 'content-length');
  const candidates = len === '' || len === '0' ? ['', '0'] : [len];
  for (const c of candidates) {
    const expected = Buffer.from(sign(stringToSign(req, accountName, c), accountKey), 'base64');
    if (expected.length === given.length && timingSafeEqual(expected, given)) return { ok: true };
  }
  return { ok: false, kind: 'failed', reason: 'The MAC signature found in the HTTP request is not the same as any computed signature.' };
}
