/**
 * HTTP handlers of the read-only OCI distribution API (pull side of distribution-spec v1.1):
 * `GET /v2/`, `GET|HEAD /v2/<name>/manifests/<reference>`, `GET|HEAD /v2/<name>/blobs/<digest>`,
 * `GET /v2/<name>/tags/list`, `GET /v2/_catalog`. Push is answered 405 UNSUPPORTED.
 */
import { createReadStream } from 'node:fs';
import { IncomingMessage, ServerResponse } from 'node:http';
import { BandwidthLimiter } from './bandwidth';
import { BlobContent, ImageCatalog } from './imageCatalog';
import { isDigest, isRepositoryName } from './oci';
import { PullAdmission } from './pullAdmission';
import { challenge, checkAccess, handleTokenService, type RegistryAuth } from './auth';

const CHUNK = 64 * 1024;

export interface RegistryContext {
  catalog: ImageCatalog;
  admission: PullAdmission;
  bandwidth: BandwidthLimiter;
  retryAfterSeconds: number;
  /** Private registry (auth.ts): tokens required; absent = open. */
  auth?: RegistryAuth;
}

type ErrorCode =
  'NAME_UNKNOWN' | 'NAME_INVALID' | 'MANIFEST_UNKNOWN' | 'BLOB_UNKNOWN' | 'DIGEST_INVALID' | 'UNSUPPORTED' | 'TOOMANYREQUESTS' | 'UNAUTHORIZED' | 'DENIED';

function sendError(
  res: ServerResponse,
  status: number,
  code: ErrorCode,
  message: string,
  detail?: unknown,
  head = false,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ errors: [{ code, message, ...(detail === undefined ? {} : { detail }) }] });
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...headers });
  res.end(head ? undefined : body);
}

function sendJson(res: ServerResponse, value: unknown, head: boolean): void {
  const body = JSON.stringify(value);
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(head ? undefined : body);
}

export function clientKey(req: IncomingMessage): string {
  const h = req.headers['x-pull-client'];
  const v = Array.isArray(h) ? h[0] : h;
  return v && v.length <= 200 ? v : `${req.socket.remoteAddress ?? 'unknown'}`;
}

/** Streams a body under the shared bandwidth cap, stopping if the client goes away. Returns bytes written. */
async function sendBody(res: ServerResponse, content: BlobContent, bandwidth: BandwidthLimiter): Promise<number> {
  let sent = 0;
  const writeChunk = async (chunk: Buffer): Promise<boolean> => {
    await bandwidth.take(chunk.length);
    if (res.destroyed) return false;
    sent += chunk.length;
    if (!res.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    }
    return !res.destroyed;
  };
  if ('buffer' in content) {
    for (let off = 0; off < content.buffer.length; off += CHUNK) {
      if (!(await writeChunk(content.buffer.subarray(off, off + CHUNK)))) return sent;
    }
  } else {
    const stream = createReadStream(content.file, { highWaterMark: CHUNK });
    try {
      for await (const chunk of stream) {
        if (!(await writeChunk(chunk as Buffer))) return sent;
      }
    } finally {
      stream.destroy();
    }
  }
  res.end();
  return sent;
}

const ROUTE = /^\/v2\/(.+)\/(manifests|blobs)\/([^/]+)$/;
const TAGS = /^\/v2\/(.+)\/tags\/list$/;

