import { createReadStream, readdirSync, rmSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { FILE_FILTERS } from '../model/filterable';
import { pageOf } from '../model/odata';
import type { Json } from '../model/types';
import { clean } from '../model/views';
import { BatchHttpError, errors } from './errors';
import type { Handler, HandlerResponse, RequestContext, Services } from './http';
import { poolOr404 } from './pools';
import { taskOr404 } from './tasks';

/** A directory the file API serves: the task root on its node, or a node's root. */
interface FileRoot {
  dir: string;
  urlBase: string;
}

function taskFileRoot(ctx: RequestContext, s: Services, jobId: string, taskId: string): FileRoot {
  const { job, task } = taskOr404(s, jobId, taskId);
  const info = task.nodeInfo;
  const node = info && s.engine.findNode(info.poolId, info.nodeId);
  if (!info || !node) throw new BatchHttpError(409, 'TaskNotStarted', 'The task has not been started on a compute node, so it has no files.');
  return { dir: path.join(node.rootDir, info.taskRootDirectory), urlBase: `${ctx.baseUrl}/jobs/${job.id}/tasks/${task.id}/files` };
}

function nodeFileRoot(ctx: RequestContext, s: Services, poolId: string, nodeId: string): FileRoot {
  const pool = poolOr404(s, poolId);
  const node = pool.nodes.get(nodeId);
  if (!node || node.removed) throw errors.notFound('NodeNotFound', 'node');
  return { dir: node.rootDir, urlBase: `${ctx.baseUrl}/pools/${pool.id}/nodes/${node.id}/files` };
}

function resolveInside(root: FileRoot, rel: string): string {
  const target = path.resolve(root.dir, rel);
  if (target !== root.dir && !target.startsWith(root.dir + path.sep)) throw errors.invalid('filePath', rel, 'path escapes the directory');
  return target;
}

function statOr404(file: string): Stats {
  try {
    return statSync(file);
  } catch {
    throw new BatchHttpError(404, 'FileNotFound', 'The specified file does not exist.');
  }
}

function fileMode(st: Stats): string {
  return '0o' + st.mode.toString(8);
}

function nodeFile(root: FileRoot, rel: string, st: Stats): Json {
  return clean({
    name: rel,
    url: `${root.urlBase}/${rel.split('/').map(encodeURIComponent).join('/')}`,
    isDirectory: st.isDirectory(),
    properties: clean({
      creationTime: st.birthtime.toISOString(),
      lastModified: st.mtime.toISOString(),
      contentLength: st.isDirectory() ? 0 : st.size,
      contentType: st.isDirectory() ? undefined : 'application/octet-stream',
      fileMode: fileMode(st),
    }),
  });
}

function listFiles(root: FileRoot, recursive: boolean): Json[] {
  const out: Json[] = [];
  const walk = (relDir: string) => {
    let names: string[];
    try {
      names = readdirSync(path.join(root.dir, relDir)).sort();
    } catch {
      return;
    }
    for (const name of names) {
      const rel = relDir ? `${relDir}/${name}` : name;
      let st: Stats;
      try {
        st = statSync(path.join(root.dir, rel));
      } catch {
        continue;
      }
      out.push(nodeFile(root, rel, st));
      if (recursive && st.isDirectory()) walk(rel);
    }
  };
  walk('');
  return out;
}

function fileHeaders(root: FileRoot, rel: string, st: Stats): Record<string, string> {
  return {
    'ocp-creation-time': st.birthtime.toUTCString(),
    'ocp-batch-file-isdirectory': String(st.isDirectory()),
    'ocp-batch-file-url': `${root.urlBase}/${rel}`,
    'ocp-batch-file-mode': fileMode(st),
    'Last-Modified': st.mtime.toUTCString(),
    ETag: `0x${Math.floor(st.mtimeMs).toString(16).toUpperCase()}`,
  };
}

/** GET with optional `ocp-range: bytes=a-b`; HEAD answers the properties only. */
function serveFile(ctx: RequestContext, root: FileRoot, rel: string, headOnly: boolean): HandlerResponse {
  const file = resolveInside(root, rel);
  const st = statOr404(file);
  const headers = fileHeaders(root, rel, st);
  if (headOnly || st.isDirectory()) {
    return { status: 200, headers: { ...headers, 'Content-Length': String(st.isDirectory() ? 0 : st.size), 'Content-Type': 'application/octet-stream' } };
  }
  const range = /^bytes=(\d*)-(\d*)$/.exec(ctx.headers['ocp-range'] ?? '');
  let start = 0;
  let end = st.size - 1;
  if (range) {
    if (range[1]) start = Number(range[1]);
    if (range[2]) end = Math.min(Number(range[2]), st.size - 1);
    if (!range[1] && range[2]) {
      start = Math.max(0, st.size - Number(range[2]));
      end = st.size - 1;
    }
  }
  if (st.size === 0 || end < start) {
    return { status: 200, headers: { ...headers, 'Content-Type': 'application/octet-stream', 'Content-Length': '0' }, stream: Buffer.alloc(0) };
  }
  return {
    status: 200,
    headers: { ...headers, 'Content-Type': 'application/octet-stream', 'Content-Length': String(end - start + 1) },
    stream: createReadStream(file, { start, end }),
  };
}

function deleteFile(ctx: RequestContext, root: FileRoot, rel: string): HandlerResponse {
  const file = resolveInside(root, rel);
  const st = statOr404(file);
  if (st.isDirectory() && ctx.query.recursive !== 'true') {
    throw errors.conflict('DirectoryNotEmpty', 'The directory is not empty; set recursive=true to delete it.');
  }
  rmSync(file, { recursive: true, force: true });
  return { status: 200 };
}

const listTaskFiles: Handler = (ctx, p, s) => {
  const root = taskFileRoot(ctx, s, p.jobId, p.taskId);
  return {
    status: 200,
    body: pageOf(listFiles(root, ctx.query.recursive === 'true'), ctx.query, ctx.baseUrl, `/jobs/${p.jobId}/tasks/${p.taskId}/files`, FILE_FILTERS),
  };
};
const getTaskFile: Handler = (ctx, p, s) => serveFile(ctx, taskFileRoot(ctx, s, p.jobId, p.taskId), p.filePath, false);
const getTaskFileProperties: Handler = (ctx, p, s) => serveFile(ctx, taskFileRoot(ctx, s, p.jobId, p.taskId), p.filePath, true);
const deleteTaskFile: Handler = (ctx, p, s) => deleteFile(ctx, taskFileRoot(ctx, s, p.jobId, p.taskId), p.filePath);
const listNodeFiles: Handler = (ctx, p, s) => {
  const root = nodeFileRoot(ctx, s, p.poolId, p.nodeId);
  return {
    status: 200,
    body: pageOf(listFiles(root, ctx.query.recursive === 'true'), ctx.query, ctx.baseUrl, `/pools/${p.poolId}/nodes/${p.nodeId}/files`, FILE_FILTERS),
  };
};
const getNodeFile: Handler = (ctx, p, s) => serveFile(ctx, nodeFileRoot(ctx, s, p.poolId, p.nodeId), p.filePath, false);
const getNodeFileProperties: Handler = (ctx, p, s) => serveFile(ctx, nodeFileRoot(ctx, s, p.poolId, p.nodeId), p.filePath, true);
const deleteNodeFile: Handler = (ctx, p, s) => deleteFile(ctx, nodeFileRoot(ctx, s, p.poolId, p.nodeId), p.filePath);

export const fileRoutes: [string, string, Handler][] = [
  ['GET', 'jobs/{jobId}/tasks/{taskId}/files', listTaskFiles],
  ['GET', 'jobs/{jobId}/tasks/{taskId}/files/{*filePath}', getTaskFile],
  ['HEAD', 'jobs/{jobId}/tasks/{taskId}/files/{*filePath}', getTaskFileProperties],
  ['DELETE', 'jobs/{jobId}/tasks/{taskId}/files/{*filePath}', deleteTaskFile],
  ['GET', 'pools/{poolId}/nodes/{nodeId}/files', listNodeFiles],
  ['GET', 'pools/{poolId}/nodes/{nodeId}/files/{*filePath}', getNodeFile],
  ['HEAD', 'pools/{poolId}/nodes/{nodeId}/files/{*filePath}', getNodeFileProperties],
  ['DELETE', 'pools/{poolId}/nodes/{nodeId}/files/{*filePath}', deleteNodeFile],
];
