/**
 * The host's HTTP listener: checks the system key of extension webhooks (/runtime/webhooks/<name>/...),
 * offers each request to the extensions, then routes it to an HTTP-triggered function (404 / 405 / 401 as
 * the host answers), converts it to the worker's RpcHttpData, invokes the function and writes the
 * RpcHttpData response back.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { HostExtension, InvocationRequest, InvocationResult, TypedData } from '../extension';
import type { IngressGauge } from '../ingress';
import { isAuthorized, isWebhookAuthorized, presentedKey, type HostKeys } from '../keys';
import type { RouteTable } from './routeTable';
import { HOST_NOT_RUNNING, HOST_READY_TIMEOUT_MS, type HostReadiness } from './readiness';

const MAX_BODY_BYTES = 100 * 1024 * 1024; // the real host's request size limit

export interface HttpListenerOptions {
  host: string;
  port: number;
  routes: () => RouteTable;
  keys: HostKeys;
  extensions: readonly HostExtension[];
  invoke(functionName: string, request: InvocationRequest): Promise<InvocationResult>;
  log: Logger;
  /** Counts each request from its arrival to its answer (./ingress.ts). */
  ingress?: IngressGauge;
  /** Holds requests until the host is running, then lets them on (./readiness.ts); without it every request goes on. */
  readiness?: HostReadiness;
  /** How long a request waits for the host to be running before its 503; default 30 s as in Azure. */
  readyTimeoutMs?: number;
}

export interface HttpListener {
  port: number;
  baseUrl: string;
  close(): Promise<void>;
}

/** How long stop() lets requests in progress finish before cutting their connections. */
const DRAIN_MS = 10_000;

/** Extension webhooks: the host authorizes them with the extension's system key (or the master key). */
const WEBHOOK = /^\/runtime\/webhooks\/([^/]+)(?:\/|$)/i;

export async function startHttpListener(opts: HttpListenerOptions): Promise<HttpListener> {
  const active = new Set<Promise<void>>();
  const server = http.createServer((req, res) => {
    const served = (): Promise<void> => handle(req, res, opts, baseUrl);
    const p = (opts.ingress ? opts.ingress.track(served) : served())
      .catch((err: Error) => {
        opts.log.error({ err, url: req.url }, 'HTTP request failed inside the host');
        if (!res.headersSent) res.writeHead(500);
        res.end();
      })
      .finally(() => active.delete(p));
    active.add(p);
  });
  // Longer than any client keeps an idle socket (Node's agent: 5 s), so a client never reuses a socket the server
  // is closing at that moment (ECONNRESET under load). Shutdown closes idle sockets itself.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(`Cannot listen on ${opts.host}:${opts.port}: ${err.code ?? err.message}`, { cause: err })),
    );
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const baseUrl = `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}`;
  return {
    port,
    baseUrl,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all([...active]), new Promise((r) => (timer = setTimeout(r, DRAIN_MS)))]);
      clearTimeout(timer);
      server.closeAllConnections();
      await closed;
    },
  };
}

