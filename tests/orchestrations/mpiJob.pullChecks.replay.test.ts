/**
 * The image tree's looks read a task's stdout (its digests) only when nobody knows them (issue 30, call budgets): the
 * registry seeds before the digests are pinned. A copy from a peer checks the digests against its source's and fails
 * otherwise, so its digests are its source's. The fake reads digests only for the tasks named in `digestsOf`, as
 * the activity does: at 14 and at 30 nodes, the same 10 reads (fails on the old stage: every successful task's).
 */
import { FAKE_IMAGE_DIGEST, healthyJob, poolObservation, preflightReport, fakeIps } from './fakeActivities';
import { jobInput, replay } from './jobReplay';
import type { NodeTaskObservation } from '../../shared/core/contract';

function treeJob(nodes: number) {
  const reads: string[] = [];
  const job = healthyJob({
    preflightCollect: () => preflightReport(fakeIps(nodes)),
    poolObserve: () => poolObservation(new Array<string>(nodes).fill('idle')),
    nodeTasksObserve: ({ taskIds, digests, digestsOf }) =>
      taskIds.map((id): NodeTaskObservation => {
        const read = !!digests && id.startsWith('pull-') && (!digestsOf || digestsOf.includes(id));
        if (read) reads.push(id);
        return { id, state: 'completed', exitCode: 0, nodeId: job.pinnedNode(id), ...(read ? { digests: [FAKE_IMAGE_DIGEST] } : {}) };
      }),
  });
  return { job, reads };
}

test.each([14, 30])("%i nodes: every node gets the images (the job succeeds), and only the 10 seeds' stdout is read", async (nodes) => {
  const { job, reads } = treeJob(nodes);
  await replay(
    jobInput(`replay-pull-checks-${nodes}`, { nodes, command: 'true', container: { runtime: 'docker', images: ['registry.example/hpc/app:1.0'] } }),
    job,
  );
  expect(job.finished().reason).toBeUndefined();
  expect(job.finished()).toMatchObject({ state: 'Succeeded' });
  expect(reads).toHaveLength(10);
  expect(new Set(reads).size).toBe(10);
});
