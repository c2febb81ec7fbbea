/**
 * Typed fake activities for replaying the real mpiJob orchestrator in memory (tests/durable/helpers/simulator):
 * each fake takes the contract's input and returns the contract's output (shared/core/contract/activities.ts), so a
 * renamed activity, a changed input or a result of the wrong shape breaks the test's build instead of the
 * orchestrator silently replaying against answers Batch would never give.
 */
import {
  ACTIVITY_NAMES,
  type ActivityInput,
  type ActivityName,
  type ActivityOutput,
  type JobOutcome,
  type NodeTaskObservation,
} from '../../shared/core/contract';
import type { PoolObservation } from '../../shared/core/planning/provisionPolicy';
import { expectedMasterUploads } from '../../shared/core/planning/outputsCheck';
import type { PreflightRun } from '../../shared/core/planning/preflight';
import type { Activity } from '../durable/helpers/simulator';

/** One activity, as the orchestrator sees it; `attempt` counts Durable's retries of the same call (1, 2, …). */
export type FakeActivity<N extends ActivityName> = (input: ActivityInput<N>, attempt: number) => ActivityOutput<N>;
export type FakeActivities = { [N in ActivityName]?: FakeActivity<N> };

function adapt<N extends ActivityName>(fakes: FakeActivities, name: N): Activity | undefined {
  const fake: FakeActivity<N> | undefined = fakes[name];
  // The one cast: the simulator hands back the JSON the orchestrator scheduled this activity with, and the
  // orchestrator can only schedule it with the contract's input (orchestrations/runtime/activityCalls.ts).
  return fake && ((input, attempt) => fake(input as ActivityInput<N>, attempt));
}

/** The simulator's untyped activity table (an activity without a fake fails when scheduled, as an unregistered one would). */
export function simulatorActivities(fakes: FakeActivities): Record<string, Activity> {
  const table: Record<string, Activity> = {};
  for (const name of ACTIVITY_NAMES) {
    const activity = adapt(fakes, name);
    if (activity) table[name] = activity;
  }
  return table;
}

/** Node i of a fake pool: node-i at 10.0.0.i, affinity aff-i. */
export const fakeNode = (i: number, state: string) => ({ id: `node-${i}`, state, ipAddress: `10.0.0.${i}`, affinityId: `aff-${i}` });

/** One observation of a fake pool whose node i is in states[i] (steady once every node is idle). */
export function poolObservation(states: string[]): PoolObservation {
  return {
    state: 'active',
    allocationState: states.every((s) => s === 'idle') ? 'steady' : 'resizing',
    currentDedicatedNodes: states.length,
    targetDedicatedNodes: states.length,
    resizeErrors: [],
    nodes: states.map((s, i) => fakeNode(i, s)),
  };
}

/**
 * What a preflight check's master prints, parsed, for nodes at `ips`: every node answered on ssh in `sshMs` with
 * 100 GB free, and each pair of neighbours ping-ponged at 2 µs and 10 GB/s (`slow` nodes' pairs at 5 ms and 5 MB/s;
 * `unreachable` nodes refused ssh and are left out of the ping-pong).
 */
export function preflightReport(ips: string[], opts: { slow?: string[]; unreachable?: string[]; sshMs?: number } = {}): PreflightRun {
  const down = new Set(opts.unreachable ?? []);
  const ranks = ips.filter((ip) => !down.has(ip));
  const slow = new Set(opts.slow ?? []);
  const pairs = (ranks.length === 2 ? [[0, 1]] : ranks.length > 2 ? ranks.map((_, i) => [i, (i + 1) % ranks.length]) : []).map(([a, b]) => {
    const bad = slow.has(ranks[a]) || slow.has(ranks[b]);
    return { a: ranks[a], b: ranks[b], latencyUs: bad ? 5_000 : 2, bandwidthMBps: bad ? 5 : 10_000 };
  });
  return {
    exitCode: 0,
    report: {
      probes: ips.map((ip, i) => ({
        ip,
        via: i === 0 ? 'local' : 'ssh',
        rc: down.has(ip) ? 255 : 0,
        ms: opts.sshMs ?? 40,
        ...(down.has(ip) ? { message: `ssh: connect to host ${ip} port 22: Connection refused` } : { freeKB: 100 * 1024 * 1024 }),
        missing: [],
      })),
      ...(ranks.length >= 2 ? { ranks, pairs } : { pairs: [], skipped: 'fewer-than-2-reachable-nodes' }),
    },
  };
}

/** The IPs of fakeNode 0..count-1. */
export const fakeIps = (count: number) => Array.from({ length: count }, (_, i) => fakeNode(i, 'idle').ipAddress);

export interface FakeJob {
  /** The fakes, with the overrides applied. */
  fakes: FakeActivities;
  /** Every outcome jobFinish was called with, in order. */
  finishes: JobOutcome[];
  /** The outcome jobFinish recorded (fails when it was never called). */
  finished(): JobOutcome;
  /** The node a node task was pinned to (aff-i is node-i), as the fake Batch ran it. */
  pinnedNode(taskId: string): string | undefined;
}

/**
 * Answers for every activity the pipeline calls, as Batch and Storage would for a healthy small job: admission grants
 * the job at once (no dependencies), the pool's two nodes are idle at the first look, node tasks run where they were
 * pinned and succeed, the MPI task is complete at the first look and exits 0, a deleted pool is gone at the next look.
 * `overrides` replace single activities.
 */
