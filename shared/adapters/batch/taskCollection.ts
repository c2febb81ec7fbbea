/**
 * Adding many tasks in few requests: Batch's Task_AddCollection (POST /jobs/{jobId}/addtaskcollection) takes up to 100
 * tasks whose serialized collection is under 1 MB, and answers per task (success | clienterror | servererror, in any
 * order). One request per 100 node tasks instead of one per node, so the per-node part of a job stays in its tasks and
 * leaves its request count (docs/call-budgets.md, "Node tasks").
 *
 * Per the REST reference (shared/notes/azure-platform.md): only the failed tasks are retried, under the same ids;
 * `servererror` may be retried unchanged, `clienterror` may not, except TaskExists, which on a repeated add (the
 * activity ran twice, or a retried request whose first try went through) means the task is there: counted as added.
 */
import type { BatchServiceModels } from '@azure/batch';
import type { BatchContext } from './client';
import { isGone } from './common';
import { BatchError } from './errors';
import { backoffDelay, callWithRetry } from './retry';
import { listTasks, type AddTaskResult } from './tasks';

/** "The maximum number of tasks in a collection is 100." */
export const TASK_COLLECTION_MAX_TASKS = 100;
/** "The total serialized size of this collection must be less than 1MB": read as 10^6 bytes, the stricter reading. */
export const TASK_COLLECTION_MAX_BYTES = 1_000_000;

const bytesOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

/**
 * The tasks in request-sized chunks, in order: at most `maxTasks` each and a `{"value":[…]}` body under `maxBytes`.
 * A single task too large for a request on its own is refused (Batch would refuse it with RequestBodyTooLarge). Pure.
 */
export function taskCollectionChunks<T extends { id: string }>(
  tasks: readonly T[],
  maxTasks = TASK_COLLECTION_MAX_TASKS,
  maxBytes = TASK_COLLECTION_MAX_BYTES,
): T[][] {
  const envelope = bytesOf({ value: [] });
  const chunks: T[][] = [];
  let current: T[] = [];
  let size = envelope;
  for (const t of tasks) {
    const own = bytesOf(t);
    if (envelope + own >= maxBytes)
      throw new RangeError(`task ${t.id}: ${own} bytes serialized, more than one task collection request holds (< ${maxBytes} bytes)`);
    // One comma between elements.
    const added = own + (current.length ? 1 : 0);
    if (current.length === maxTasks || size + added >= maxBytes) {
      chunks.push(current);
      current = [];
      size = envelope;
    }
    size += own + (current.length ? 1 : 0);
    current.push(t);
  }
  if (current.length) chunks.push(current);
  return chunks;
}

/** What to do with one task's result: done (created or found), retry it, or fail the add. Pure. */
export function classifyTaskAddResult(r: Pick<BatchServiceModels.TaskAddResult, 'status' | 'error'>): 'created' | 'exists' | 'retry' | 'refused' {
  const status = String(r.status).toLowerCase();
  if (status === 'success') return 'created';
  if (status === 'servererror') return 'retry';
  return r.error?.code === 'TaskExists' ? 'exists' : 'refused';
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Adds the tasks with as few requests as the limits allow (taskCollectionChunks), retrying only the tasks whose result
 * was a server error, with the adapter's backoff, up to the retry policy's attempts. A request refused as a whole by a
 * completed job (a repeat after the job ended with its tasks) is answered by one list of the job's tasks: all there =
 * added. Results in the order of `tasks`.
 */
export async function addTaskCollection(
  ctx: BatchContext,
  batchJobId: string,
  tasks: readonly BatchServiceModels.TaskAddParameter[],
  operation = 'tasks.addCollection',
): Promise<AddTaskResult[]> {
  const results = new Map<string, AddTaskResult>();
  for (const chunk of taskCollectionChunks(tasks)) {
    for (const r of await addChunk(ctx, batchJobId, chunk, operation)) results.set(r.taskId, r);
  }
  return tasks.map((t) => results.get(t.id) ?? { taskId: t.id, created: false });
}

async function addChunk(
  ctx: BatchContext,
  batchJobId: string,
  chunk: readonly BatchServiceModels.TaskAddParameter[],
  operation: string,
): Promise<AddTaskResult[]> {
  const resource = `job ${batchJobId}`;
  const done: AddTaskResult[] = [];
  let pending = [...chunk];
  const { maxAttempts } = ctx.retry.policy;
  for (let attempt = 1; pending.length; attempt++) {
    let value: BatchServiceModels.TaskAddResult[];
    try {
      const res = await callWithRetry(ctx.retry, { operation, resource }, () => ctx.client.task.addCollection(batchJobId, pending));
      value = res.value ?? [];
    } catch (err) {
      if (err instanceof BatchError && err.code === 'JobCompleted') return [...done, ...(await presentAfterJobCompleted(ctx, batchJobId, pending, err))];
      throw err;
    }
    const byId = new Map(value.map((r) => [r.taskId.toLowerCase(), r]));
    const retry: BatchServiceModels.TaskAddParameter[] = [];
    let lastServerError: BatchServiceModels.TaskAddResult | undefined;
    for (const t of pending) {
      const r = byId.get(t.id.toLowerCase());
      // A task the service did not answer for was not added: it is retried like a server error.
      const verdict = r ? classifyTaskAddResult(r) : 'retry';
      if (verdict === 'created' || verdict === 'exists') done.push({ taskId: t.id, created: verdict === 'created' });
      else if (verdict === 'retry') {
        retry.push(t);
        lastServerError = r;
      } else {
        throw new BatchError({
          code: r?.error?.code ?? 'TaskAddFailed',
          status: 400,
          operation,
          resource: `task ${batchJobId}/${t.id}`,
          message: r?.error?.message?.value ?? 'the task was refused',
          details: Object.fromEntries((r?.error?.values ?? []).map((d) => [d.key ?? '', d.value ?? ''])),
        });
      }
    }
    if (retry.length && attempt >= maxAttempts) {
      throw new BatchError({
        code: lastServerError?.error?.code ?? 'TaskAddNotAnswered',
        operation,
        resource,
        attempts: attempt,
        message: `${retry.length} task(s) not added after ${attempt} attempts (${retry.map((t) => t.id).join(', ')}): ${lastServerError?.error?.message?.value ?? 'no result returned'}`,
      });
    }
    if (retry.length) {
      const delayMs = backoffDelay(attempt, ctx.retry.policy, ctx.retry.random ?? Math.random);
      ctx.retry.onRetry?.({ operation, resource, attempt, delayMs, code: lastServerError?.error?.code ?? 'TaskAddNotAnswered' });
      await (ctx.retry.sleep ?? realSleep)(delayMs);
    }
    pending = retry;
  }
  return done;
}

/** The job completed (it ends with its tasks): the add went through before if every task is listed. One request. */
async function presentAfterJobCompleted(
  ctx: BatchContext,
  batchJobId: string,
  pending: readonly BatchServiceModels.TaskAddParameter[],
  refused: BatchError,
): Promise<AddTaskResult[]> {
  const listed = new Set<string>();
  try {
    for (const t of await listTasks(ctx, batchJobId, { select: 'id' })) listed.add(t.taskId.toLowerCase());
  } catch (err) {
    if (isGone(err, ['JobNotFound'])) throw refused;
    throw err;
  }
  if (!pending.every((t) => listed.has(t.id.toLowerCase()))) throw refused;
  return pending.map((t) => ({ taskId: t.id, created: false }));
}
