/**
 * A job without shards starts every node's download task at once (settings.emptyDownloadsAtOnce): one nodeTasksAdd
 * for all its nodes, not a round per `pullConcurrency` nodes, so its staging requests do not grow with the nodes
 * (docs/call-budgets.md, "Node tasks in task collections"). Runs started before the setting replay the bounded window.
 */
import { healthyJob, poolObservation } from './fakeActivities';
import { jobInput, replay, scheduledInputs, SETTINGS } from './jobReplay';

const NODES = 6;
const input = (id: string, emptyDownloadsAtOnce: boolean | undefined) => {
  const base = jobInput(id, { nodes: NODES, command: 'true', container: { runtime: 'none', pullConcurrency: 2 } });
  return { ...base, settings: { ...SETTINGS, ...(emptyDownloadsAtOnce === undefined ? {} : { emptyDownloadsAtOnce }) } };
};
const sixIdle = () => poolObservation(Array.from({ length: NODES }, () => 'idle'));

it("no shard: one nodeTasksAdd with every node's download task", async () => {
  const job = healthyJob({ poolObserve: sixIdle });
  const r = await replay(input('replay-empty-at-once', true), job);
  expect(job.finished()).toMatchObject({ state: 'Succeeded' });
  const adds = scheduledInputs(r.history, 'nodeTasksAdd');
  expect(adds.map((a) => a.tasks.length)).toEqual([NODES]);
});

it('a run started before the setting: the bounded window, pullConcurrency tasks per round', async () => {
  const job = healthyJob({ poolObserve: sixIdle });
  const r = await replay(input('replay-empty-window', undefined), job);
  expect(job.finished()).toMatchObject({ state: 'Succeeded' });
  const adds = scheduledInputs(r.history, 'nodeTasksAdd');
  expect(adds.length).toBeGreaterThan(1);
  expect(Math.max(...adds.map((a) => a.tasks.length))).toBeLessThanOrEqual(2);
  expect(adds.flatMap((a) => a.tasks).length).toBe(NODES);
});
