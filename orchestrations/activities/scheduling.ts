/**
 * The activities of the Queued stage and of a job's end: ask admission, give it back, look at the dependencies, and
 * announce the end (dependents, the array's row). The ones that decide for other jobs tell them through the Durable
 * client (an event is only a wake-up: a lost one delays the job until its next poll, never strands it).
 */
import { ADMISSION_EVENT, DEPENDENCY_EVENT, type AdmissionStatus, type DependencyStatus } from '../../shared/core/contract';
import { admissionDeps, jobStore, schedulingStores } from '../../shared/services';
import { isTerminal, type JobRecord } from '../../shared/adapters/state';
import { releaseAdmission, requestAdmission, toNotify } from '../../shared/adapters/scheduling/admissionService';
import { dependencyStatus } from '../../shared/core/scheduling/dependencies';
import { refreshArrayRow } from '../../shared/core/scheduling/arrayRow';
import { registerActivity, registerClientActivity, type ActivityEnv } from './registration';

async function jobRow(jobId: string): Promise<JobRecord> {
  const job = await (await jobStore()).get(jobId);
  if (!job) throw new Error(`job ${jobId} does not exist`);
  return job;
}

/** Raises `event` on each job's orchestration; one that is gone or finished is skipped (the event is only a wake-up). */
export async function wake(env: ActivityEnv, jobIds: string[], event: string): Promise<void> {
  for (let i = 0; i < jobIds.length; i += 16) {
    await Promise.all(
      jobIds
        .slice(i, i + 16)
        .map((id) =>
          env.client
            .raiseEvent(id, event, {})
            .catch((err: unknown) => env.log.warn(`could not raise ${event} on ${id}: ${err instanceof Error ? err.message : String(err)}`)),
        ),
    );
  }
}

export async function admissionRequest(input: { jobId: string }, env: ActivityEnv): Promise<AdmissionStatus> {
  const job = await jobRow(input.jobId);
  const answer = await requestAdmission(await admissionDeps(), job);
  await wake(env, toNotify(answer.pass, input.jobId), ADMISSION_EVENT);
  const st = answer.status;
  if (st.state === 'granted') {
    // The grant on the job's timeline: its number orders the grants of the deployment (deterministic id: written once).
    const store = await jobStore();
    // Placed on a Batch account (several BATCH_ACCOUNTS): the row keeps it before any Batch call is made there.
    if (st.account && job.batchAccount !== st.account) await store.update(input.jobId, { batchAccount: st.account });
    await store.appendEvent(input.jobId, {
      reason: `admitted: grant ${st.grant} in queue ${st.queue ?? 'default'}${st.waitingSince ? `, waiting since ${st.waitingSince}` : ''}${st.placedBecause ? `; ${st.placedBecause}` : ''}`,
      eventId: `admitted-${st.grant}`,
      at: st.grantedAt,
      data: {
        grant: st.grant,
        grantedAt: st.grantedAt,
        ...(st.waitingSince ? { waitingSince: st.waitingSince } : {}),
        ...(st.account ? { batchAccount: st.account, placement: st.placedBecause ?? null } : {}),
      },
    });
  }
  return st;
}

export async function admissionRelease(input: { jobId: string }, env: ActivityEnv): Promise<void> {
  const { pass } = await releaseAdmission(await admissionDeps(), input.jobId);
  await wake(env, toNotify(pass), ADMISSION_EVENT);
}

export async function dependenciesCheck(input: { jobId: string }): Promise<DependencyStatus> {
  const job = await jobRow(input.jobId);
  if (!job.spec) throw new Error(`job ${input.jobId} has no valid spec`);
  const store = await jobStore();
  const ids = [...new Set((job.spec.dependsOn ?? []).map((d) => d.job))];
  const rows = await Promise.all(ids.map((id) => store.get(id)));
  return dependencyStatus(job.spec, new Map(ids.map((id, i) => [id, rows[i]])));
}

export async function jobEnded(input: { jobId: string }, env: ActivityEnv): Promise<void> {
  const { dependents } = await schedulingStores();
  await wake(env, await dependents.dependentsOf(input.jobId), DEPENDENCY_EVENT);
  const job = await (await jobStore()).get(input.jobId);
  if (!job?.array) return;
  const array = await refreshArrayRow(await jobStore(), job.array.parent);
  if (array && isTerminal(array.state)) await wake(env, await dependents.dependentsOf(array.id), DEPENDENCY_EVENT);
}

registerClientActivity('admissionRequest', admissionRequest);
registerClientActivity('admissionRelease', admissionRelease);
registerActivity('dependenciesCheck', dependenciesCheck);
registerClientActivity('jobEnded', jobEnded);
