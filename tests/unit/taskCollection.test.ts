/**
 * Task collections (shared/adapters/batch/taskCollection.ts): request-sized chunks (≤ 100 tasks, < 1 MB) and the per-task result
 * handling (retry only the server errors, under the same ids; TaskExists = added; any other client error fails naming
 * the task). A scripted client stands in for Batch's answers; the emulator's side is tests/calls/nodeTaskAdds.test.ts.
 */
import type { BatchServiceModels } from '@azure/batch';
import {
  addTaskCollection,
  BatchError,
  classifyTaskAddResult,
  taskCollectionChunks,
  TASK_COLLECTION_MAX_BYTES,
  type BatchContext,
} from '../../shared/adapters/batch';

type Param = BatchServiceModels.TaskAddParameter;
type Result = BatchServiceModels.TaskAddResult;
const task = (i: number, pad = 0): Param => ({
  id: `t${i}`,
  commandLine: '/bin/true',
  ...(pad ? { environmentSettings: [{ name: 'PAD', value: 'x'.repeat(pad) }] } : {}),
});

function scripted(answers: ((tasks: Param[]) => Result[] | Error)[]): { ctx: BatchContext; sent: string[][] } {
  const sent: string[][] = [];
  const addCollection = async (_job: string, tasks: Param[]) => {
    sent.push(tasks.map((t) => t.id));
    const a = answers[Math.min(sent.length - 1, answers.length - 1)](tasks);
    if (a instanceof Error) throw a;
    return { value: a };
  };
  const list = async () => Object.assign([{ id: 't0' }, { id: 't1' }], { odatanextLink: undefined });
  const ctx = {
    client: { task: { addCollection, list } },
    retry: { policy: { maxAttempts: 3, initialMs: 1, maxMs: 2, multiplier: 2, jitter: 0 }, sleep: async () => {} },
  } as unknown as BatchContext;
  return { ctx, sent };
}
const ok = (t: Param): Result => ({ status: 'success', taskId: t.id });
const err = (t: Param, status: string, code: string): Result => ({
  status: status as Result['status'],
  taskId: t.id,
  error: { code, message: { value: `${code} here` } },
});

describe('taskCollectionChunks', () => {
  test('250 small tasks: 100, 100, 50, in order', () => {
    const chunks = taskCollectionChunks(Array.from({ length: 250 }, (_, i) => task(i)));
    expect(chunks.map((c) => c.length)).toEqual([100, 100, 50]);
    expect(chunks.flat().map((t) => t.id)).toEqual(Array.from({ length: 250 }, (_, i) => `t${i}`));
  });

  test('large tasks: split by the serialized size, each request body under 1 MB', () => {
    const tasks = Array.from({ length: 20 }, (_, i) => task(i, 120_000));
    const chunks = taskCollectionChunks(tasks);
    expect(chunks.map((c) => c.length)).toEqual([8, 8, 4]);
    for (const c of chunks) expect(Buffer.byteLength(JSON.stringify({ value: c }))).toBeLessThan(TASK_COLLECTION_MAX_BYTES);
  });

  test('a task too large for any request is refused, naming it', () => {
    expect(() => taskCollectionChunks([task(0), task(1, TASK_COLLECTION_MAX_BYTES)])).toThrow(/task t1: .* bytes serialized/);
  });
});

test('classifyTaskAddResult: the wire values (lower case) and the enum names, in any case', () => {
  expect(classifyTaskAddResult({ status: 'success' })).toBe('created');
  const sdkName = (s: string) => s as unknown as Result['status'];
  expect(classifyTaskAddResult({ status: 'servererror' })).toBe('retry');
  expect(classifyTaskAddResult({ status: sdkName('serverError') })).toBe('retry');
  expect(classifyTaskAddResult({ status: 'clienterror', error: { code: 'TaskExists' } })).toBe('exists');
  expect(classifyTaskAddResult({ status: sdkName('clientError'), error: { code: 'InvalidPropertyValue' } })).toBe('refused');
});

describe('addTaskCollection', () => {
  test('one request per 100 tasks; results in the order given', async () => {
    const { ctx, sent } = scripted([(ts) => ts.map(ok).reverse()]);
    const res = await addTaskCollection(
      ctx,
      'j',
      Array.from({ length: 150 }, (_, i) => task(i)),
    );
    expect(sent.map((s) => s.length)).toEqual([100, 50]);
    expect(res.map((r) => r.taskId)).toEqual(Array.from({ length: 150 }, (_, i) => `t${i}`));
    expect(res.every((r) => r.created)).toBe(true);
  });

  test('server errors: only those tasks are sent again, under the same ids; TaskExists counts as added', async () => {
    const { ctx, sent } = scripted([
      (ts) => ts.map((t, i) => (i === 1 ? err(t, 'servererror', 'ServerBusy') : i === 2 ? err(t, 'clienterror', 'TaskExists') : ok(t))),
      (ts) => ts.map(ok),
    ]);
    const res = await addTaskCollection(ctx, 'j', [task(0), task(1), task(2)]);
    expect(sent).toEqual([['t0', 't1', 't2'], ['t1']]);
    expect(res).toEqual([
      { taskId: 't0', created: true },
      { taskId: 't1', created: true },
      { taskId: 't2', created: false },
    ]);
  });

  test("a task the answer leaves out is sent again; server errors past the policy's attempts fail, naming the tasks", async () => {
    const { ctx, sent } = scripted([(ts) => ts.slice(1).map(ok), (ts) => ts.map((t) => err(t, 'servererror', 'ServerBusy'))]);
    const failure = await addTaskCollection(ctx, 'j', [task(0), task(1)]).catch((e: unknown) => e);
    expect(sent).toEqual([['t0', 't1'], ['t0'], ['t0']]);
    expect(failure).toBeInstanceOf(BatchError);
    expect(failure).toMatchObject({ code: 'ServerBusy', attempts: 3 });
    expect(String((failure as Error).message)).toMatch(/t0/);
  });

  test('a client error other than TaskExists fails at once, naming the task and its code', async () => {
    const { ctx, sent } = scripted([(ts) => ts.map((t, i) => (i === 1 ? err(t, 'clienterror', 'InvalidPropertyValue') : ok(t)))]);
    await expect(addTaskCollection(ctx, 'j', [task(0), task(1)])).rejects.toMatchObject({ code: 'InvalidPropertyValue', resource: 'task j/t1' });
    expect(sent).toHaveLength(1);
  });

  test('a repeat after the job completed with its tasks: one list, all there = added; one missing = the refusal', async () => {
    const completed = () =>
      Object.assign(new Error('JobCompleted'), {
        statusCode: 409,
        code: 'JobCompleted',
        body: { code: 'JobCompleted', message: { value: 'The specified job is already in a completed state.' } },
      });
    const { ctx } = scripted([completed]);
    expect(await addTaskCollection(ctx, 'j', [task(0), task(1)])).toEqual([
      { taskId: 't0', created: false },
      { taskId: 't1', created: false },
    ]);
    await expect(addTaskCollection(ctx, 'j', [task(0), task(5)])).rejects.toMatchObject({ code: 'JobCompleted' });
  });
});
