/**
 * The PullingImages stage replayed with the image tree (imageDistribution: peers, the default) on 14 nodes: 10 seeds
 * pull from the registry, 4 nodes copy from a seed over ssh, all issued at once; a copy whose source is lost (exit
 * 75) is re-issued on another source under its next attempt's id; with imageDistribution: registry every node pulls.
 */
import { FAKE_IMAGE_DIGEST, fakeNode, healthyJob, poolObservation, preflightReport, fakeIps } from './fakeActivities';
import { jobInput, replay } from './jobReplay';
import type { NodeTaskObservation, NodeTaskRequest } from '../../shared/core/contract';
import { splitShellWords } from '../../shared/core/mpi/shellWords';

const NODES = 14;
const script = (t: NodeTaskRequest) => splitShellWords(t.commandLine)[2];
const sourceIp = (t: NodeTaskRequest) => /ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o ConnectTimeout=20 (\S+) /.exec(script(t))?.[1];

function input(id: string, extra: Record<string, unknown> = {}) {
  return jobInput(id, { nodes: NODES, command: 'true', container: { runtime: 'docker', images: ['registry.example/hpc/app:1.0'], ...extra } });
}

test('10 seeds pull from the registry, the other nodes copy from them, all issued at once; every node ends holding the digest', async () => {
  const adds: NodeTaskRequest[][] = [];
  const observed: { digests?: number }[] = [];
  const job = healthyJob({
    nodeTasksAdd: ({ tasks }) => void adds.push(tasks.filter((t) => t.id.startsWith('pull-'))),
    preflightCollect: () => preflightReport(fakeIps(NODES)),
    poolObserve: () => poolObservation(new Array<string>(NODES).fill('idle')),
  });
  const observe = job.fakes.nodeTasksObserve!;
  job.fakes.nodeTasksObserve = (req, attempt) => {
    if (req.taskIds.some((id) => id.startsWith('pull-'))) observed.push({ digests: req.digests });
    return observe(req, attempt);
  };
  await replay(input('replay-tree'), job);
  expect(job.finished().reason).toBeUndefined();
  expect(job.finished()).toMatchObject({ state: 'Succeeded' });
  const pulls = adds.filter((a) => a.length);
  expect(pulls).toHaveLength(1);
  const [first] = pulls;
  expect(first).toHaveLength(NODES);
  const seeds = first.filter((t) => !script(t).includes('ssh '));
  const copies = first.filter((t) => script(t).includes('ssh '));
  expect(seeds).toHaveLength(10);
  const seedIps = new Set(seeds.map((t) => `10.0.0.${t.affinityId.slice(4)}`));
  for (const t of seeds) expect(script(t)).toContain('docker pull registry.example/hpc/app:1.0');
  expect(copies).toHaveLength(4);
  // Each copy comes from a different seed (one copy served at a time per node), by the seed's address.
  expect(new Set(copies.map(sourceIp)).size).toBe(4);
  for (const t of copies) expect(seedIps.has(sourceIp(t)!)).toBe(true);
  for (const t of copies) expect(script(t)).toContain('docker save registry.example/hpc/app:1.0');
  expect(observed.every((o) => o.digests === 1)).toBe(true);
});

