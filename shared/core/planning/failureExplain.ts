/**
 * Why a job failed, in words a user acts on: the stage, the node, the exit code and what it means, and the last lines
 * of the failing task's stderr. Pure: the pipeline gathers the evidence (its activities read the node files through
 * Batch's file API before the pool goes), this composes the job's error from it, so every sentence is unit-tested.
 */

/** How many lines of the failing task's stderr the job's error carries (the result keeps more of the master's). */
export const STDERR_TAIL_LINES = 20;

/**
 * What a failing task was: the pool's start task, the coordination command (every node), the application (master) or
 * the preflight check (the multi-instance task that checks the nodes before the application).
 */
export const FAILED_TASKS = ['start task', 'coordination command', 'application', 'preflight check'] as const;
export type FailedTask = (typeof FAILED_TASKS)[number];

/** What the pipeline saw of the failure (all optional: a stage failure may have no node or task at all). */
export interface FailureEvidence {
  /** The stage the job was in (Provisioning, PullingImages, StagingData, Running, …). */
  stage?: string;
  node?: string;
  task?: FailedTask;
  exitCode?: number;
  /** The task's stderr as read from the node (any length: it is cut to the last STDERR_TAIL_LINES). */
  stderr?: string;
  /** The node the stderr was read on, when it is not `node` (e.g. the master's, for want of the failing node's). */
  stderrNode?: string;
}

/**
 * What an exit code usually means on Linux: the shell's own codes (126, 127) and 128+signal for a process a signal
 * ended (137 SIGKILL, which is also what the kernel's OOM killer sends; 139 SIGSEGV; 143 SIGTERM).
 */
export function exitCodeMeaning(code: number): string | undefined {
  switch (code) {
    case 0:
      return undefined;
    case 1:
      return 'general error';
    case 2:
      return 'misuse of a shell command or bad arguments';
    case 126:
      return 'not executable: the file exists but cannot be run (permissions, or not a program)';
    case 127:
      return 'command not found: the program is not on the PATH of the node or container';
    case 130:
      return 'interrupted (SIGINT)';
    case 134:
      return 'aborted (SIGABRT), e.g. a failed assertion';
    case 137:
      return 'killed (SIGKILL): out of memory (the OOM killer) or stopped by force';
    case 139:
      return 'segmentation fault (SIGSEGV): the program read or wrote memory it does not own';
    case 143:
      return 'terminated (SIGTERM): stopped from outside, e.g. a wall-clock limit or a cancel';
    default:
      if (code > 128 && code < 160) return `ended by signal ${code - 128}`;
      return undefined;
  }
}

/** The exit code with its meaning, e.g. "exit code 127 (command not found: …)". */
export function describeExitCode(code: number): string {
  const meaning = exitCodeMeaning(code);
  return meaning ? `exit code ${code} (${meaning})` : `exit code ${code}`;
}

/** The last `n` non-empty-trailing lines of a text. */
export function tailLines(text: string, n = STDERR_TAIL_LINES): string {
  const lines = text.replace(/\s+$/, '').split('\n');
  return lines.slice(-n).join('\n');
}

/** What each activity does, in the words of its stage, for a failure that escaped a stage as an internal error. */
const ACTIVITY_WORDS: Readonly<Record<string, { stage: string; doing: string }>> = {
  inputsList: { stage: 'StagingData', doing: "listing the job's inputs" },
  sourcesMissing: { stage: 'Queued', doing: "checking that the job's inputs, files and images exist" },
  shardCopy: { stage: 'StagingData', doing: 'copying input data to the staging account' },
  shardUrls: { stage: 'StagingData', doing: "signing the staged data's URLs" },
  stagedDataDelete: { stage: 'CleaningUp', doing: 'deleting the staged data' },
  imageBlobUrls: { stage: 'PullingImages', doing: "signing the image files' URLs" },
  workloadUrls: { stage: 'Running', doing: "signing the URLs of the job's files and outputs" },
  poolCreate: { stage: 'Provisioning', doing: 'creating the pool' },
  poolInspect: { stage: 'Provisioning', doing: 'reading the pool' },
  poolObserve: { stage: 'Provisioning', doing: "reading the pool's nodes" },
  poolRemoveNodes: { stage: 'Provisioning', doing: 'replacing failed nodes' },
  poolResize: { stage: 'Provisioning', doing: 'resizing the pool' },
  poolDelete: { stage: 'CleaningUp', doing: 'deleting the pool' },
  batchJobCreate: { stage: 'Provisioning', doing: 'creating the Batch job' },
  nodeTasksAdd: { stage: 'PullingImages', doing: 'starting the tasks on the nodes' },
  nodeTasksObserve: { stage: 'PullingImages', doing: "reading the nodes' tasks" },
  mpiTaskAdd: { stage: 'Running', doing: 'starting the MPI task' },
  mpiTaskObserve: { stage: 'Running', doing: 'reading the MPI task' },
  mpiResultCollect: { stage: 'Running', doing: "collecting the MPI task's result" },
  preflightTaskAdd: { stage: 'Running', doing: 'starting the preflight check' },
  preflightCollect: { stage: 'Running', doing: 'reading the preflight check' },
  outputsList: { stage: 'CleaningUp', doing: 'listing the outputs' },
  costPrice: { stage: 'Provisioning', doing: 'looking up the VM price' },
};

