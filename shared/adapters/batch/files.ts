/**
 * Reading task and node files (stdout.txt, stderr.txt, ...) with a hard size bound, so an activity
 * never pulls a multi-gigabyte log into memory or into orchestration history.
 */
import type { BatchContext } from './client';
import { collectPages, isGone } from './common';
import { callWithRetry } from './retry';

export interface ReadFileOptions {
  /** At most this many bytes are returned (default 64 KiB). */
  maxBytes?: number;
  /** Which end to keep when the file is larger: the end (default, where errors are) or the start. */
  from?: 'end' | 'start';
}

export interface FileContent {
  exists: boolean;
  /** The file's full size in bytes. */
  size: number;
  /** UTF-8 text of the returned range. */
  content: string;
  truncated: boolean;
}

const DEFAULT_MAX_BYTES = 64 * 1024;

interface FileEndpoints {
  operation: string;
  resource: string;
  size: () => Promise<number>;
  read: (range: string) => Promise<NodeJS.ReadableStream | undefined>;
}

async function readBounded(ctx: BatchContext, f: FileEndpoints, options: ReadFileOptions): Promise<FileContent> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const fromEnd = (options.from ?? 'end') === 'end';
  let size: number;
  try {
    size = await callWithRetry(ctx.retry, { operation: `${f.operation}.properties`, resource: f.resource }, f.size);
  } catch (err) {
    if (isGone(err, ['FileNotFound', 'TaskNotFound', 'JobNotFound', 'NodeNotFound', 'PoolNotFound'])) {
      return { exists: false, size: 0, content: '', truncated: false };
    }
    throw err;
  }
  if (size === 0 || maxBytes <= 0) return { exists: true, size, content: '', truncated: size > 0 };
  const start = fromEnd ? Math.max(0, size - maxBytes) : 0;
  const end = fromEnd ? size - 1 : Math.min(size, maxBytes) - 1;
  const bytes = await callWithRetry(ctx.retry, { operation: f.operation, resource: f.resource }, async () => {
    const stream = await f.read(`bytes=${start}-${end}`);
    return stream ? collect(stream, maxBytes, fromEnd) : Buffer.alloc(0);
  });
  return { exists: true, size, content: bytes.toString('utf8'), truncated: size > bytes.length };
}

/** Reads a stream keeping at most `maxBytes` (the last ones when `keepEnd`), in case a range is ignored. */
async function collect(stream: NodeJS.ReadableStream, maxBytes: number, keepEnd: boolean): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of stream as AsyncIterable<Buffer | string>) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    chunks.push(buf);
    length += buf.length;
    if (keepEnd) {
      while (length - chunks[0].length >= maxBytes) length -= chunks.shift()!.length;
    } else if (length >= maxBytes) {
      (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
      break;
    }
  }
  const all = Buffer.concat(chunks);
  return keepEnd ? all.subarray(Math.max(0, all.length - maxBytes)) : all.subarray(0, maxBytes);
}

/** A file in a task's directory, e.g. "stdout.txt", "stderr.txt", "wd/result.log". */
export function readTaskFile(ctx: BatchContext, batchJobId: string, taskId: string, filePath: string, options: ReadFileOptions = {}): Promise<FileContent> {
  return readBounded(
    ctx,
    {
      operation: 'files.readTaskFile',
      resource: `file ${filePath} of task ${batchJobId}/${taskId}`,
      size: async () => (await ctx.client.file.getPropertiesFromTask(batchJobId, taskId, filePath)).contentLength ?? 0,
      read: async (range) =>
        (await ctx.client.file.getFromTask(batchJobId, taskId, filePath, { fileGetFromTaskOptions: { ocpRange: range } })).readableStreamBody,
    },
    options,
  );
}

/** A file on a node, relative to the node root (e.g. a subtask's `${taskRootDirectory}/stdout.txt`). */
export function readNodeFile(ctx: BatchContext, poolId: string, nodeId: string, filePath: string, options: ReadFileOptions = {}): Promise<FileContent> {
  return readBounded(
    ctx,
    {
      operation: 'files.readNodeFile',
      resource: `file ${filePath} on node ${poolId}/${nodeId}`,
      size: async () => (await ctx.client.file.getPropertiesFromComputeNode(poolId, nodeId, filePath)).contentLength ?? 0,
      read: async (range) =>
        (await ctx.client.file.getFromComputeNode(poolId, nodeId, filePath, { fileGetFromComputeNodeOptions: { ocpRange: range } })).readableStreamBody,
    },
    options,
  );
}

export interface FileEntry {
  name: string;
  isDirectory: boolean;
  size?: number;
}

/** Lists a task's files (recursive), e.g. to find output logs. */
export async function listTaskFiles(ctx: BatchContext, batchJobId: string, taskId: string): Promise<FileEntry[]> {
  const what = { operation: 'files.listTaskFiles', resource: `task ${batchJobId}/${taskId}` };
  const all = await collectPages(
    ctx.retry,
    what,
    () => ctx.client.file.listFromTask(batchJobId, taskId, { recursive: true }),
    (link) => ctx.client.file.listFromTaskNext(link),
  );
  return all.map((f) => ({
    name: f.name ?? '',
    isDirectory: f.isDirectory ?? false,
    ...(f.properties?.contentLength !== undefined ? { size: f.properties.contentLength } : {}),
  }));
}

/**
 * Lists a node's files below `directory` (relative to the node root, e.g. a subtask's taskRootDirectory), recursive;
 * names stay relative to the node root. The name filter keeps the listing to that directory (a node root holds every
 * task's files and the shared directory).
 */
export async function listNodeFiles(ctx: BatchContext, poolId: string, nodeId: string, directory: string): Promise<FileEntry[]> {
  const what = { operation: 'files.listNodeFiles', resource: `directory ${directory} on node ${poolId}/${nodeId}` };
  const prefix = `${directory.replace(/^\/+|\/+$/g, '')}/`;
  const filter = `startswith(name,'${prefix.replace(/'/g, "''")}')`;
  const all = await collectPages(
    ctx.retry,
    what,
    () => ctx.client.file.listFromComputeNode(poolId, nodeId, { recursive: true, fileListFromComputeNodeOptions: { filter } }),
    (link) => ctx.client.file.listFromComputeNodeNext(link),
  );
  return all.map((f) => ({
    name: f.name ?? '',
    isDirectory: f.isDirectory ?? false,
    ...(f.properties?.contentLength !== undefined ? { size: f.properties.contentLength } : {}),
  }));
}
