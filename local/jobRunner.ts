/**
 * Submitting a job to a running local stack and checking its outcome: shared by the demo (the README's main
 * command) and the end-to-end tests, so both exercise the public HTTP API the same way.
 */
import * as path from 'node:path';
import { BatchServiceClient, BatchSharedKeyCredentials } from '@azure/batch';
import { BlobServiceClient } from '@azure/storage-blob';
import { REPO_ROOT } from './stack';
import { STAGING_ACCOUNTS, type AzuriteHandle } from './azurite';
import type { BatchEmulatorHandle } from './batch';
import { shapeForSize, type ExpectedResult } from '../examples/data/dataset';
import { uploadDataset } from '../examples/data/upload';
import { statusLine } from '../cli/format';
import type { LiveProgress } from '../cli/apiClient';

export interface JobViewLite {
  id: string;
  state: string;
  stage: string;
  progress?: LiveProgress | null;
  result?: { exitCode?: number; timings?: Record<string, { startedAt: string; endedAt?: string }>; nodeMinutes?: number; logs?: { node: string; stdout: string; stderr: string }[]; mpi?: { stdoutTail?: string } };
  error?: { code: string; message: string };
  batchPoolId?: string;
  batchJobId?: string;
  orchestrationStatus?: string;
  timeline?: { kind: string; from?: string | null; to?: string; reason: string }[];
}

/**
 * What these helpers need of a stack: an in-process `Stack`, or the endpoints of a supervised one (its
 * supervisor.json and ports.json; see tests/stack/supervisedStack.ts).
 */
export interface StackClient {
  baseUrl: string;
  host: { keys: { functionKey: string } };
  batch: Pick<BatchEmulatorHandle, 'url' | 'accountName' | 'accountKey'>;
  azurite: Pick<AzuriteHandle, 'connectionString'>;
}

const TERMINAL = new Set(['Succeeded', 'Failed', 'Cancelled']);
export type Say = (msg: string) => void;

