import { BatchServiceClient, BatchSharedKeyCredentials, type BatchServiceModels } from '@azure/batch';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Helpers for tests and benchmarks that drive the emulator through the real @azure/batch SDK. */

/** A pool's VM configuration as Batch requires one (the emulator's nodes are sandboxes, whatever the image). */
export const LINUX_VM_CONFIGURATION: BatchServiceModels.VirtualMachineConfiguration = {
  imageReference: { publisher: 'canonical', offer: '0001-com-ubuntu-server-jammy', sku: '22_04-lts', version: 'latest' },
  nodeAgentSKUId: 'batch.node.ubuntu 22.04',
};

export function sdkClient(h: { url: string; accountName: string; accountKey: string }): BatchServiceClient {
  return new BatchServiceClient(new BatchSharedKeyCredentials(h.accountName, h.accountKey), h.url);
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a value (not undefined) or `timeoutMs` passes. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000, everyMs = 50): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `; last error: ${(last as Error).message}` : ''}`);
    await sleep(everyMs);
  }
}

export async function waitForNodes(
  client: BatchServiceClient,
  poolId: string,
  count: number,
  states: string[] = ['idle'],
  timeoutMs?: number,
): Promise<BatchServiceModels.ComputeNode[]> {
  return waitFor(
    `${count} nodes of pool ${poolId} in ${states.join('/')}`,
    async () => {
      const nodes = await client.computeNode.list(poolId);
      return nodes.length === count && nodes.every((n) => states.includes(String(n.state))) ? nodes : undefined;
    },
    timeoutMs,
  );
}

export async function waitForTask(
  client: BatchServiceClient,
  jobId: string,
  taskId: string,
  state = 'completed',
  timeoutMs?: number,
): Promise<BatchServiceModels.CloudTask> {
  return waitFor(
    `task ${jobId}/${taskId} ${state}`,
    async () => {
      const t = await client.task.get(jobId, taskId);
      return t.state === state ? t : undefined;
    },
    timeoutMs,
  );
}

export async function readTaskFile(client: BatchServiceClient, jobId: string, taskId: string, file: string): Promise<string> {
  const res = await client.file.getFromTask(jobId, taskId, file);
  const stream = res.readableStreamBody;
  if (!stream) throw new Error(`no body for ${jobId}/${taskId}/${file}`);
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** Live processes whose command line or working directory mentions `fragment` (Linux /proc). */
export function processesMentioning(fragment: string): { pid: number; cmd: string; cwd: string }[] {
  const out: { pid: number; cmd: string; cwd: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let cmd = '';
    let cwd = '';
    try {
      cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      cwd = readlinkSync(`/proc/${entry}/cwd`);
    } catch {
      continue;
    }
    let state = '';
    try {
      state = /State:\s+(\w)/.exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1] ?? '';
    } catch {
      continue;
    }
    if (state === 'Z') continue;
    if (cmd.includes(fragment) || cwd.includes(fragment)) out.push({ pid: Number(entry), cmd, cwd });
  }
  return out;
}

export interface SignedFetchOptions {
  /** Default the emulator's version; null sends none. */
  apiVersion?: string | null;
  /** Set before signing (e.g. an `ocp-date` in the past), so they are signed like the SDK's own. */
  headers?: Record<string, string>;
  /** Sent as is instead of JSON.stringify(body). */
  rawBody?: string;
}

/**
 * A raw HTTP call signed exactly as the SDK signs (its own BatchSharedKeyCredentials), for tests
 * that need to see status codes and headers the SDK would retry or hide (429, 503), or to send what
 * the SDK never would (another api-version, an old ocp-date, a malformed body).
 */
export async function signedFetch(
  h: { url: string; accountName: string; accountKey: string },
  method: string,
  pathAndQuery: string,
  body?: unknown,
  opts: SignedFetchOptions = {},
): Promise<{ status: number; headers: Headers; json: unknown }> {
  const { WebResource } = require('@azure/ms-rest-js') as typeof import('@azure/ms-rest-js');
  const apiVersion = opts.apiVersion === undefined ? '2022-10-01.16.0' : opts.apiVersion;
  const url = apiVersion === null ? `${h.url}${pathAndQuery}` : `${h.url}${pathAndQuery}${pathAndQuery.includes('?') ? '&' : '?'}api-version=${apiVersion}`;
  const text = opts.rawBody ?? (body === undefined ? undefined : JSON.stringify(body));
  const wr = new WebResource(url, method as 'GET', text);
  if (text !== undefined) wr.headers.set('Content-Type', 'application/json; odata=minimalmetadata; charset=utf-8');
  for (const [k, v] of Object.entries(opts.headers ?? {})) wr.headers.set(k, v);
  await new BatchSharedKeyCredentials(h.accountName, h.accountKey).signRequest(wr);
  const headers: Record<string, string> = {};
  for (const hd of wr.headers.headersArray()) headers[hd.name] = hd.value;
  const res = await fetch(url, { method, headers, body: text });
  const raw = await res.text();
  return { status: res.status, headers: res.headers, json: raw ? JSON.parse(raw) : undefined };
}
