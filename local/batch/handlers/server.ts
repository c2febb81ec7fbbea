import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { verifySharedKey } from '../auth/sharedKey';
import { dataRoleAllows, verifyBearer, type BatchAadOptions } from '../auth/bearer';
import type { ExchangeRecord } from '../config';
import type { FaultState } from '../faults/faultConfig';
import { BatchHttpError, batchErrorBody } from './errors';
import type { HandlerResponse, RequestContext, Services } from './http';
import { checkApiVersion, checkBody, checkQuery, notImplemented, specValidator } from './requestChecks';
import { route } from './router';

export interface ServerConfig {
  accountName: string;
  accountKey: string;
  /**
   * The account's allowedAuthenticationModes: shared key (default on) and Microsoft Entra ID (when `aad` names the
   * tenant; without a tenant a bearer token answers 501, as the emulator cannot check it).
   */
  auth?: { sharedKey: boolean; aad?: BatchAadOptions };
  faults: FaultState;
  services: Services;
  baseUrl: () => string;
  onExchange?: (ex: ExchangeRecord) => void;
  /**
   * Called once the handler has answered and before the answer is written: a persisted emulator saves its state here
   * after a change it accepted, so an acknowledged write survives a SIGKILL of the emulator as it does in Batch.
   */
  beforeAnswer?: (method: string, status: number) => void;
}

const JSON_TYPE = 'application/json;odata=minimalmetadata';

/** Decodes a query string the way the SDK's signer reads it (url-parse/querystringify). */
function parseQuery(raw: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!raw) return out;
  for (const part of raw.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    const k = decode(eq < 0 ? part : part.slice(0, eq));
    const v = eq < 0 ? '' : decode(part.slice(eq + 1));
    if (k !== null && v !== null && !(k in out)) out[k] = v;
  }
  return out;
}

