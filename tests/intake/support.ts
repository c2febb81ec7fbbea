/**
 * Helpers shared by the intake tests and the intake bench: specs that end fast, submitting over HTTP and the
 * queue, and reading back what intake wrote (Jobs rows, Durable instances) straight from the local stack.
 */
import type { TableClient } from '@azure/data-tables';
import type { QueueClient } from '@azure/storage-queue';
import type { Stack as FullStack } from '../../local/stack';

/** What these helpers use of a stack: the in-process one (local/stack.ts) or a view of the supervised one (the bench). */
export type Stack = Pick<FullStack, 'baseUrl' | 'operator'> & {
  host: { keys: { functionKey: string; masterKey: string } };
};

export const SUBMISSIONS_QUEUE = 'job-submissions';
export const POISON_QUEUE = 'job-submissions-poison';
const TERMINAL = new Set(['Succeeded', 'Failed', 'Cancelled']);

/**
 * A valid spec whose pipeline ends at once: it reuses a pool that does not exist, so Provisioning fails on
 * the first Batch call and the job ends Failed after cleanup, without creating any pool.
 */
export function fastSpec(id: string | undefined, variant = 'true'): Record<string, unknown> {
  return {
    ...(id ? { id } : {}),
    name: `intake-${id ?? 'anon'}`,
    pool: { poolId: `does-not-exist-${id ?? 'anon'}`, nodes: 1 },
    mpi: { runtime: 'openmpi', command: variant },
  };
}

export interface HttpAnswer {
  status: number;
  body: { job?: { id: string; createdAt?: string }; errors?: { path: string; message: string }[]; differingPaths?: string[]; error?: string };
  ms: number;
  headers: Headers;
}

export async function postJob(stack: Stack, spec: unknown): Promise<HttpAnswer> {
  const started = performance.now();
  const res = await fetch(`${stack.baseUrl}/api/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-functions-key': stack.host.keys.functionKey },
    body: typeof spec === 'string' ? spec : JSON.stringify(spec),
  });
  const body = (await res.json()) as HttpAnswer['body'];
  return { status: res.status, body, ms: performance.now() - started, headers: res.headers };
}

/**
 * POST as a well-behaved client does: a 503 (storage or Durable briefly unavailable; the outcome is
 * unknown) is retried after its Retry-After, capped at `maxWaitMs`. Returns the last answer and every status seen.
 */
export async function postJobRetrying(stack: Stack, spec: unknown, attempts = 6, maxWaitMs = 500): Promise<HttpAnswer & { statuses: number[] }> {
  const statuses: number[] = [];
  for (let i = 1; ; i++) {
    const a = await postJob(stack, spec);
    statuses.push(a.status);
    if (a.status !== 503 || i >= attempts) return { ...a, statuses };
    await new Promise((r) => setTimeout(r, Math.min(maxWaitMs, 1000 * Number(a.headers.get('retry-after') ?? 1))));
  }
}

/** A queue of the host storage, as the operator reaches it (tokens on a keyless stack, the key with shared keys). */
export function submissionsQueue(stack: Stack, name = SUBMISSIONS_QUEUE): QueueClient {
  return stack.operator.queue(name);
}

/** host.json says messageEncoding base64: send what the Functions host expects. */
export async function enqueue(queue: QueueClient, body: unknown): Promise<void> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  await queue.sendMessage(Buffer.from(text, 'utf8').toString('base64'));
}

/** The Jobs table read directly from Azurite (not through the app, which may sit behind a fault proxy). */
export function jobsTable(stack: Stack): TableClient {
  return stack.operator.table('Jobs');
}

export interface JobRow {
  id: string;
  state: string;
  specHash?: string;
}

/** Job rows whose id starts with `prefix` (PartitionKey range scan). */
export async function jobRows(stack: Stack, prefix: string): Promise<JobRow[]> {
  const rows: JobRow[] = [];
  const filter = `PartitionKey ge '${prefix}' and PartitionKey lt '${prefix}~' and RowKey eq 'job'`;
  for await (const e of jobsTable(stack).listEntities<Record<string, unknown>>({ queryOptions: { filter, select: ['PartitionKey', 'state', 'specHash'] } })) {
    rows.push({ id: String(e.partitionKey), state: String(e.state), specHash: e.specHash as string | undefined });
  }
  return rows;
}

export interface InstanceRow {
  instanceId: string;
  runtimeStatus: string;
}

/** Every Durable instance, through the host's Durable HTTP management API, page by page. */
export async function durableInstances(stack: Stack): Promise<InstanceRow[]> {
  const out: InstanceRow[] = [];
  let token: string | null = null;
  for (let page = 0; page < 1000; page++) {
    const res: Response = await fetch(`${stack.baseUrl}/runtime/webhooks/durabletask/instances?top=200&code=${stack.host.keys.masterKey}`, {
      headers: token ? { 'x-ms-continuation-token': token } : {},
    });
    if (res.status !== 200) throw new Error(`listing Durable instances answered ${res.status}: ${await res.text()}`);
    for (const i of (await res.json()) as InstanceRow[]) out.push({ instanceId: i.instanceId, runtimeStatus: i.runtimeStatus });
    token = res.headers.get('x-ms-continuation-token');
    if (!token) return out;
  }
  throw new Error('listing Durable instances: more than 1000 pages');
}

/** Waits until every job row with the prefix is terminal (Succeeded, Failed, Cancelled); returns the rows. */
export async function waitAllTerminal(stack: Stack, prefix: string, expected: number, timeoutMs: number): Promise<JobRow[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await jobRows(stack, prefix);
    const open = rows.filter((r) => !TERMINAL.has(r.state));
    if (rows.length >= expected && open.length === 0) return rows;
    if (Date.now() > deadline) {
      throw new Error(
        `${open.length} of ${rows.length} job(s) with prefix ${prefix} not terminal after ${timeoutMs / 1000} s (expected ${expected} rows); e.g. ${open
          .slice(0, 5)
          .map((r) => `${r.id}=${r.state}`)
          .join(', ')}`,
      );
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** Waits until `check` returns a value (not undefined), polling. */
export async function eventually<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Runs `items` through `worker` with at most `concurrency` in flight. */
export async function runPool<T>(items: T[], concurrency: number, worker: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await worker(items[i] as T, i);
      }
    }),
  );
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}
