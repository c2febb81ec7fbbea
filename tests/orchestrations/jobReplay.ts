/**
 * Replaying the real mpiJob orchestrator against typed fake activities (fakeActivities.ts) with the
 * durable-functions library's own executor (tests/durable/helpers/simulator), and reading what it did from the
 * orchestration history: which activities it scheduled, in which order, with which input.
 */
import { parseJobSpec } from '../../shared/core/spec';
import { mpiJobOrchestrator } from '../../orchestrations/mpiJob';
import { MPI_WAIT_ORCHESTRATION, mpiWaitOrchestrator } from '../../orchestrations/stages/mpiWait';
import {
  CANCEL_EVENT,
  MPI_WAIT_POLLS_PER_GENERATION,
  type ActivityInput,
  type ActivityName,
  type CancelEventData,
  type MpiJobInput,
  type PipelineSettings,
} from '../../shared/core/contract';
import type { JobState } from '../../shared/core/state/states';
import type { ListedInputBlob } from '../../shared/adapters/storage/listing';
import { EventType, type HistoryEvent } from '../../local/durable/history';
import { simulate, type SimOptions, type SimResult } from '../durable/helpers/simulator';
import { smallSpec } from '../ops/helpers';
import { simulatorActivities, type FakeJob } from './fakeActivities';

/** How far the simulated clock moves per orchestrator episode. */
export const STEP_MS = 60_000;

export const SETTINGS: PipelineSettings = {
  poll: { initialMs: 10_000, maxMs: 60_000, factor: 2 },
  stagingAccounts: ['stage0'],
  copyConcurrency: 4,
  sasMarginMinutes: 60,
  sasMaxLifetimeMinutes: 7 * 24 * 60,
  nodeTaskMaxAttempts: 3,
  mpiWaitPollsPerGeneration: MPI_WAIT_POLLS_PER_GENERATION,
};

/** The orchestration input for a small native Open MPI job (tests/ops/helpers smallSpec), parsed like the intake does. */
export function jobInput(id: string, opts: Parameters<typeof smallSpec>[1]): MpiJobInput {
  const parsed = parseJobSpec(smallSpec(id, opts), 'application/yaml');
  if (!parsed.ok) throw new Error(`test spec invalid: ${JSON.stringify(parsed.errors)}`);
  return { jobId: id, spec: parsed.spec, settings: SETTINGS };
}

/** Two nodes, one image to pull, input data to stage (see threeShards): every stage has work and waits on Batch. */
export const pipelineJob = (id: string) =>
  jobInput(id, {
    nodes: 2,
    command: 'app',
    container: { runtime: 'docker', images: ['registry.example.com/hpc/app:1.0'], pullConcurrency: 1 },
    data: { inputs: [{ account: 'inputsacct', container: 'inputs', prefix: 'deck/' }] },
  });

/** The input listing of pipelineJob: 270 MB in three 90 MB blobs (three shards). */
export const threeShards = (): ListedInputBlob[] =>
  ['a.bin', 'b.bin', 'c.bin'].map((n) => ({ account: 'inputsacct', container: 'inputs', name: `deck/${n}`, size: 90_000_000 }));

export function replay(input: MpiJobInput, job: FakeJob, opts: SimOptions = {}): Promise<SimResult> {
  return simulate(mpiJobOrchestrator, input, simulatorActivities(job.fakes), {
    clockStepMs: STEP_MS,
    orchestrators: { [MPI_WAIT_ORCHESTRATION]: mpiWaitOrchestrator },
    ...opts,
  });
}

/** Every activity the orchestrator scheduled, in order (each retry of a call with retry options appears again). */
export function scheduled(history: HistoryEvent[]): ActivityName[] {
  return history.filter((e) => e.EventType === EventType.TaskScheduled).map((e) => e.Name as ActivityName);
}

/** The input an activity was scheduled with: JSON the orchestrator wrote, through the contract's typed calls. */
function inputOf<N extends ActivityName>(_name: N, json: string | undefined): ActivityInput<N> {
  return JSON.parse(json ?? 'null') as ActivityInput<N>;
}

/** The inputs `name` was scheduled with, in order (the history holds what the orchestrator passed). */
export function scheduledInputs<N extends ActivityName>(history: HistoryEvent[], name: N): ActivityInput<N>[] {
  return history.filter((e) => e.EventType === EventType.TaskScheduled && e.Name === name).map((e) => inputOf(name, e.Input));
}

/** Raises the cancel event (with `reason`) right after the orchestrator recorded entering `stage`. */
export function cancelOnEntering(stage: JobState, reason: string): SimOptions {
  const data: CancelEventData = { reason };
  // The simulator hands back the parsed JSON the orchestrator scheduled jobTransition with.
  const entering = (input: unknown) => (input as ActivityInput<'jobTransition'>).to === stage;
  return { raiseAfterActivity: [{ activity: 'jobTransition', when: entering, name: CANCEL_EVENT, input: data }] };
}

/** The job states the orchestrator recorded, in order (one jobTransition per stage entered). */
export function stagesEntered(history: HistoryEvent[]): string[] {
  return scheduledInputs(history, 'jobTransition').map((t) => t.to);
}

/**
 * Recorded once, with the final state, after the job's admission was given back; nothing (activity or timer) scheduled
 * after it but the announcement of the end (jobEnded).
 */
export function expectFinishedOnceAndLast(r: SimResult, job: FakeJob): void {
  expect(job.finishes).toHaveLength(1);
  expect(scheduled(r.history).filter((n) => n === 'jobFinish')).toHaveLength(1);
  expect(scheduled(r.history).slice(-3)).toEqual(['admissionRelease', 'jobFinish', 'jobEnded']);
  const finishAt = r.history.findIndex((e) => e.EventType === EventType.TaskScheduled && e.Name === 'jobFinish');
  expect(
    r.history
      .slice(finishAt + 1)
      .filter((e) => e.EventType === EventType.TaskScheduled || e.EventType === EventType.TimerCreated)
      .map((e) => e.Name),
  ).toEqual(['jobEnded']);
  expect(r.state.status).toBe('Completed');
  expect(r.output).toEqual(job.finished());
}

/** What runs after cleanup: waiting for a deleted pool to be gone, giving the admission back, recording the end. */
const AFTER_CLEANUP: readonly string[] = ['poolObserve', 'admissionRelease', 'jobFinish', 'jobEnded'];

/** The activities scheduled after the orchestrator entered CleaningUp (the bookkeeping after it aside), by name. */
export function cleanupSteps(r: SimResult): string[] {
  const entered = r.history.findIndex(
    (e) => e.EventType === EventType.TaskScheduled && e.Name === 'jobTransition' && inputOf('jobTransition', e.Input).to === 'CleaningUp',
  );
  expect(entered).toBeGreaterThan(0);
  return scheduled(r.history.slice(entered + 1))
    .filter((n) => !AFTER_CLEANUP.includes(n))
    .sort();
}