function decode(s: string): string | null {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

/** Decoded path segments; a broken %-escape is Batch's RequestUrlFailedToParse, not an emulator crash. */
function pathSegments(rawPath: string): string[] {
  try {
    return rawPath
      .split('/')
      .filter(Boolean)
      .map((s) => decodeURIComponent(s));
  } catch {
    throw new BatchHttpError(400, 'RequestUrlFailedToParse', 'The url in the request could not be parsed.');
  }
}

function flatHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(',') : v;
  return out;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function createBatchServer(cfg: ServerConfig): http.Server {
  return http.createServer((req, res) => {
    handle(cfg, req, res).catch((e: Error) => {
      // Never leave a request hanging, even on an emulator bug.
      if (res.writableEnded) return;
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': JSON_TYPE });
      res.end(JSON.stringify({ code: 'InternalError', message: { lang: 'en-US', value: e.message } }));
    });
  });
}

/**
 * Authentication as Batch checks it. Shared key: 403 AuthenticationFailed, 400 for a malformed header, and 403 when
 * the account does not allow shared keys ("The specified type of authentication SharedKey is not allowed for this
 * account.", Batch's detail). Microsoft Entra ID: 401 AuthenticationFailed with the reason (auth/bearer.ts); 501
 * when the emulator was given no tenant to check tokens against.
 */
async function authenticate(cfg: ServerConfig, req: Parameters<typeof verifySharedKey>[0]): Promise<void> {
  const header = String(req.headers.authorization ?? '');
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
  const aad = cfg.auth?.aad;
  if (bearer && aad) {
    const result = await verifyBearer(bearer[1], aad);
    if (result.ok) {
      if (!aad.roles || dataRoleAllows(aad.roles, result.oid, String(req.method ?? 'GET').toUpperCase())) return;
      // An authenticated principal without a data role that allows the operation: 403, as Batch answers an
      // Entra caller whose role assignments on the account do not grant the action.
      throw new BatchHttpError(403, 'AuthorizationFailure', 'This request is not authorized to perform this operation.', [
        {
          key: 'AuthorizationErrorDetail',
          value: `The principal '${result.oid ?? '(no oid)'}' holds no Batch data role on this account that allows ${String(req.method ?? 'GET').toUpperCase()} requests (Azure Batch Data Contributor for changes, a reader role for reads).`,
        },
      ]);
    }
    throw new BatchHttpError(
      401,
      'AuthenticationFailed',
      'Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly.',
      [{ key: 'AuthenticationErrorDetail', value: result.reason }],
    );
  }
  if (/^SharedKey\s/i.test(header) && cfg.auth?.sharedKey === false) {
    throw new BatchHttpError(
      403,
      'AuthenticationFailed',
      'Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.',
      [{ key: 'AuthenticationErrorDetail', value: 'The specified type of authentication SharedKey is not allowed for this account.' }],
    );
  }
  const auth = verifySharedKey(req, cfg.accountName, cfg.accountKey);
  if (auth.ok) return;
  const detail = [{ key: 'AuthenticationErrorDetail', value: auth.reason }];
  if (auth.kind === 'malformed') {
    throw new BatchHttpError(
      400,
      'InvalidAuthenticationInfo',
      'The authentication information was not provided in the correct format. Verify the value of Authorization header.',
      detail,
    );
  }
  if (auth.kind === 'unsupported') throw new BatchHttpError(501, 'NotImplemented', auth.reason, detail);
  throw new BatchHttpError(
    403,
    'AuthenticationFailed',
    'Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.',
    detail,
  );
}

async function handle(cfg: ServerConfig, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const method = (req.method ?? 'GET').toUpperCase();
  const rawUrl = req.url ?? '/';
  const qi = rawUrl.indexOf('?');
  const rawPath = qi < 0 ? rawUrl : rawUrl.slice(0, qi);
  const query = parseQuery(qi < 0 ? '' : rawUrl.slice(qi + 1));
  const headers = flatHeaders(req);
  const rawBody = await readBody(req);
  const requestId = randomUUID();
  const baseUrl = cfg.baseUrl();
  let requestBody: unknown = undefined;
  let result: HandlerResponse;
  try {
    await authenticate(cfg, { method, rawPath, query, headers });
    const throttle = cfg.faults.throttleDecision();
    if (throttle?.status === 429) {
      throw new BatchHttpError(429, 'TooManyRequests', 'The account is being throttled (injected fault). Retry after the interval in Retry-After.', [], {
        'Retry-After': String(throttle.retryAfterSeconds),
      });
    }
    if (throttle?.status === 503)
      throw new BatchHttpError(503, 'ServerBusy', 'The server is currently unable to receive requests (injected fault). Please retry your request.');
    checkApiVersion(query);
    if (rawBody.length) {
      try {
        requestBody = JSON.parse(rawBody);
      } catch {
        throw new BatchHttpError(400, 'InvalidRequestBody', 'The specified Request Body is not syntactically valid.');
      }
    }
    const segments = pathSegments(rawPath);
    const m = route(method, segments);
    const op = specValidator().describeOperation(method, rawPath);
    if (!m || 'methodNotAllowed' in m) {
      if (op) throw notImplemented(op);
      if (m) throw new BatchHttpError(405, 'UnsupportedHttpVerb', `The resource doesn't support the specified HTTP verb ${method}.`);
      throw new BatchHttpError(400, 'InvalidUri', `The requested URI does not represent any resource on the server: ${rawPath}`);
    }
    // Every emulated route is a spec operation (the route table is checked against the spec in the unit tests).
    if (!op) throw new Error(`emulator route ${method} ${rawPath} matches no operation of the spec`);
    checkQuery(op, query);
    checkBody(op, requestBody);
    const ctx: RequestContext = {
      method,
      segments,
      query,
      headers,
      body: requestBody,
      bodyBytes: Buffer.byteLength(rawBody),
      baseUrl,
      operationId: op.operationId,
    };
    result = await m.handler(ctx, m.params, cfg.services);
  } catch (e) {
    if (!(e instanceof BatchHttpError)) throw e;
    result =
      e.status === 304
        ? { status: 304 }
        : { status: e.status, body: method === 'HEAD' ? undefined : batchErrorBody(baseUrl, e, requestId), headers: e.headers };
  }
  cfg.beforeAnswer?.(method, result.status);
  const outHeaders: Record<string, string> = { 'request-id': requestId, DataServiceVersion: '3.0', ...(result.headers ?? {}) };
  if (headers['client-request-id']) outHeaders['client-request-id'] = headers['client-request-id'];
  let sentHeaders: Record<string, string>;
  if (result.stream !== undefined) {
    sentHeaders = outHeaders;
    res.writeHead(result.status, outHeaders);
    if (Buffer.isBuffer(result.stream)) res.end(method === 'HEAD' ? undefined : result.stream);
    else {
      // A node's file can vanish between the handler's stat and the stream's open (its pool deleted meanwhile): the
      // stream's error then ends this response instead of escaping as an uncaught exception. HEAD reads nothing.
      const stream = result.stream as Readable;
      stream.on('error', () => res.destroy());
      if (method === 'HEAD') {
        stream.destroy();
        res.end();
      } else stream.pipe(res);
    }
  } else if (result.body !== undefined) {
    const text = JSON.stringify(result.body);
    sentHeaders = { ...outHeaders, 'Content-Type': JSON_TYPE, 'Content-Length': String(Buffer.byteLength(text)) };
    res.writeHead(result.status, sentHeaders);
    res.end(text);
  } else {
    sentHeaders = { 'Content-Length': outHeaders['Content-Length'] ?? '0', ...outHeaders };
    res.writeHead(result.status, sentHeaders);
    res.end();
  }
  cfg.onExchange?.({
    method,
    path: rawPath,
    query,
    headers,
    // Requests refused before their body was read (auth, injected throttling) still carried one.
    requestBody: requestBody ?? parseForRecord(rawBody),
    status: result.status,
    responseBody: result.stream !== undefined ? undefined : result.body,
    responseHeaders: Object.fromEntries(Object.entries(sentHeaders).map(([k, v]) => [k.toLowerCase(), v])),
  });
}

function parseForRecord(rawBody: string): unknown {
  if (!rawBody.length) return undefined;
  try {
    return JSON.parse(rawBody);
  } catch {
    return rawBody;
  }
}