/**
 * A failure reason without internal wording: "unexpected: Activity function 'inputsList' failed: X" becomes
 * "StagingData: listing the job's inputs failed: X". Other reasons are kept as they are.
 */
export function userReason(reason: string): string {
  const plain = reason
    // Batch's generic words for a non-zero exit say nothing the exit code does not.
    .replace(/: FailureExitCode: The task exited with an exit code representing a failure/g, '')
    .replace(/MaxWallClockTimeExceeded: [^;]*/g, 'wall-clock limit exceeded (limits.maxWallClock): the task ran longer and Batch stopped it');
  const m = /^(?:unexpected:\s*)?Activity function '([^']+)' failed:\s*([\s\S]*)$/.exec(plain);
  if (!m) return plain.replace(/^unexpected:\s*/, 'internal error: ');
  const words = ACTIVITY_WORDS[m[1]];
  const cause = m[2].trim() || 'no detail given';
  return words ? `${words.stage}: ${words.doing} failed: ${cause}` : `the pipeline step ${m[1]} failed: ${cause}`;
}

/** The job's error message: the reason in user words, then where and how it failed, then the stderr tail. */
export function explainFailure(reason: string, evidence: FailureEvidence | undefined): string {
  const said = userReason(reason);
  if (!evidence) return said;
  const where: string[] = [];
  if (evidence.task) where.push(`the ${evidence.task}`);
  if (evidence.node) where.push(`on node ${evidence.node}`);
  if (evidence.exitCode !== undefined && evidence.exitCode !== 0) where.push(`ended with ${describeExitCode(evidence.exitCode)}`);
  const stagePrefix = evidence.stage && !said.startsWith(`${evidence.stage}:`) ? `${evidence.stage}: ` : '';
  const head = where.length ? `${stagePrefix}${said} (${where.join(' ')})` : `${stagePrefix}${said}`;
  const tail = evidence.stderr?.trim() ? tailLines(evidence.stderr) : '';
  const on = evidence.stderrNode && evidence.stderrNode !== evidence.node ? ` on node ${evidence.stderrNode}` : '';
  return tail ? `${head}\nLast lines of stderr${on}:\n${tail}` : head;
}

/** A subtask of a multi-instance task (MPI or preflight) as the pipeline recorded it; a failed one with its stderr tail. */
export interface SubtaskEvidence {
  id: number;
  nodeId?: string;
  exitCode?: number;
  stderrTail?: string;
}

/** The first subtask on a node other than the master (id 0) that ended non-zero: the failing non-master node. */
export function failedSubtask(subtasks: readonly SubtaskEvidence[]): SubtaskEvidence | undefined {
  return subtasks.find((s) => s.id !== 0 && s.exitCode !== undefined && s.exitCode !== 0);
}

/**
 * The evidence of a finished MPI task: which part failed (a coordination command on a node whose subtask failed, with
 * that node's stderr tail, or the application on the master with the master's), its exit code. Undefined when it
 * succeeded.
 */
