/**
 * The mpiJob orchestrator replayed in memory by the library's own executor (tests/durable/helpers/simulator):
 * activities are plain functions answering like Batch would, the clock moves one minute per episode, and every
 * assertion reads the orchestration's history or the outcome it hands to jobFinish. No I/O, no stack: this is
 * where the budget guard during provisioning, the cleanup's parallel requests and the Running stage's polling
 * bound are pinned down.
 */
import { parseJobSpec } from '../../shared/spec';
import { mpiJobOrchestrator } from '../../orchestrations/mpiJob';
import type { JobOutcome, MpiJobInput, PipelineSettings } from '../../shared/contract';
import { EventType, type HistoryEvent } from '../../local/durable/history';
import { simulate, type Activity } from '../durable/helpers/simulator';
import { smallSpec } from '../ops/helpers';

const STEP_MS = 60_000;
const SETTINGS: PipelineSettings = {
  poll: { initialMs: 10_000, maxMs: 60_000, factor: 2 },
  stagingAccounts: ['stage0'],
  copyConcurrency: 4,
  sasMarginMinutes: 60,
  sasMaxLifetimeMinutes: 7 * 24 * 60,
  nodeTaskMaxAttempts: 3,
};

function input(id: string, opts: Parameters<typeof smallSpec>[1]): MpiJobInput {
  const parsed = parseJobSpec(smallSpec(id, opts), 'application/yaml');
  if (!parsed.ok) throw new Error(`test spec invalid: ${JSON.stringify(parsed.errors)}`);
  return { jobId: id, spec: parsed.spec, settings: SETTINGS };
}

const node = (i: number, state: string) => ({ id: `node-${i}`, state, ipAddress: `10.0.0.${i}`, affinityId: `aff-${i}` });
const observation = (states: string[]) => ({
  state: 'active', allocationState: states.every((s) => s === 'idle') ? 'steady' : 'resizing',
  currentDedicatedNodes: states.length, targetDedicatedNodes: states.length, resizeErrors: [], nodes: states.map((s, i) => node(i, s)),
});

/** Answers for every activity the pipeline calls, as Batch and Storage would for a healthy small job. */
function activities(overrides: Record<string, Activity> = {}): { impl: Record<string, Activity>; finished: () => JobOutcome } {
  let outcome: JobOutcome | undefined;
  // Node tasks (the native runtime's readiness check) run where they were pinned: aff-i is node-i.
  const pinned = new Map<string, string>();
  const impl: Record<string, Activity> = {
    jobTransition: () => null,
    jobFinish: (i) => { outcome = (i as { outcome: JobOutcome }).outcome; return null; },
    costPrice: (i) => ({ vmSize: (i as { vmSize: string }).vmSize, pricePerNodeHour: 0.5, currency: 'USD', source: 'test table' }),
    poolCreate: () => null,
    poolObserve: () => observation(['idle', 'idle']),
    poolDelete: () => null,
    batchJobCreate: (i) => (i as { batchJobId: string }).batchJobId,
    batchJobAutoComplete: () => null,
    batchJobTerminate: () => null,
    nodeTasksAdd: (i) => {
      for (const t of (i as { tasks: { id: string; affinityId: string }[] }).tasks) pinned.set(t.id, t.affinityId.replace('aff-', 'node-'));
      return null;
    },
    nodeTasksObserve: (i) => (i as { taskIds: string[] }).taskIds.map((id) => ({ id, state: 'completed', exitCode: 0, nodeId: pinned.get(id) })),
    inputsList: () => [],
    mpiTaskAdd: () => null,
    mpiTaskObserve: () => ({ state: 'completed' }),
    mpiResultCollect: () => ({ exitCode: 0, subtasks: [], logs: [], stdoutTail: '' }),
    stagedDataDelete: () => null,
    ...overrides,
  };
  return { impl, finished: () => { if (!outcome) throw new Error('jobFinish was never called'); return outcome; } };
}

const scheduled = (history: HistoryEvent[]) => history.filter((e) => e.EventType === EventType.TaskScheduled).map((e) => e.Name);