test('a copy whose source is lost is issued again from another source; a node reporting another digest is retried', async () => {
  const adds: NodeTaskRequest[] = [];
  let lostOnce = true;
  let badOnce = true;
  const job = healthyJob({
    nodeTasksAdd: ({ tasks }) => void adds.push(...tasks.filter((t) => t.id.startsWith('pull-'))),
    preflightCollect: () => preflightReport(fakeIps(NODES)),
    poolObserve: () => poolObservation(new Array<string>(NODES).fill('idle')),
    nodeTasksObserve: ({ taskIds, digests }) =>
      taskIds.map((id): NodeTaskObservation => {
        const node = job.pinnedNode(id);
        if (id === 'pull-10-a1' && lostOnce) {
          lostOnce = false;
          return {
            id,
            state: 'completed',
            exitCode: 75,
            nodeId: node,
            failure: 'FailureExitCode: exit 75',
            outputTail: '[mpijob] source node node-0 (10.0.0.0): has not got the images',
          };
        }
        if (id === 'pull-11-a1' && badOnce) {
          badOnce = false;
          return { id, state: 'completed', exitCode: 0, nodeId: node, digests: [`sha256:${'e'.repeat(64)}`] };
        }
        return { id, state: 'completed', exitCode: 0, nodeId: node, ...(digests ? { digests: [FAKE_IMAGE_DIGEST] } : {}) };
      }),
  });
  await replay(input('replay-tree-lost'), job);
  expect(job.finished().reason).toBeUndefined();
  expect(job.finished()).toMatchObject({ state: 'Succeeded' });
  const byId = new Map(adds.map((t) => [t.id, t]));
  const again = byId.get('pull-10-a2');
  expect(again).toBeDefined();
  expect(sourceIp(again!)).not.toBe(sourceIp(byId.get('pull-10-a1')!));
  // The second try carries the digest the seeds pinned, and the node with the wrong digest is tried again.
  expect(script(again!)).toContain(FAKE_IMAGE_DIGEST);
  expect(byId.get('pull-11-a2')).toBeDefined();
  expect(sourceIp(byId.get('pull-11-a2')!)).toBeDefined();
  // Nobody went to the registry beyond the 10 seeds.
  expect([...byId.values()].filter((t) => !script(t).includes('ssh '))).toHaveLength(10);
});

test('imageDistribution: registry keeps the window: every node pulls, 10 at a time', async () => {
  const adds: NodeTaskRequest[][] = [];
  const job = healthyJob({
    nodeTasksAdd: ({ tasks }) => void adds.push(tasks.filter((t) => t.id.startsWith('pull-'))),
    preflightCollect: () => preflightReport(fakeIps(NODES)),
    poolObserve: () => poolObservation(new Array<string>(NODES).fill('idle')),
  });
  await replay(input('replay-window', { imageDistribution: 'registry' }), job);
  expect(job.finished().reason).toBeUndefined();
  expect(job.finished()).toMatchObject({ state: 'Succeeded' });
  const pulls = adds.filter((a) => a.length);
  expect(pulls[0]).toHaveLength(10);
  expect(pulls.flat()).toHaveLength(NODES);
  for (const t of pulls.flat()) expect(script(t)).not.toContain('ssh ');
});

test('a node the preflight replaces copies the image from a node that holds it, not from the registry', async () => {
  // A fake pool whose node-1 the first check cannot reach: removed, and a resize brings node-2.
  let nodes = [0, 1].map((i) => fakeNode(i, 'idle'));
  let checks = 0;
  const adds: NodeTaskRequest[] = [];
  const job = healthyJob({
    poolObserve: () => ({
      state: 'active',
      allocationState: 'steady',
      currentDedicatedNodes: nodes.length,
      targetDedicatedNodes: nodes.length,
      resizeErrors: [],
      nodes: nodes.map((n) => ({ ...n })),
    }),
    poolRemoveNodes: ({ nodeIds }) => void (nodes = nodes.filter((n) => !nodeIds.includes(n.id))),
    poolResize: ({ target }) => {
      while (nodes.length < target) nodes.push(fakeNode(2, 'idle'));
    },
    preflightCollect: () =>
      preflightReport(
        nodes.map((n) => n.ipAddress),
        ++checks === 1 ? { unreachable: [fakeNode(1, 'idle').ipAddress] } : {},
      ),
    nodeTasksAdd: ({ tasks }) => void adds.push(...tasks.filter((t) => t.id.startsWith('pull-'))),
  });
  await replay(jobInput('replay-tree-replace', { nodes: 2, command: 'true', container: { runtime: 'docker', images: ['registry.example/hpc/app:1.0'] } }), job);
  expect(job.finished().reason).toBeUndefined();
  const replacement = adds.find((t) => t.id === 'pull-p1-0-a1')!;
  expect(replacement.affinityId).toBe('aff-2');
  expect(sourceIp(replacement)).toBe('10.0.0.0');
  expect(adds.filter((t) => !script(t).includes('ssh '))).toHaveLength(2);
});
