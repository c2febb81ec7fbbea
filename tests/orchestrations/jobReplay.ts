/**
 * Replaying the real mpiJob orchestrator against typed fake activities (fakeActivities.ts) with the
 * durable-functions library's own executor (tests/durable/helpers/simulator), and reading what it did from the
 * orchestration history: which activities it scheduled, in which order, with which input.
 */
import { parseJobSpec } from '../../shared/spec';
import { mpiJobOrchestrator } from '../../orchestrations/mpiJob';
import type { ActivityInput, ActivityName, MpiJobInput, PipelineSettings } from '../../shared/contract';
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
  nodeTaskMaxAttempts: 3,
};

/** The orchestration input for a small native Open MPI job (tests/ops/helpers smallSpec), parsed like the intake does. */
export function jobInput(id: string, opts: Parameters<typeof smallSpec>[1]): MpiJobInput {
  const parsed = parseJobSpec(smallSpec(id, opts), 'application/yaml');
  if (!parsed.ok) throw new Error(`test spec invalid: ${JSON.stringify(parsed.errors)}`);
  return { jobId: id, spec: parsed.spec, settings: SETTINGS };
}

export function replay(input: MpiJobInput, job: FakeJob, opts: SimOptions = {}): Promise<SimResult> {
  return simulate(mpiJobOrchestrator, input, simulatorActivities(job.fakes), { clockStepMs: STEP_MS, ...opts });
}

/** Every activity the orchestrator scheduled, in order (a retry is not scheduled again: the engine re-runs it). */
export function scheduled(history: HistoryEvent[]): ActivityName[] {
  return history.filter((e) => e.EventType === EventType.TaskScheduled).map((e) => e.Name as ActivityName);
}

/** The inputs `name` was scheduled with, in order (the history holds what the orchestrator passed). */
export function scheduledInputs<N extends ActivityName>(history: HistoryEvent[], name: N): ActivityInput<N>[] {
  return history
    .filter((e) => e.EventType === EventType.TaskScheduled && e.Name === name)
    .map((e) => JSON.parse(e.Input ?? 'null') as ActivityInput<N>);
}

/** The job states the orchestrator recorded, in order (one jobTransition per stage entered). */
export function stagesEntered(history: HistoryEvent[]): string[] {
  return scheduledInputs(history, 'jobTransition').map((t) => t.to);
}
