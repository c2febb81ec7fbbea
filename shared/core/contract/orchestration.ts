/**
 * The Durable runtime statuses of an orchestration instance, as the management API and DurableClient report them,
 * and the groups the app acts on. Declared once for the API, the sweep, the CLI and the demo runner.
 */
export const ORCHESTRATION_RUNTIME_STATUSES = ['Pending', 'Running', 'Suspended', 'ContinuedAsNew', 'Completed', 'Failed', 'Terminated', 'Canceled'] as const;
export type OrchestrationRuntimeStatus = (typeof ORCHESTRATION_RUNTIME_STATUSES)[number];

const FINISHED: ReadonlySet<string> = new Set<OrchestrationRuntimeStatus>(['Completed', 'Failed', 'Terminated', 'Canceled']);
const ABORTED: ReadonlySet<string> = new Set<OrchestrationRuntimeStatus>(['Failed', 'Terminated', 'Canceled']);

/** The instance will not run again: no event reaches it, no activity starts. */
export function isOrchestrationFinished(status: string): boolean {
  return FINISHED.has(status);
}

/**
 * The instance ended without finishing the pipeline itself (it crashed, or someone terminated it): the job row may
 * still show a running stage, and only the sweep (or nothing) will move it on.
 */
export function isOrchestrationAborted(status: string): boolean {
  return ABORTED.has(status);
}