export function healthyJob(overrides: FakeActivities = {}): FakeJob {
  const finishes: JobOutcome[] = [];
  const pinned = new Map<string, string>();
  const completed = (id: string, digests?: number): NodeTaskObservation => ({
    id,
    state: 'completed',
    exitCode: 0,
    nodeId: pinned.get(id),
    ...fakeDigests(digests),
  });
  const fakes: FakeActivities = {
    admissionRequest: () => ({ state: 'granted', grant: 1, grantedAt: '2030-01-01T00:00:00.000Z' }),
    admissionRelease: () => undefined,
    dependenciesCheck: () => ({ state: 'met' }),
    jobEnded: () => undefined,
    jobTransition: () => undefined,
    jobFinish: ({ outcome }) => {
      finishes.push(outcome);
    },
    costPrice: ({ vmSize }) => ({ vmSize, pricePerNodeHour: 0.5, currency: 'USD', source: 'test table' }),
    poolCreate: () => ({ created: true }),
    poolInspect: () => ({ exists: true, state: 'active', vmSize: 'standard_d8s_v5', enableInterNodeCommunication: true, taskSlotsPerNode: 1 }),
    poolObserve: () => poolObservation(['idle', 'idle']),
    poolRemoveNodes: () => undefined,
    poolResize: () => undefined,
    poolDelete: () => ({ deleted: true }),
    batchJobCreate: ({ batchJobId }) => batchJobId,
    batchJobAutoComplete: () => undefined,
    batchJobTerminate: () => 'terminated',
    nodeTasksAdd: ({ tasks }) => {
      for (const t of tasks) pinned.set(t.id, t.affinityId.replace('aff-', 'node-'));
    },
    nodeTasksObserve: ({ taskIds, digests }) => taskIds.map((id) => completed(id, digests)),
    inputsList: () => [],
    sourcesMissing: () => [],
    shardCopy: ({ shard }) => ({ shardId: shard.id, bytes: shard.bytes, md5: 'bWQ1', skipped: false }),
    shardUrls: ({ shards }) => Object.fromEntries(shards.map((s) => [s.id, `https://${s.account}.blob.example/${s.container}/${s.blobName}?sas`])),
    stagedDataDelete: ({ containers }) => containers.length,
    mpiTaskAdd: () => undefined,
    mpiTaskObserve: () => ({ state: 'completed' }),
    mpiResultCollect: ({ taskId }) => ({ taskId, exitCode: 0, subtasks: [], logs: [], stdoutTail: '' }),
    mpiTaskTerminate: () => undefined,
    // The master held its two logs when the MPI task ended, and every upload the check looks for landed.
    mpiTaskUploads: ({ master, exitCode }) =>
      expectedMasterUploads(
        master,
        [
          { name: 'stdout.txt', isDirectory: false },
          { name: 'stderr.txt', isDirectory: false },
        ],
        exitCode,
      ),
    // The nodes' upload tasks: nothing found below the MPI task's directories, so nothing to look up.
    nodeTaskUploads: () => ({ names: [], more: 0, unchecked: [] }),
    outputsMissing: () => [],
    nodeLogsMissing: () => [],
    jobNote: () => undefined,
    preflightTaskAdd: () => undefined,
    preflightObserve: () => ({ state: 'completed' }),
    // Healthy figures for the first ten fake nodes: the check judges only the nodes of the attempt (by IP).
    preflightCollect: () => preflightReport(fakeIps(10)),
    ...overrides,
  };
  // Batch stops listing a pool once it is deleted, whatever the test's own poolObserve answered before.
  const deleted = new Set<string>();
  const { poolDelete, poolObserve } = fakes;
  fakes.poolDelete = (input, attempt) => {
    const out = poolDelete!(input, attempt);
    deleted.add(input.poolId);
    return out;
  };
  fakes.poolObserve = (input, attempt) =>
    deleted.has(input.poolId)
      ? { state: 'missing', allocationState: 'steady', currentDedicatedNodes: 0, targetDedicatedNodes: 0, resizeErrors: [], nodes: [] }
      : poolObserve!(input, attempt);
  return {
    fakes,
    finishes,
    finished: () => {
      if (finishes.length === 0) throw new Error('jobFinish was never called');
      return finishes[finishes.length - 1];
    },
    pinnedNode: (taskId) => pinned.get(taskId),
  };
}

/** The image digests a successful image transfer task prints (one per image) when the observer asks for them. */
export const FAKE_IMAGE_DIGEST = `sha256:${'d'.repeat(64)}`;
export function fakeDigests(count: number | undefined): Pick<NodeTaskObservation, 'digests'> {
  return count ? { digests: Array.from({ length: count }, () => FAKE_IMAGE_DIGEST) } : {};
}

/**
 * nodeTasksObserve answering as healthyJob's (every task completes where it was pinned), except that tasks whose id
 * starts with `prefix` and that ran on `nodeId` end as `failed` says (an exit code, Batch's failure, the output tail).
 */
export function nodeTasksFailingOn(
  job: FakeJob,
  prefix: string,
  nodeId: string,
  failed: Pick<NodeTaskObservation, 'exitCode' | 'failure' | 'outputTail'>,
): FakeActivity<'nodeTasksObserve'> {
  return ({ taskIds, digests }) =>
    taskIds.map((id): NodeTaskObservation => {
      const ranOn = job.pinnedNode(id);
      return id.startsWith(prefix) && ranOn === nodeId
        ? { id, state: 'completed', nodeId: ranOn, ...failed }
        : { id, state: 'completed', exitCode: 0, nodeId: ranOn, ...fakeDigests(digests) };
    });
}
