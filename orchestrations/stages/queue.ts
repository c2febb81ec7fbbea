import { ADMISSION_EVENT, DEPENDENCY_EVENT, type AdmissionStatus } from '../../shared/core/contract';
import { JobCancelled, Orchestration, PipelineRun, StageFailed } from '../runtime/pipelineRun';

export interface QueueRequest {
  jobId: string;
  /** Whether the spec lists dependencies (spec.dependsOn). */
  hasDependencies: boolean;
  /** How often to ask again when no event comes (the fallback for a lost event). */
  pollMs: number;
}

export type Granted = Extract<AdmissionStatus, { state: 'granted' }>;

/**
 * The Queued stage: wait until every dependency reached its condition, then until admission grants the job. Each wait
 * is an event (raised by a parent's end, or by the pass that admitted the job) raced with the cancel event and a
 * slow poll; either way the job then asks an activity where it stands, so an event only wakes it early. A dependency
 * that can no longer be met cancels the job; a job that can never fit fails.
 */
export function* waitInQueue(run: PipelineRun, req: QueueRequest): Orchestration<Granted> {
  if (req.hasDependencies) {
    let wake = run.ctx.df.waitForExternalEvent(DEPENDENCY_EVENT);
    for (;;) {
      const deps = yield* run.call('dependenciesCheck', { jobId: req.jobId });
      if (deps.state === 'met') break;
      if (deps.state === 'impossible') throw new JobCancelled(deps.reason);
      run.report({ queue: { waitingFor: 'dependencies', pending: deps.pending } });
      if (yield* run.waitFor(wake, req.pollMs)) wake = run.ctx.df.waitForExternalEvent(DEPENDENCY_EVENT);
    }
  }
  let wake = run.ctx.df.waitForExternalEvent(ADMISSION_EVENT);
  for (;;) {
    const st = yield* run.call('admissionRequest', { jobId: req.jobId });
    if (st.state === 'granted') {
      run.report({ queue: undefined });
      return st;
    }
    if (st.state === 'refused') throw new StageFailed('Queued', `refused at admission: ${st.reason}`);
    run.report({
      queue:
        st.state === 'waiting'
          ? { waitingFor: 'admission', reason: st.reason, ...(st.position ? { position: st.position.inQueue, positionOverall: st.position.overall } : {}) }
          : { waitingFor: 'admission' },
    });
    if (yield* run.waitFor(wake, req.pollMs)) wake = run.ctx.df.waitForExternalEvent(ADMISSION_EVENT);
  }
}
