/**
 * Submitting a job to a running local stack and checking its outcome: shared by the demo (the README's main
 * command) and the end-to-end tests, so both exercise the public HTTP API the same way.
 */
import * as path from 'node:path';
import type { TokenCredential } from '@azure/core-auth';
import { REPO_ROOT } from './stack';
import { DATA_ACCOUNT, STAGING_ACCOUNTS } from './azurite';
import type { IdentityService } from './identity';
import type { OperatorAccess } from './operatorAccess';
import { shapeForSize, type ExpectedResult } from '../examples/data/dataset';
import { uploadDataset } from '../examples/data/upload';
import { statusLine } from '../cli/format';
import type { LiveProgress } from '../cli/apiClient';
import type { JobResultView } from '../shared/core/contract/jobResult';
import { isOrchestrationAborted } from '../shared/core/contract/orchestration';
import { isTerminal } from '../shared/core/state/states';
import { backoffCeilingMs, type BackoffOptions } from '../shared/core/planning/backoff';

export interface JobViewLite {
  id: string;
  state: string;
  stage: string;
  progress?: LiveProgress | null;
  result?: JobResultView;
  error?: { code: string; message: string };
  batchPoolId?: string;
  batchJobId?: string;
  orchestrationStatus?: string;
  timeline?: { kind: string; from?: string | null; to?: string; reason: string }[];
}

export type Say = (msg: string) => void;

/**
 * What these helpers need of a stack: an in-process `Stack`, or the endpoints of a supervised one (its
 * supervisor.json and ports.json; see tests/stack/supervisedStack.ts). With an identity service the default caller
 * is its default user; without one, the operator. `operator` reaches Batch and storage directly (uploads, checks).
 */
export interface StackClient {
  baseUrl: string;
  host: { keys: { functionKey: string } };
  operator: OperatorAccess;
  identity?: Pick<IdentityService, 'userToken'>;
}

/** How a script authenticates to the job API: the headers to send (built per request, so tokens stay fresh). */
export type Caller = () => Promise<Record<string, string>>;

/** The local tenant's default user (`dev`, app role Jobs.Submit): who the tests and the dashboard are by default. */
export const DEFAULT_USER = 'dev';

/** A user of the local tenant, with an access token signed by the local issuer. */
export function asUser(stack: StackClient, username: string = DEFAULT_USER): Caller {
  const identity = stack.identity;
  if (!identity) throw new Error('this stack has no identity service: call as the operator (asOperator)');
  return async () => ({ authorization: `Bearer ${await identity.userToken(username)}` });
}

/** The stack's default user when it has an identity service, else the operator. */
function defaultCaller(stack: StackClient): Caller {
  return stack.identity ? asUser(stack) : asOperator(stack);
}

/** The operator: the stack's function key, which the app accepts as an operator key (an admin). */
export function asOperator(stack: StackClient): Caller {
  return async () => ({ 'x-functions-key': stack.host.keys.functionKey });
}

/** A principal whose @azure/identity credential gets tokens for the API's scope (e.g. ClientSecretCredential). */
export function withCredential(credential: TokenCredential, scope: string): Caller {
  return async () => {
    const token = await credential.getToken(scope);
    if (!token) throw new Error(`no token for ${scope}`);
    return { authorization: `Bearer ${token.token}` };
  };
}

export async function submitSpec(stack: StackClient, specText: string, caller: Caller = defaultCaller(stack)): Promise<string> {
  const res = await fetch(`${stack.baseUrl}/api/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/yaml', ...(await caller()) },
    body: specText,
  });
  const body = (await res.json()) as { job?: { id: string }; errors?: unknown };
  if (res.status !== 202 && res.status !== 200) throw new Error(`submission answered ${res.status}: ${JSON.stringify(body)}`);
  return (body.job as { id: string }).id;
}

/** GET /api/jobs/{id} as `caller`; throws on anything but 200. */
export async function getJobView(stack: StackClient, id: string, caller: Caller = defaultCaller(stack)): Promise<JobViewLite> {
  const res = await fetch(`${stack.baseUrl}/api/jobs/${encodeURIComponent(id)}`, { headers: await caller() });
  if (res.status !== 200) throw Object.assign(new Error(`GET /api/jobs/${id} answered ${res.status}: ${await res.text()}`), { status: res.status });
  return (await res.json()) as JobViewLite;
}

/**
 * The pauses between looks at a job: the project's one backoff (shared/core/planning/backoff.ts), 500 ms growing 1.5×
 * per look to 2 s. watchJob waits for a final state (tests that act on a stage look for it themselves), and a look is
 * a GET through the host: ~9 ms of CPU there and ~4 ms in Azurite, measured on 2 cores. The suite watches ~150 jobs,
 * several at once per file, for a minute or more each when the cores are shared; a look every 500 ms spent most of
 * them on a view that had not changed. A quick job is still seen ending within a second or two; a change is shown at
 * most 2 s late.
 */
export const WATCH_BACKOFF: BackoffOptions = { baseMs: 500, maxMs: 2_000, factor: 1.5 };

export async function watchJob(
  stack: StackClient,
  id: string,
  timeoutMs: number,
  say: Say = () => undefined,
  caller: Caller = defaultCaller(stack),
): Promise<JobViewLite> {
  let last = '';
  let looks = 0;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // A 503 (storage or Durable briefly unavailable) is worth another look; anything else is an answer.
    const view = await getJobView(stack, id, caller).catch((err: Error & { status?: number }) => {
      if (err.status === 503) return undefined;
      throw err;
    });
    if (!view) {
      await new Promise((r) => setTimeout(r, WATCH_BACKOFF.baseMs));
      continue;
    }
    const line = statusLine(view);
    if (line !== last) {
      say(line);
      last = line;
    }
    if (isTerminal(view.state)) return view;
    if (view.orchestrationStatus && isOrchestrationAborted(view.orchestrationStatus)) {
      throw new Error(`job ${id} is ${view.state} but its orchestration is ${view.orchestrationStatus}: ${JSON.stringify(view.progress)}`);
    }
    if (Date.now() > deadline) throw new Error(`job ${id} still ${view.state} after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, backoffCeilingMs(++looks, WATCH_BACKOFF)));
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
  const batch = stack.operator.batch();
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
    const svc = stack.operator.blobService(account.name);
    for await (const c of svc.listContainers({ prefix: 'stg-' })) problems.push(`staged data left in ${account.name}/${c.name}`);
  }
  return problems;
}

/** Uploads the generated data set and the MPI program source the demo spec's start task compiles. */
export async function uploadDemoInputs(stack: StackClient, sizeMb: number, say: Say = () => undefined): Promise<ExpectedResult> {
  const shape = shapeForSize(sizeMb);
  say(`uploading a ${sizeMb} MB input data set (${shape.largeFiles.length} large files to split, ${shape.smallFiles.count} small files to pack)`);
  const data = stack.operator.blobService(DATA_ACCOUNT.name);
  const expected = await uploadDataset(data, 'inputs', 'demo/', shape);
  const software = data.getContainerClient('software');
  await software.createIfNotExists();
  await software.getBlockBlobClient('shardsum.c').uploadFile(path.join(REPO_ROOT, 'examples', 'mpi', 'shardsum.c'));
  return expected;
}

/** The MPI master's stdout and stderr (the ends), for diagnosing a failed job. */
export async function mpiOutput(stack: StackClient, view: JobViewLite, maxChars = 4000): Promise<string> {
  if (!view.batchJobId) return '(no Batch job)';
  const batch = stack.operator.batch();
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
