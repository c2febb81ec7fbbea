/**
 * The scheduling part of the periodic sweep: reconcile admission (drop what ended or vanished jobs still hold: a
 * crashed or terminated run never released) and run a pass that re-sends unseen grants; bring arrays' rows up to date
 * with their jobs (a job the sweep ended announced nothing). Each step is on its own: one failing does not stop the
 * other, and the sweep's next run tries again.
 */
import { JOB_STATES, isTerminal, type JobState } from '../../core/state/states';
import type { JobStore } from '../state/jobStore';
import { reconcileAdmission, toNotify, type AdmissionDeps } from './admissionService';
import { refreshArrayRow } from '../../core/scheduling/arrayRow';
import type { DependentsStore } from './dependentsStore';

export interface HousekeepingDeps {
  store: JobStore;
  admission: AdmissionDeps;
  dependents: Pick<DependentsStore, 'dependentsOf'>;
  /** Raises the admission event on these jobs. */
  wakeAdmitted(jobIds: string[]): Promise<void>;
  /** Raises the dependency event on these jobs. */
  wakeDependents(jobIds: string[]): Promise<void>;
}

export interface HousekeepingReport {
  dropped: string[];
  admitted: number;
  arraysRefreshed: number;
  arraysEnded: string[];
  errors: string[];
}

const OPEN: JobState[] = JOB_STATES.filter((s) => !isTerminal(s));

export async function schedulingHousekeeping(deps: HousekeepingDeps): Promise<HousekeepingReport> {
  const report: HousekeepingReport = { dropped: [], admitted: 0, arraysRefreshed: 0, arraysEnded: [], errors: [] };
  try {
    const { dropped, pass } = await reconcileAdmission(deps.admission, deps.store);
    report.dropped = dropped;
    report.admitted = pass.admitted.length;
    await deps.wakeAdmitted(toNotify(pass));
  } catch (err) {
    report.errors.push(`admission: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    let token: string | undefined;
    do {
      const page = await deps.store.list({ state: OPEN, top: 1000, continuationToken: token });
      for (const row of page.jobs.filter((j) => j.spec?.array)) {
        const after = await refreshArrayRow(deps.store, row.id);
        report.arraysRefreshed++;
        if (after && isTerminal(after.state)) {
          report.arraysEnded.push(after.id);
          await deps.wakeDependents(await deps.dependents.dependentsOf(after.id));
        }
      }
      token = page.continuationToken;
    } while (token);
  } catch (err) {
    report.errors.push(`arrays: ${err instanceof Error ? err.message : String(err)}`);
  }
  return report;
}
