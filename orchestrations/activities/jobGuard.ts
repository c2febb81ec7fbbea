import { jobStore } from '../../shared/services';
import { isTerminal, type JobRecord } from '../../shared/adapters/state';

/** A create refused because the job already ended: a repeated or restarted run must not start it over. */
export class JobAlreadyEnded extends Error {
  constructor(
    readonly jobId: string,
    readonly state: string,
    what: string,
  ) {
    super(state === 'CleaningUp' ? `job ${jobId} is cleaning up: not creating ${what}` : `job ${jobId} already ended ${state}: not creating ${what}`);
    this.name = 'JobAlreadyEnded';
  }
}

/**
 * Creating activities look at the job row first. Within one run Durable's history makes a create happen once; this
 * covers a run that starts over for a job that already ended (an orchestration restarted by hand with the old input,
 * or one whose history was lost), and a late repeat of a create the run already went past (Durable runs activities
 * at least once, and a host that died may deliver one after the run moved on): nothing is created twice, and nothing
 * is created for a job that is cleaning up or finished. Cleanup is recorded before it deletes anything, so a create
 * that passed this check meets the pool still there (or being deleted) and creates nothing.
 */
export async function refuseIfEnded(jobId: string, what: string): Promise<JobRecord | undefined> {
  const job = await (await jobStore()).get(jobId);
  if (job && (isTerminal(job.state) || job.state === 'CleaningUp')) throw new JobAlreadyEnded(jobId, job.state, what);
  return job;
}