describe('mpiJob orchestrator, replayed', () => {
  it('checks the budget while provisioning: nodes that never get ready are cancelled with reason budget, billed and deleted', async () => {
    // Two nodes allocated and never ready; 2 nodes x 1 min per poll = 1/30 node-hour per poll, limit 0.1.
    const a = activities({ poolObserve: () => observation(['starting', 'starting']) });
    const r = await simulate(mpiJobOrchestrator, input('replay-budget', { nodes: 2, command: 'true', limits: { maxNodeHours: 0.1 } }), a.impl, { clockStepMs: STEP_MS });
    const outcome = a.finished();
    expect(outcome.state).toBe('Cancelled');
    // Seen at the first poll past the limit (a poll here is two steps: observe, then the timer).
    const used = Number(/^budget: ([\d.]+) node-hours used, limit maxNodeHours 0\.1\b/.exec(outcome.reason ?? '')?.[1]);
    expect(used).toBeGreaterThan(0.1);
    expect(used).toBeLessThanOrEqual(0.1 + (2 * 2 * STEP_MS) / 3_600_000 + 0.0001);
    // Billed for both allocated nodes from the pool's creation to its deletion request.
    expect(outcome.result.cost).toMatchObject({ nodes: 2, pricePerNodeHour: 0.5 });
    expect(outcome.result.cost!.nodeMinutes.dedicated).toBe(2 * outcome.result.cost!.minutes);
    expect(outcome.result.cost!.nodeMinutes.dedicated).toBeGreaterThan(used * 60);
    // No Batch job existed yet: the pool we created is deleted, nothing else runs.
    expect(scheduled(r.history)).toEqual(expect.arrayContaining(['poolDelete']));
    expect(scheduled(r.history)).not.toContain('batchJobCreate');
    expect(scheduled(r.history)).not.toContain('batchJobTerminate');
  });

  it('does not bill a reused pool while waiting for its nodes, and bills the nodes it runs on once ready', async () => {
    let polls = 0;
    let readyAt = '';
    const a = activities({
      poolInspect: () => ({ exists: true, state: 'active', vmSize: 'standard_d8s_v5', enableInterNodeCommunication: true, taskSlotsPerNode: 1 }),
      poolObserve: () => observation(++polls < 6 ? ['running', 'running'] : ['idle', 'idle']),
    });
    // Five polls (10 min) waiting on someone else's busy nodes would take the job over its limit if they counted.
    const r = await simulate(mpiJobOrchestrator, input('replay-reuse', { command: 'true', pool: { poolId: 'shared', nodes: 2 }, limits: { maxNodeHours: 0.55 } }), a.impl, { clockStepMs: STEP_MS });
    // The orchestrator step that saw the nodes idle: the one that got the 6th poolObserve answer.
    const observes = r.history.filter((e) => e.EventType === EventType.TaskScheduled && e.Name === 'poolObserve').map((e) => e.EventId);
    const answer = r.history.findIndex((e) => e.EventType === EventType.TaskCompleted && e.TaskScheduledId === observes[5]);
    readyAt = [...r.history.slice(0, answer)].reverse().find((e) => e.EventType === EventType.OrchestratorStarted)!.Timestamp;
    const outcome = a.finished();
    expect(outcome).toMatchObject({ state: 'Succeeded' });
    // Billed from the poll that found the nodes idle: the waiting minutes are not this job's.
    expect(outcome.result.cost?.nodes).toBe(2);
    expect(outcome.result.cost!.allocatedAt).toBe(readyAt);
    expect(outcome.result.cost!.nodeMinutes.dedicated).toBe(2 * outcome.result.cost!.minutes);
  });

  it('requests the Batch job termination and the pool deletion together once the MPI task ends', async () => {
    const a = activities();
    const r = await simulate(mpiJobOrchestrator, input('replay-cleanup', { nodes: 2, command: 'true' }), a.impl, { clockStepMs: STEP_MS });
    expect(a.finished()).toMatchObject({ state: 'Succeeded' });
    const at = (name: string) => r.history.findIndex((e) => e.EventType === EventType.TaskScheduled && e.Name === name);
    const answered = (name: string) => {
      const id = r.history[at(name)].EventId;
      return r.history.findIndex((e) => e.EventType === EventType.TaskCompleted && e.TaskScheduledId === id);
    };
    expect(at('poolDelete')).toBeGreaterThan(0);
    // Both scheduled before either was answered: one round trip, not two.
    expect(at('poolDelete')).toBeLessThan(answered('batchJobTerminate'));
    expect(at('batchJobTerminate')).toBeLessThan(answered('poolDelete'));
  });

  it('polls the running MPI task at most every half polling interval', async () => {
    let observed = 0;
    const a = activities({ mpiTaskObserve: () => ({ state: ++observed < 8 ? 'running' : 'completed' }) });
    const r = await simulate(mpiJobOrchestrator, input('replay-poll', { nodes: 2, command: 'true' }), a.impl, { clockStepMs: STEP_MS });
    expect(a.finished()).toMatchObject({ state: 'Succeeded' });
    // Each timer's delay: its fire time minus the orchestrator step that created it.
    const delays: number[] = [];
    let stepAt = 0;
    const running = r.history.findIndex((e) => e.EventType === EventType.TaskScheduled && e.Name === 'mpiTaskAdd');
    for (const e of r.history.slice(running)) {
      if (e.EventType === EventType.OrchestratorStarted) stepAt = Date.parse(e.Timestamp);
      if (e.EventType === EventType.TimerCreated) delays.push(Date.parse(e.FireAt!) - stepAt);
    }
    expect(delays).toEqual([10_000, 20_000, 30_000, 30_000, 30_000, 30_000, 30_000]);
  });
});