async function handle(req: http.IncomingMessage, res: http.ServerResponse, opts: HttpListenerOptions, baseUrl: string): Promise<void> {
  const { readiness } = opts;
  if (readiness && !readiness.isReady() && !(await readiness.waitUntilReady(opts.readyTimeoutMs ?? HOST_READY_TIMEOUT_MS))) {
    // As the real host answers when it is not running after the wait: 503 and one sentence, before any routing.
    req.resume();
    sendText(res, 503, HOST_NOT_RUNNING);
    return;
  }
  const url = new URL(req.url ?? '/', baseUrl);
  const hook = WEBHOOK.exec(url.pathname);
  if (hook && !isWebhookAuthorized(safeDecode(hook[1]), presentedKey(req, url), opts.keys)) {
    // As the host's SystemKeyAuthLevel policy answers: 401, no body, before the extension sees the request.
    req.resume();
    sendText(res, 401, '');
    return;
  }
  for (const ext of opts.extensions) {
    if (ext.handleHttp && (await ext.handleHttp(req, res, url))) return;
  }
  const method = (req.method ?? 'GET').toUpperCase();
  if (url.pathname === '/' && (method === 'GET' || method === 'HEAD')) {
    // The real host's landing page; handy as a liveness probe.
    sendText(res, 200, 'Your Functions 4.0 app is up and running (local host)\n');
    return;
  }
  const resolution = opts.routes().resolve(url.pathname, method);
  if (resolution.kind === 'notFound') {
    sendText(res, 404, '');
    return;
  }
  if (resolution.kind === 'methodNotAllowed') {
    res.setHeader('Allow', resolution.allowed.join(', '));
    sendText(res, 405, '');
    return;
  }
  const { route, params } = resolution;
  if (!isAuthorized(route.authLevel, presentedKey(req, url), opts.keys)) {
    sendText(res, 401, '');
    return;
  }

  const body = await readBody(req);
  if (body === undefined) {
    sendText(res, 413, '');
    return;
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
  const query: Record<string, string> = {};
  for (const key of new Set(url.searchParams.keys())) query[key] = url.searchParams.getAll(key).join(',');

  const result = await opts.invoke(route.fn.name, {
    inputData: [
      {
        name: route.fn.trigger.name,
        data: { http: { method, url: url.toString(), headers, query, params, body: { bytes: body } } },
      },
    ],
    triggerMetadata: {},
    requestUrl: url.toString(),
  });
  if (result.error) {
    sendText(res, 500, '');
    return;
  }
  writeResponse(res, result.returnValue);
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function readBody(req: http.IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooBig = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) tooBig = true;
      else chunks.push(c);
    });
    req.on('end', () => resolve(tooBig ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

interface RpcHttpResponse {
  statusCode?: string;
  headers?: Record<string, string>;
  cookies?: RpcCookie[];
  body?: TypedData;
}
interface RpcCookie {
  name?: string;
  value?: string;
  domain?: { value?: string };
  path?: { value?: string };
  expires?: { value?: { seconds?: number } };
  secure?: { value?: boolean };
  httpOnly?: { value?: boolean };
  sameSite?: string;
  maxAge?: { value?: number };
}

function writeResponse(res: http.ServerResponse, returnValue: TypedData | undefined): void {
  const rpc = returnValue?.http as RpcHttpResponse | undefined;
  if (!rpc) {
    // The handler returned nothing: no content.
    sendText(res, 204, '');
    return;
  }
  const status = Number(rpc.statusCode ?? '200');
  for (const [k, v] of Object.entries(rpc.headers ?? {})) res.setHeader(k, v);
  const cookies = (rpc.cookies ?? []).map(formatCookie);
  if (cookies.length > 0) res.setHeader('Set-Cookie', cookies);
  const body = typedDataToBuffer(rpc.body);
  res.statusCode = Number.isInteger(status) && status >= 100 && status <= 999 ? status : 500;
  res.end(body);
}

export function typedDataToBuffer(data: TypedData | undefined): Buffer {
  if (!data) return Buffer.alloc(0);
  if (data.bytes) return Buffer.from(data.bytes);
  if (data.stream) return Buffer.from(data.stream);
  if (data.string !== undefined) return Buffer.from(data.string, 'utf8');
  if (data.json !== undefined) return Buffer.from(data.json, 'utf8');
  if (data.int !== undefined) return Buffer.from(String(data.int));
  if (data.double !== undefined) return Buffer.from(String(data.double));
  return Buffer.alloc(0);
}

function formatCookie(c: RpcCookie): string {
  const parts = [`${c.name ?? ''}=${c.value ?? ''}`];
  if (c.domain?.value) parts.push(`Domain=${c.domain.value}`);
  if (c.path?.value) parts.push(`Path=${c.path.value}`);
  if (c.expires?.value?.seconds !== undefined) parts.push(`Expires=${new Date(Number(c.expires.value.seconds) * 1000).toUTCString()}`);
  if (c.maxAge?.value !== undefined) parts.push(`Max-Age=${c.maxAge.value}`);
  if (c.secure?.value) parts.push('Secure');
  if (c.httpOnly?.value) parts.push('HttpOnly');
  const sameSite = { lax: 'Lax', strict: 'Strict', explicitNone: 'None' }[c.sameSite ?? ''];
  if (sameSite) parts.push(`SameSite=${sameSite}`);
  return parts.join('; ');
}

function sendText(res: http.ServerResponse, status: number, text: string): void {
  res.statusCode = status;
  if (text) res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.end(text);
}
