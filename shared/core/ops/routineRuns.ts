/**
 * Whether a routine timer run did anything worth a line at info. The event relay runs every few seconds and the
 * sweep every few minutes; a run that found nothing to do is logged at debug, so a quiet deployment's log (and the
 * local stack's file) holds what happened rather than thousands of "nothing to relay" lines. Pure: the timer
 * functions (functions/events.ts, functions/sweep.ts) pick the level with these.
 */
import type { RelayReport } from '../../adapters/events/delivery';
import type { SweepReport } from '../../adapters/ops/sweep';
import type { HousekeepingReport } from '../../adapters/scheduling/housekeeping';

export type RoutineLevel = 'warn' | 'info' | 'debug';

/** warn when a delivery failed, info when something was sent or is pending, debug for an idle pass. */
export function relayRunLevel(report: Pick<RelayReport, 'sent' | 'busy' | 'waiting' | 'failed'>): RoutineLevel {
  if (report.failed.length) return 'warn';
  return report.sent || report.busy || report.waiting ? 'info' : 'debug';
}

/** warn when something failed or was skipped, info when a rule or the scheduler acted, debug for an idle run. */
export function sweepRunLevel(report: Pick<SweepReport, 'actions' | 'skipped'>, scheduling: HousekeepingReport | undefined): RoutineLevel {
  if (report.actions.some((a) => !a.ok) || report.skipped.length || scheduling?.errors.length) return 'warn';
  const scheduled = scheduling && (scheduling.dropped.length || scheduling.admitted || scheduling.arraysRefreshed || scheduling.arraysEnded.length);
  return report.actions.length || scheduled ? 'info' : 'debug';
}
