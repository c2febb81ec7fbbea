/**
 * A sub-orchestration that continues as new, as the Durable extension runs it (DTFx keeps the parent on the new
 * execution's ExecutionStarted; the Azure Storage provider keeps only the current execution's history): same instance
 * id, history reset at each new execution, the parent told once, when the last execution completes.
 */
import { TableClient } from '@azure/data-tables';
import { getStatus, startDurableStack, startOrchestration, waitForStatus, type DurableStack } from './helpers/harness';

let stack: DurableStack;

beforeAll(async () => {
  stack = await startDurableStack();
});

afterAll(async () => {
  await stack?.stop();
});

/** The History table's rows of one instance (its partition), sentinel aside, with their execution ids. */
async function historyRows(instanceId: string): Promise<{ rowKey: string; executionId: string }[]> {
  const client = TableClient.fromConnectionString(stack.azurite.connectionString(), 'DurableTestHubHistory', { allowInsecureConnection: true });
  const out: { rowKey: string; executionId: string }[] = [];
  for await (const e of client.listEntities<Record<string, unknown>>({ queryOptions: { filter: `PartitionKey eq '${instanceId}'` } })) {
    if (String(e.rowKey).startsWith('~')) continue;
    out.push({ rowKey: String(e.rowKey), executionId: String(e.ExecutionId) });
  }
  return out;
}

test('a child that continues as new keeps its instance id, resets its history and answers its parent once', async () => {
  const childId = 'can-child-1';
  const { id } = await startOrchestration(stack.baseUrl, 'CounterParent', childId, 'can-parent-1');
  const parent = await waitForStatus(stack.baseUrl, id);
  expect(parent.runtimeStatus).toBe('Completed');
  // The output of the last execution (input 3), not of the first.
  expect(parent.output).toEqual({ child: { n: 3, doubled: 6 } });

  const child = await getStatus(stack.baseUrl, childId, '?showHistory=true');
  expect(child).toMatchObject({ instanceId: childId, runtimeStatus: 'Completed', input: 3, output: { n: 3, doubled: 6 } });
  // Only the last execution's events: it started with input 3 and never continued as new.
  const types = (child?.historyEvents ?? []).map((e) => e.EventType);
  expect(types.filter((t) => t === 'ExecutionStarted')).toHaveLength(1);
  expect(types).not.toContain('ContinueAsNew');

  // One answer in the parent's history, for one created sub-orchestration.
  const p = await getStatus(stack.baseUrl, id, '?showHistory=true');
  const events = (p?.historyEvents ?? []).map((e) => e.EventType);
  expect(events.filter((t) => t === 'SubOrchestrationInstanceCompleted')).toHaveLength(1);

  // In the table: the child's rows all belong to one execution, its fourth (three continue-as-new before it).
  const rows = await historyRows(childId);
  expect(rows.length).toBeGreaterThan(0);
  expect(new Set(rows.map((r) => r.executionId)).size).toBe(1);
  expect(rows[0].executionId).toMatch(/~3$/);
});
