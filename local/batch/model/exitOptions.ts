/**
 * How a completed task's exitConditions answer "what now?" for its job and for the tasks that depend on it
 * (ExitConditions in the Batch spec). Pure: reads the task's outcome and its exitConditions.
 */
import type { Json, TaskRecord } from './types';

export type JobAction = 'none' | 'disable' | 'terminate';
export type DependencyAction = 'satisfy' | 'block';

/** Failures before the task's process ran: they take preProcessingError (and are never retried). */
const PRE_PROCESSING_CODES = new Set([
  'BlobAccessDenied',
  'BlobDownloadMiscError',
  'BlobDownloadTimedOut',
  'BlobNotFound',
  'CommandLaunchFailed',
  'CommandProgramNotFound',
  'ResourceDirectoryCreateFailed',
  'ResourceFileCreateFailed',
  'ResourceFileWriteFailed',
]);

export function isPreProcessingFailure(code: unknown): boolean {
  return typeof code === 'string' && PRE_PROCESSING_CODES.has(code);
}

export function isFileUploadFailure(code: unknown): boolean {
  return typeof code === 'string' && code.startsWith('FileUpload');
}

/** A task ended by a user, its job or its node, not by how it ran: exit conditions do not apply. */
export function isEndedByRequest(code: unknown): boolean {
  return code === 'TaskEnded';
}

/**
 * The ExitOptions that apply: an exitCodes or exitCodeRanges entry for the exit code (it wins over a file upload
 * error), else preProcessingError or fileUploadError for those failures, else `default` for any other failure.
 * A success not listed explicitly gets none. The defaults are Batch's: jobAction none for success and terminate
 * otherwise, dependencyAction satisfy for success and block otherwise.
 */
export function exitOptionsFor(task: Pick<TaskRecord, 'spec' | 'executionInfo'>): { jobAction: JobAction; dependencyAction: DependencyAction } {
  const exec = task.executionInfo;
  const failed = exec?.result === 'failure';
  const code = (exec?.failureInfo as Json | undefined)?.code;
  const ec = (task.spec.exitConditions ?? {}) as Json;
  let options: Json | undefined;
  if (!isPreProcessingFailure(code) && exec?.exitCode !== undefined) {
    const c = exec.exitCode;
    const exact = ((ec.exitCodes as Json[] | undefined) ?? []).find((m) => m.code === c);
    const range = ((ec.exitCodeRanges as Json[] | undefined) ?? []).find((m) => (m.start as number) <= c && c <= (m.end as number));
    options = (exact ?? range)?.exitOptions as Json | undefined;
  }
  if (!options && failed) {
    if (isPreProcessingFailure(code)) options = (ec.preProcessingError ?? ec.default) as Json | undefined;
    else if (isFileUploadFailure(code)) options = (ec.fileUploadError ?? ec.default) as Json | undefined;
    else options = ec.default as Json | undefined;
  }
  return {
    jobAction: ((options?.jobAction as string | undefined)?.toLowerCase() as JobAction | undefined) ?? (failed ? 'terminate' : 'none'),
    dependencyAction: ((options?.dependencyAction as string | undefined)?.toLowerCase() as DependencyAction | undefined) ?? (failed ? 'block' : 'satisfy'),
  };
}
