/**
 * Every DurableClient operation, called through the library's real DurableClient (df.getClient in
 * the fixture's ClientOp function) against the engine's management API; plus the webhook URLs that
 * createCheckStatusResponse hands out, followed with plain HTTP as curl would.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { clientOp, durableUrl, getStatus, http, startDurableStack, startOrchestration, waitForStatus, type DurableStack, type Status } from './helpers/harness';

const execFileAsync = promisify(execFile);

let stack: DurableStack;

beforeAll(async () => {
  // A small page size so getStatusBy has to follow x-ms-continuation-token over several pages.
  stack = await startDurableStack({ statusPageSize: 3 });
});

afterAll(async () => {
  await stack?.stop();
});

test('startNew with and without an instance id, getStatus, and 404 for an unknown instance', async () => {
  const a = await clientOp(stack.baseUrl, { op: 'startNew', name: 'Chain', input: ['x'] });
  expect(typeof a.result).toBe('string');
  expect(a.result).toMatch(/^[0-9a-f]{32}$/);
  const b = await clientOp(stack.baseUrl, { op: 'startNew', name: 'Chain', input: ['y'], instanceId: 'my-chain-1' });
  expect(b.result).toBe('my-chain-1');
  await waitForStatus(stack.baseUrl, 'my-chain-1');
  const s = await clientOp(stack.baseUrl, { op: 'getStatus', instanceId: 'my-chain-1', options: { showHistory: true, showHistoryOutput: true } });
  const st = s.result as Status;
  expect(st.runtimeStatus).toBe('Completed');
  expect(st.output).toEqual(['Hello y']);
  // The extension answers `historyEvents`; the library's status object reads `history`, so it stays undefined, as in Azure.
  expect(st).not.toHaveProperty('history');
  const h = await getStatus(stack.baseUrl, 'my-chain-1', '?showHistory=true&showHistoryOutput=true');
  expect(h?.historyEvents?.some((e) => e.EventType === 'TaskCompleted' && e.FunctionName === 'Hello' && e.Result === 'Hello y')).toBe(true);
  const missing = await clientOp(stack.baseUrl, { op: 'getStatus', instanceId: 'no-such-instance' });
  expect(missing.error).toMatch(/404/);
  const raw = await http('GET', durableUrl(stack.baseUrl, `instances/no-such-instance`));
  expect(raw.status).toBe(404);
  const unknownFn = await http('POST', durableUrl(stack.baseUrl, `orchestrators/NoSuchOrchestrator`), {});
  expect(unknownFn.status).toBe(400);
});

test('concurrent starts of one new instance id create it exactly once (the others get 409)', async () => {
  const answers = await Promise.all(Array.from({ length: 8 }, () => http('POST', durableUrl(stack.baseUrl, `orchestrators/Chain/race-1`), ['r'])));
  expect(answers.filter((a) => a.status === 202)).toHaveLength(1);
  expect(answers.filter((a) => a.status === 409)).toHaveLength(7);
  const s = await waitForStatus(stack.baseUrl, 'race-1');
  expect(s.runtimeStatus).toBe('Completed');
});

test('getStatusBy pages over more than one page with x-ms-continuation-token', async () => {
  const from = new Date(Date.now() - 1000);
  const ids: string[] = [];
  for (let i = 0; i < 7; i++) ids.push((await startOrchestration(stack.baseUrl, 'Chain', [`p${i}`], `page-${i}`)).id);
  for (const id of ids) await waitForStatus(stack.baseUrl, id);
  const firstPage = await http('GET', durableUrl(stack.baseUrl, `instances/?createdTimeFrom=${from.toISOString()}&runtimeStatus=Completed`));
  expect(firstPage.status).toBe(200);
  expect((firstPage.body as unknown[]).length).toBeLessThanOrEqual(3);
  expect(firstPage.headers.get('x-ms-continuation-token')).toBeTruthy();
  const all = await clientOp(stack.baseUrl, { op: 'getStatusBy', filter: { createdTimeFrom: from.toISOString(), runtimeStatus: ['Completed'] } });
  const got = (all.result as Status[]).map((s) => s.instanceId).filter((id) => id.startsWith('page-'));
  expect(got.sort()).toEqual(ids.sort());
  const running = await clientOp(stack.baseUrl, { op: 'getStatusBy', filter: { createdTimeFrom: from.toISOString(), runtimeStatus: ['Running'] } });
  expect((running.result as Status[]).filter((s) => s.instanceId.startsWith('page-'))).toEqual([]);
});

test('raiseEvent delivers data; raising on a finished instance is tolerated (410)', async () => {
  await clientOp(stack.baseUrl, { op: 'startNew', name: 'Waiter', instanceId: 'waiter-1' });
  await waitForStatus(stack.baseUrl, 'waiter-1', ['Running']);
  expect(await clientOp(stack.baseUrl, { op: 'raiseEvent', instanceId: 'waiter-1', eventName: 'Go', input: { n: 7 } })).toEqual({ result: 'ok' });
  const s = await waitForStatus(stack.baseUrl, 'waiter-1');
  expect(s.output).toEqual({ n: 7 });
  const late = await http('POST', durableUrl(stack.baseUrl, `instances/waiter-1/raiseEvent/Go`), 1);
  expect(late.status).toBe(410);
  expect(await clientOp(stack.baseUrl, { op: 'raiseEvent', instanceId: 'waiter-1', eventName: 'Go', input: 1 })).toEqual({ result: 'ok' });
  const unknown = await clientOp(stack.baseUrl, { op: 'raiseEvent', instanceId: 'nobody', eventName: 'Go', input: 1 });
  expect(unknown.error).toMatch(/No instance with ID 'nobody'/);
});

test('suspend parks events until resume; terminate ends the instance with the reason', async () => {
  await clientOp(stack.baseUrl, { op: 'startNew', name: 'Waiter', instanceId: 'susp-1' });
  await waitForStatus(stack.baseUrl, 'susp-1', ['Running']);
  await clientOp(stack.baseUrl, { op: 'suspend', instanceId: 'susp-1', reason: 'maintenance' });
  await waitForStatus(stack.baseUrl, 'susp-1', ['Suspended']);
  await clientOp(stack.baseUrl, { op: 'raiseEvent', instanceId: 'susp-1', eventName: 'Go', input: 'parked' });
  await new Promise((r) => setTimeout(r, 600));
  expect((await getStatus(stack.baseUrl, 'susp-1'))?.runtimeStatus).toBe('Suspended');
  await clientOp(stack.baseUrl, { op: 'resume', instanceId: 'susp-1', reason: 'done' });
  const s = await waitForStatus(stack.baseUrl, 'susp-1');
  expect(s).toMatchObject({ runtimeStatus: 'Completed', output: 'parked' });

  await clientOp(stack.baseUrl, { op: 'startNew', name: 'Waiter', instanceId: 'term-1' });
  await waitForStatus(stack.baseUrl, 'term-1', ['Running']);
  expect(await clientOp(stack.baseUrl, { op: 'terminate', instanceId: 'term-1', reason: 'no longer needed' })).toEqual({ result: 'ok' });
  const t = await waitForStatus(stack.baseUrl, 'term-1');
  expect(t).toMatchObject({ runtimeStatus: 'Terminated', output: 'no longer needed' });
  const again = await http('POST', durableUrl(stack.baseUrl, `instances/term-1/terminate?reason=x`));
  expect(again.status).toBe(410);
});

test('purge one instance and purge by filter', async () => {
  const from = new Date(Date.now() - 1000);
  await clientOp(stack.baseUrl, { op: 'startNew', name: 'Chain', input: ['a'], instanceId: 'purge-1' });
  await clientOp(stack.baseUrl, { op: 'startNew', name: 'Chain', input: ['b'], instanceId: 'purge-2' });
  await clientOp(stack.baseUrl, { op: 'startNew', name: 'Chain', input: ['c'], instanceId: 'purge-3' });
  for (const id of ['purge-1', 'purge-2', 'purge-3']) await waitForStatus(stack.baseUrl, id);
  expect(await clientOp(stack.baseUrl, { op: 'purge', instanceId: 'purge-1' })).toEqual({ result: { instancesDeleted: 1 } });
  expect(await getStatus(stack.baseUrl, 'purge-1')).toBeUndefined();
  expect(await clientOp(stack.baseUrl, { op: 'purge', instanceId: 'purge-1' })).toEqual({ result: { instancesDeleted: 0 } });
  const noFrom = await http('DELETE', durableUrl(stack.baseUrl, `instances/?runtimeStatus=Completed`));
  expect(noFrom.status).toBe(400);
  const many = await clientOp(stack.baseUrl, { op: 'purgeBy', filter: { createdTimeFrom: from.toISOString(), runtimeStatus: ['Completed'] } });
  expect((many.result as { instancesDeleted: number }).instancesDeleted).toBeGreaterThanOrEqual(2);
  expect(await getStatus(stack.baseUrl, 'purge-2')).toBeUndefined();
  expect(await getStatus(stack.baseUrl, 'purge-3')).toBeUndefined();
});

test('createCheckStatusResponse URLs work when followed over plain HTTP', async () => {
  const res = await http('POST', `${stack.baseUrl}/api/orchestrators/Waiter/curl-1`, null);
  expect(res.status).toBe(202);
  const links = res.body as Record<string, string>;
  expect(res.headers.get('location')).toBe(links.statusQueryGetUri);
  expect(new URL(links.statusQueryGetUri).origin).toBe(stack.baseUrl);
  const running = await http('GET', links.statusQueryGetUri);
  expect([200, 202]).toContain(running.status);
  expect((running.body as Status).instanceId).toBe('curl-1');
  await waitForStatus(stack.baseUrl, 'curl-1', ['Running']);
  const sent = await http('POST', links.sendEventPostUri.replace('{eventName}', 'Go'), 'via-curl');
  expect(sent.status).toBe(202);
  await waitForStatus(stack.baseUrl, 'curl-1');
  const done = await http('GET', links.statusQueryGetUri);
  expect(done.status).toBe(200);
  expect(done.body).toMatchObject({ runtimeStatus: 'Completed', output: 'via-curl' });
  const purged = await http('DELETE', links.purgeHistoryDeleteUri);
  expect(purged.body).toEqual({ instancesDeleted: 1 });

  const t = await http('POST', `${stack.baseUrl}/api/orchestrators/Waiter/curl-2`, null);
  const tl = t.body as Record<string, string>;
  await waitForStatus(stack.baseUrl, 'curl-2', ['Running']);
  expect((await http('POST', tl.terminatePostUri.replace('{text}', 'bye'))).status).toBe(202);
  expect(await waitForStatus(stack.baseUrl, 'curl-2')).toMatchObject({ runtimeStatus: 'Terminated', output: 'bye' });
});

test('the timeline command prints an instance history from the task hub', async () => {
  const { id } = await startOrchestration(stack.baseUrl, 'Retry', 'timeline-key', 'timeline-1');
  await waitForStatus(stack.baseUrl, id);
  const { stdout } = await execFileAsync(
    process.execPath,
    ['--import', 'tsx', 'local/durable/timeline.ts', id, '--conn', stack.azurite.connectionString(), '--hub', 'DurableTestHub'],
    {
      cwd: path.resolve(__dirname, '../..'),
      env: { ...process.env, NODE_OPTIONS: '' },
    },
  );
  expect(stdout).toContain('instance timeline-1  orchestrator Retry  status Completed');
  expect(stdout).toContain('-- episode 1 --');
  expect(stdout).toMatch(/TaskScheduled #0 Double/);
  expect(stdout).toMatch(/TaskFailed task #1 reason=Activity function 'Flaky' failed/);
  expect(stdout).toMatch(/TimerCreated #2/);
  expect(stdout).toMatch(/ExecutionCompleted Completed result=/);
  const route = await fetch(durableUrl(stack.baseUrl, `instances/${id}/timeline`));
  expect(route.status).toBe(200);
  expect(await route.text()).toBe(stdout);
  expect((await fetch(durableUrl(stack.baseUrl, `instances/nobody/timeline`))).status).toBe(404);
});