export async function handleRequest(ctx: RegistryContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  res.setHeader('Docker-Distribution-API-Version', 'registry/2.0');
  const url = new URL(req.url ?? '/', 'http://registry.invalid');
  const pathname = url.pathname;
  const method = req.method ?? 'GET';
  const key = clientKey(req);
  const head = method === 'HEAD';

  if (ctx.auth) {
    if (await handleTokenService(ctx.auth, req, res, pathname, url)) return;
    // Every /v2 route needs an access token; a repository route one with pull on that repository.
    const repo = TAGS.exec(pathname)?.[1] ?? ROUTE.exec(pathname)?.[1];
    const verdict = await checkAccess(ctx.auth, req, repo);
    if (!verdict.ok) {
      ctx.admission.countRequest(key);
      const scope = repo ? `repository:${repo}:pull` : undefined;
      return sendError(res, verdict.status, verdict.code, verdict.message, repo ? [{ Type: 'repository', Name: repo, Action: 'pull' }] : undefined, head, {
        'WWW-Authenticate': challenge(req, scope),
      });
    }
  }

  if (pathname === '/v2/' || pathname === '/v2') {
    ctx.admission.countRequest(key);
    return sendJson(res, {}, head);
  }
  if (method !== 'GET' && method !== 'HEAD') {
    ctx.admission.countRequest(key);
    sendError(res, 405, 'UNSUPPORTED', `this registry is read-only: ${method} ${pathname} is not supported`);
    return;
  }
  if (pathname === '/v2/_catalog') {
    ctx.admission.countRequest(key);
    return sendJson(res, { repositories: ctx.catalog.repositories() }, head);
  }
  const tagsMatch = TAGS.exec(pathname);
  if (tagsMatch) {
    ctx.admission.countRequest(key);
    const name = tagsMatch[1];
    const tags = ctx.catalog.tags(name);
    if (!tags) return sendError(res, 404, 'NAME_UNKNOWN', `repository name not known to registry`, { name }, head);
    return sendJson(res, { name, tags }, head);
  }
  const m = ROUTE.exec(pathname);
  if (!m) {
    ctx.admission.countRequest(key);
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end(head ? undefined : '404 page not found\n');
    return;
  }
  const [, name, kind, reference] = m;
  const lookupError = (): boolean => {
    if (!isRepositoryName(name)) {
      sendError(res, 400, 'NAME_INVALID', 'invalid repository name', { name }, head);
      return true;
    }
    if (!ctx.catalog.hasRepository(name)) {
      sendError(res, 404, 'NAME_UNKNOWN', 'repository name not known to registry', { name }, head);
      return true;
    }
    if (kind === 'blobs' && !isDigest(reference)) {
      sendError(res, 400, 'DIGEST_INVALID', 'provided digest did not match uploaded content', { digest: reference }, head);
      return true;
    }
    return false;
  };

  // HEAD moves no body, so it does not count as a pull and is never throttled.
  const admission = head ? undefined : ctx.admission.tryAdmit(key);
  if (head) ctx.admission.countRequest(key);
  else if (!admission) {
    res.setHeader('Retry-After', String(ctx.retryAfterSeconds));
    sendError(res, 429, 'TOOMANYREQUESTS', 'too many concurrent pulls: retry later', {
      limit: ctx.admission.snapshot().limit,
    });
    return;
  }
  const release = (): void => admission?.release();
  res.on('close', release);
  try {
    if (lookupError()) return;
    let content: BlobContent;
    let digest: string;
    let contentType: string;
    if (kind === 'manifests') {
      const man = ctx.catalog.manifest(name, reference);
      if (!man) return sendError(res, 404, 'MANIFEST_UNKNOWN', 'manifest unknown', { name, reference }, head);
      content = { size: man.bytes.length, buffer: man.bytes };
      digest = man.digest;
      contentType = man.mediaType;
    } else {
      const blob = ctx.catalog.blob(name, reference);
      if (!blob) return sendError(res, 404, 'BLOB_UNKNOWN', 'blob unknown to registry', { digest: reference }, head);
      content = blob;
      digest = reference;
      contentType = 'application/octet-stream';
    }
    res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': content.size, 'Docker-Content-Digest': digest, ETag: `"${digest}"` });
    if (head) {
      res.end();
      return;
    }
    if (kind === 'manifests') ctx.admission.countPull(key);
    const sent = await sendBody(res, content, ctx.bandwidth);
    ctx.admission.countBytes(key, sent);
  } finally {
    if (res.writableEnded || res.destroyed) release();
  }
}