export async function submitSpec(stack: StackClient, specText: string): Promise<string> {
  const res = await fetch(`${stack.baseUrl}/api/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/yaml', 'x-functions-key': stack.host.keys.functionKey },
    body: specText,
  });
  const body = (await res.json()) as { job?: { id: string }; errors?: unknown };
  if (res.status !== 202 && res.status !== 200) throw new Error(`submission answered ${res.status}: ${JSON.stringify(body)}`);
  return (body.job as { id: string }).id;
}

export async function watchJob(stack: StackClient, id: string, timeoutMs: number, say: Say = () => undefined): Promise<JobViewLite> {
  let last = '';
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await fetch(`${stack.baseUrl}/api/jobs/${id}`);
    const view = (await res.json()) as JobViewLite;
    const line = statusLine(view);
    if (line !== last) {
      say(line);
      last = line;
    }
    if (TERMINAL.has(view.state)) return view;
    if (view.orchestrationStatus && ['Failed', 'Terminated'].includes(view.orchestrationStatus)) {
      throw new Error(`job ${id} is ${view.state} but its orchestration is ${view.orchestrationStatus}: ${JSON.stringify(view.progress)}`);
    }
    if (Date.now() > deadline) throw new Error(`job ${id} still ${view.state} after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

export function checkResult(view: JobViewLite, expected: ExpectedResult, say: Say = () => undefined): string[] {
  const tail = view.result?.mpi?.stdoutTail ?? '';
  const line = tail.split('\n').find((l) => l.startsWith('RESULT '));
  if (!line) return ['no RESULT line in the MPI output'];
  const got = JSON.parse(line.slice('RESULT '.length)) as Record<string, number | string>;
  const problems: string[] = [];
  if (Number(got.records) !== expected.records) problems.push(`records ${got.records} != ${expected.records}`);
  // valueSum can exceed 2^53: compare the digits, not a JavaScript number.
  const valueSum = /"valueSum":(\d+)/.exec(line)?.[1];
  if (valueSum !== expected.valueSum) problems.push(`valueSum ${valueSum} != ${expected.valueSum}`);
  if (Number(got.bytes) !== expected.bytes) problems.push(`bytes ${got.bytes} != ${expected.bytes}`);
  if (Number(got.badRecords) !== 0) problems.push(`${got.badRecords} torn records`);
  say(`MPI result: ${line.slice('RESULT '.length)}`);
  say(`expected:   {"records":${expected.records},"valueSum":${expected.valueSum},"bytes":${expected.bytes}}`);
  return problems;
}

/** Nothing the job created may outlive it: pool, Batch job (terminated), staged shards. */
export async function checkCleanup(stack: StackClient, view: JobViewLite): Promise<string[]> {
  const problems: string[] = [];
  const batch = new BatchServiceClient(new BatchSharedKeyCredentials(stack.batch.accountName, stack.batch.accountKey), stack.batch.url);
  if (view.batchPoolId) {
    // Deletion is asynchronous in Batch: a pool may show as `deleting` for a moment before it is gone.
    for (let i = 0; ; i++) {
      const exists = (await batch.pool.exists(view.batchPoolId)).body;
      if (!exists) break;
      const pool = await batch.pool.get(view.batchPoolId).catch(() => undefined);
      if (pool?.state === 'deleting' && i < 40) {
        await new Promise((r) => setTimeout(r, 250));
        continue;
      }
      problems.push(`pool ${view.batchPoolId} still exists (${pool?.state ?? 'unknown state'})`);
      break;
    }
  }
  if (view.batchJobId) {
    const job = await batch.job.get(view.batchJobId).catch(() => undefined);
    if (job && job.state !== 'completed' && job.state !== 'deleting') problems.push(`Batch job ${view.batchJobId} is ${job.state}`);
  }
  for (const account of STAGING_ACCOUNTS) {
    const svc = BlobServiceClient.fromConnectionString(stack.azurite.connectionString(account.name));
    for await (const c of svc.listContainers({ prefix: 'stg-' })) problems.push(`staged data left in ${account.name}/${c.name}`);
  }
  return problems;
}

/** Uploads the generated data set and the MPI program source the demo spec's start task compiles. */
export async function uploadDemoInputs(stack: StackClient, sizeMb: number, say: Say = () => undefined): Promise<ExpectedResult> {
  const shape = shapeForSize(sizeMb);
  say(`uploading a ${sizeMb} MB input data set (${shape.largeFiles.length} large files to split, ${shape.smallFiles.count} small files to pack)`);
  const conn = stack.azurite.connectionString('devstoreaccount1');
  const expected = await uploadDataset(conn, 'inputs', 'demo/', shape);
  const software = BlobServiceClient.fromConnectionString(conn).getContainerClient('software');
  await software.createIfNotExists();
  await software.getBlockBlobClient('shardsum.c').uploadFile(path.join(REPO_ROOT, 'examples', 'mpi', 'shardsum.c'));
  return expected;
}

/** The MPI master's stdout and stderr (the ends), for diagnosing a failed job. */
export async function mpiOutput(stack: StackClient, view: JobViewLite, maxChars = 4000): Promise<string> {
  if (!view.batchJobId) return '(no Batch job)';
  const batch = new BatchServiceClient(new BatchSharedKeyCredentials(stack.batch.accountName, stack.batch.accountKey), stack.batch.url);
  const read = async (file: string) => {
    try {
      const res = await batch.file.getFromTask(view.batchJobId as string, 'mpi', file);
      const chunks: Buffer[] = [];
      for await (const c of res.readableStreamBody as AsyncIterable<Buffer>) chunks.push(Buffer.from(c));
      return Buffer.concat(chunks).toString('utf8').slice(-maxChars);
    } catch (err) {
      return `(${file}: ${(err as Error).message})`;
    }
  };
  return `--- stdout ---\n${await read('stdout.txt')}\n--- stderr ---\n${await read('stderr.txt')}`;
}