export function mpiEvidence(mpi: {
  exitCode: number;
  noExitCode?: boolean;
  failure?: string;
  subtasks: SubtaskEvidence[];
  logs: { node: string }[];
  stderrTail?: string;
}): FailureEvidence | undefined {
  if (mpi.exitCode === 0 && !mpi.noExitCode && !mpi.failure) return undefined;
  const failedSub = failedSubtask(mpi.subtasks);
  const master = mpi.logs[0]?.node;
  const base: FailureEvidence = { stage: 'Running', ...(mpi.stderrTail ? { stderr: mpi.stderrTail } : {}) };
  if (failedSub && failedSub.exitCode === mpi.exitCode) {
    // The failing node's own stderr; the master's only when that node's could not be read.
    const stderr: Partial<FailureEvidence> = failedSub.stderrTail?.trim()
      ? { stderr: failedSub.stderrTail }
      : mpi.stderrTail?.trim() && master && master !== 'master'
        ? { stderrNode: master }
        : {};
    return { ...base, ...stderr, task: 'coordination command', ...(failedSub.nodeId ? { node: failedSub.nodeId } : {}), exitCode: failedSub.exitCode };
  }
  return { ...base, task: 'application', ...(master && master !== 'master' ? { node: master } : {}), ...(mpi.noExitCode ? {} : { exitCode: mpi.exitCode }) };
}

/** What the preflight check left behind when it failed (orchestrations/activities/preflight.ts reads it). */
export interface PreflightFailureRun {
  exitCode?: number;
  /** The node the check's master ran on. */
  masterNode?: string;
  /** The last lines of the master's stderr (the pre-execution command, the probes, the ping-pong's launcher). */
  stderrTail?: string;
  /** The check's subtasks on the other nodes that ended non-zero, each with its stderr tail. */
  failedSubtasks?: SubtaskEvidence[];
}

/**
 * The evidence of a failed preflight check: the failing node (a subtask that ended non-zero, else the first node the
 * verdict blamed, else the master when no node could be blamed) with the exit code and the stderr tail of that node
 * (the master's when that node has none of its own).
 */
export function preflightEvidence(run: PreflightFailureRun, blamed: readonly string[]): FailureEvidence {
  const sub = failedSubtask(run.failedSubtasks ?? []);
  const node = sub?.nodeId ?? blamed[0] ?? run.masterNode;
  const exitCode = sub?.exitCode ?? (run.exitCode !== undefined && run.exitCode !== 0 ? run.exitCode : undefined);
  const own = sub?.stderrTail?.trim() ? sub.stderrTail : undefined;
  const stderr = own ?? (run.stderrTail?.trim() ? run.stderrTail : undefined);
  return {
    stage: 'StagingData',
    task: 'preflight check',
    ...(node ? { node } : {}),
    ...(exitCode !== undefined ? { exitCode } : {}),
    ...(stderr ? { stderr } : {}),
    ...(stderr && !own && run.masterNode && run.masterNode !== node ? { stderrNode: run.masterNode } : {}),
  };
}

/** A start task's failure on a node, for the timeline and the job's error. */
export function startTaskNote(node: string, exitCode: number | undefined, failure: string | undefined, stderr: string | undefined): string {
  const what = exitCode !== undefined ? `ended with ${describeExitCode(exitCode)}` : `failed${failure ? `: ${failure}` : ''}`;
  const tail = stderr?.trim() ? `; last lines of stderr:\n${tailLines(stderr, 5)}` : '';
  return `node ${node}: the start task ${what}${tail}`;
}

/** The job's recorded error, as the API, the CLI and the dashboard show it (code, user message, the evidence). */
export function jobError(outcome: {
  state: 'Succeeded' | 'Failed' | 'Cancelled';
  reason?: string;
  evidence?: FailureEvidence;
  result?: { mpi?: Parameters<typeof mpiEvidence>[0] };
}): { code: string; message: string; details?: Record<string, string | number> } | undefined {
  if (outcome.state === 'Succeeded') return undefined;
  const reason = outcome.reason ?? outcome.state;
  if (outcome.state === 'Cancelled') return { code: 'Cancelled', message: reason };
  const evidence = outcome.evidence ?? (outcome.result?.mpi ? mpiEvidence(outcome.result.mpi) : undefined);
  const details: Record<string, string | number> = {};
  if (evidence?.stage) details.stage = evidence.stage;
  if (evidence?.node) details.node = evidence.node;
  if (evidence?.task) details.task = evidence.task;
  if (evidence?.exitCode !== undefined) {
    details.exitCode = evidence.exitCode;
    const meaning = exitCodeMeaning(evidence.exitCode);
    if (meaning) details.exitCodeMeaning = meaning;
  }
  if (evidence?.stderr?.trim()) {
    details.stderrTail = tailLines(evidence.stderr);
    if (evidence.stderrNode) details.stderrNode = evidence.stderrNode;
  }
  return { code: 'PipelineFailed', message: explainFailure(reason, evidence), ...(Object.keys(details).length ? { details } : {}) };
}
