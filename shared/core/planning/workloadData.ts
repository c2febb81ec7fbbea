/**
 * The data side of a job, planned from its spec: the files every node gets (Batch commonResourceFiles of the
 * multi-instance task), the shared scratch (coordination and release shell code, $MPIJOB_SCRATCH), the pool mounts
 * (references only: the poolCreate activity resolves secrets and SAS), and the outputs (Batch output files of the MPI
 * task for what the master uploads, and one upload task per node after it). Pure and deterministic: the orchestrator
 * calls it during replay; SAS URLs are minted by activities and passed in.
 */
import type { JobSpec } from '../spec/schema';
import { parseIsoDuration } from '../spec/duration';
import { scratchDirExpression, scratchExport, scratchSetupScript, scratchTeardownScript, type ScratchSpec } from '../mpi/sharedScratch';
import { bashCommandLine, shellQuote } from '../mpi/shellQuote';
import type { TaskOutputFile } from '../contract/batchTasks';

// Declared with the task request that carries them (one shape from planning to the Batch request).
export type { NodeResourceFile, TaskOutputFile } from '../contract/batchTasks';

/** One entry of `files`, with where it lands relative to the task root (commonResourceFiles land there). */
export type NodeFileSource =
  | { kind: 'url'; url: string; filePath: string; fileMode?: string }
  | { kind: 'blob'; account: string; container: string; blob: string; filePath: string; fileMode?: string }
  | { kind: 'prefix'; account: string; container: string; prefix: string; filePath: string; fileMode?: string };

/** commonResourceFiles go to the task root directory; the ranks work one level down, in wd. */
const WORKDIR_FROM_TASK_ROOT = 'wd';

export function nodeFileSources(spec: JobSpec): NodeFileSource[] {
  return (spec.files ?? []).map((f): NodeFileSource => {
    const filePath = f.path ? `${WORKDIR_FROM_TASK_ROOT}/${f.path}` : WORKDIR_FROM_TASK_ROOT;
    const mode = f.mode === undefined ? {} : { fileMode: f.mode.padStart(4, '0') };
    if (f.url !== undefined) return { kind: 'url', url: f.url, filePath, ...mode };
    if (f.blob !== undefined) return { kind: 'blob', account: f.account as string, container: f.container as string, blob: f.blob, filePath, ...mode };
    return { kind: 'prefix', account: f.account as string, container: f.container as string, prefix: f.prefix ?? '', filePath, ...mode };
  });
}

/**
 * How long a SAS handed to the nodes for this job lives: the nodes read (or write) through it during the MPI task,
 * so its wall-clock limit for each attempt plus a margin, never beyond the deployment's cap.
 */
export function nodeSasLifetimeMs(spec: JobSpec, settings: { sasMaxLifetimeMinutes: number; sasMarginMinutes: number }, extraMs = 0): number {
  const capMs = settings.sasMaxLifetimeMinutes * 60_000;
  const wallClockMs = spec.limits.maxWallClock ? parseIsoDuration(spec.limits.maxWallClock) : undefined;
  if (wallClockMs === undefined) return capMs;
  return Math.min(capMs, wallClockMs * (1 + spec.limits.maxRetries) + extraMs + settings.sasMarginMinutes * 60_000);
}

// ---- shared scratch -------------------------------------------------------------------------------------------

export function scratchOf(spec: JobSpec, jobId: string): ScratchSpec | undefined {
  return spec.scratch ? { kind: spec.scratch.kind, jobId, mount: spec.scratch.mount, ...(spec.scratch.path ? { path: spec.scratch.path } : {}) } : undefined;
}

/** Shell code run on every node in the coordination step (before containers start), or undefined. */
export function nodeSetupScript(spec: JobSpec, jobId: string): string | undefined {
  const s = scratchOf(spec, jobId);
  return s ? scratchSetupScript(s) : undefined;
}

/** `export MPIJOB_SCRATCH=…; ` to put before the ranks' and the pre-execution command ('' without scratch). */
export function rankEnvironmentPrefix(spec: JobSpec, jobId: string): string {
  const s = scratchOf(spec, jobId);
  return s ? `${scratchExport(s)}; ` : '';
}

/** The job release task's extra work (before the container cleanup), or undefined. */
export function releaseScript(spec: JobSpec, jobId: string): string | undefined {
  const s = scratchOf(spec, jobId);
  return s ? scratchTeardownScript(s) : undefined;
}

// ---- mounts ---------------------------------------------------------------------------------------------------

/** A pool mount as the orchestration history carries it: names and references, never a secret. */
export type MountRequest = NonNullable<JobSpec['mounts']>[number];

export function mountRequests(spec: JobSpec): MountRequest[] {
  return spec.mounts ?? [];
}

// ---- outputs --------------------------------------------------------------------------------------------------

export interface OutputsPlan {
  account: string;
  container: string;
  /** Every blob name starts with `<prefix>/`. */
  prefix: string;
  when: 'always' | 'success' | 'failure';
  onUploadFailure: 'report' | 'fail';
  logs: boolean;
  /** Patterns (relative to the working directory) uploaded from every node by a task per node. */
  nodePatterns: string[];
  /** Uploaded by the MPI task itself (from the master), without the container URL. */
  master: Omit<TaskOutputFile, 'containerUrl'>[];
}

/** Where Open MPI / Hydra launchers write one stdout/stderr pair per rank, relative to the master's working directory. */
export const RANK_LOG_DIR = '.mpijob-ranks';

const WILDCARD = /[*?[]/;

/** The fixed leading directories of a glob (`a/b/*.dat` → `a/b`), or the whole path when it has no wildcard. */
export function fixedPart(pattern: string): { fixed: string; wildcard: boolean } {
  const segments = pattern.split('/');
  const first = segments.findIndex((s) => WILDCARD.test(s));
  return first < 0 ? { fixed: pattern, wildcard: false } : { fixed: segments.slice(0, first).join('/'), wildcard: true };
}

/**
 * The destination path for a pattern so that every blob is `<base>/<the file's path relative to the pattern's
 * directory root>`: Batch names a match by its path below the pattern's fixed directories, under `path`.
 */
export function destinationFor(base: string, pattern: string): string {
  const { fixed } = fixedPart(pattern);
  return fixed ? `${base}/${fixed}` : base;
}

const condition = (when: OutputsPlan['when']): TaskOutputFile['uploadCondition'] =>
  when === 'success' ? 'taskSuccess' : when === 'failure' ? 'taskFailure' : 'taskCompletion';

export function outputsPlan(spec: JobSpec, jobId: string): OutputsPlan | undefined {
  const o = spec.outputs;
  if (!o) return undefined;
  const prefix = o.prefix ?? jobId;
  const scratch = scratchOf(spec, jobId);
  const master: OutputsPlan['master'] = [];
  for (const f of o.files) {
    if (f.from === 'workdir') {
      master.push({ filePattern: f.pattern, path: destinationFor(`${prefix}/workdir`, f.pattern), uploadCondition: condition(o.when) });
    } else if (f.from === 'scratch' && scratch) {
      // Batch expands $VAR in filePattern from the task's environment: the master's scratch, the same on every node.
      master.push({
        filePattern: `${scratchDirExpression(scratch)}/${f.pattern}`,
        path: destinationFor(`${prefix}/scratch`, f.pattern),
        uploadCondition: condition(o.when),
      });
    } else if (f.from === 'mount' && f.mount) {
      // Read through the Batch mount directory (the same files as the fixed path): Batch expands the variable, and the
      // blobs go under the prefix like every other output (the submitter's data area, checked at intake).
      master.push({
        filePattern: `$AZ_BATCH_NODE_MOUNTS_DIR/${f.mount}/${f.pattern}`,
        path: destinationFor(`${prefix}/mounts/${f.mount}`, f.pattern),
        uploadCondition: condition(o.when),
      });
    }
  }
  if (o.logs) {
    master.push(
      // The text files Batch keeps in the master's task directory: stdout.txt and stderr.txt (every rank's output as the
      // launcher collects it), and what else the node agent writes beside them (the emulator: the coordination output).
      { filePattern: '../*.txt', path: `${prefix}/logs`, uploadCondition: 'taskCompletion' },
      { filePattern: `${RANK_LOG_DIR}/**`, path: `${prefix}/logs/ranks`, uploadCondition: 'taskCompletion' },
    );
  }
  return {
    account: o.account,
    container: o.container,
    prefix,
    when: o.when,
    onUploadFailure: o.onUploadFailure,
    logs: o.logs,
    nodePatterns: o.files.filter((f) => f.from === 'allNodes').map((f) => f.pattern),
    master,
  };
}

/** The MPI task's output files, with the container URL (a write SAS) minted for this run. */
export function masterOutputFiles(plan: OutputsPlan | undefined, containerUrl: string | undefined): TaskOutputFile[] {
  if (!plan || !containerUrl) return [];
  return plan.master.map((f) => ({ ...f, containerUrl }));
}

/**
 * Launcher options that also write one stdout/stderr pair per rank under RANK_LOG_DIR on the master, when the job keeps
 * its logs. Open MPI's `--output-filename` writes the files and still forwards every rank's output to the master's
 * stdout/stderr (measured with Open MPI 4.1). Hydra's `-outfile-pattern` (Intel MPI, MPICH, MVAPICH) would take the
 * output off stdout instead, which the job result's tail, `hpcjob logs` and the users' own parsing read: for those the
 * master's stdout/stderr, which hold every rank's output, are what is kept.
 */
export function rankLogOptions(spec: JobSpec): string[] {
  // A custom launch script passes its own launcher options.
  if (!spec.outputs?.logs || spec.mpi.runtime !== 'openmpi' || spec.mpi.launcher.mode === 'custom') return [];
  // Relative: the launcher runs in the working directory, which the MPI task's output files are relative to.
  return ['--output-filename', RANK_LOG_DIR];
}

/**
 * Whether upload tasks follow the MPI task on the nodes: when some output comes from every node, or the other nodes'
 * logs are kept. Then the Batch job is set to terminate itself only after them (it would end with the MPI task).
 */
export function needsNodeUploads(plan: OutputsPlan | undefined, nodeCount: number): boolean {
  return !!plan && (plan.nodePatterns.length > 0 || (plan.logs && nodeCount > 1));
}

/** Whether the MPI run's outcome (exit code) calls for the files of `when`. */
export function filesWanted(when: OutputsPlan['when'], exitCode: number): boolean {
  return when === 'always' || (when === 'success' ? exitCode === 0 : exitCode !== 0);
}

/** A node as the upload step needs it: where the MPI task's directory is on it (relative to the node root). */
export interface UploadNode {
  id: string;
  affinityId: string;
  taskRootDirectory: string;
  isMaster: boolean;
}

/** The per-node upload task: what it uploads, or undefined when the node has nothing to upload. */
export interface NodeUploadTask {
  nodeId: string;
  affinityId: string;
  commandLine: string;
  outputFiles: TaskOutputFile[];
}

/** A node upload task exits with this code when Batch ran it on another node than the one it was meant for. */
export const WRONG_NODE_EXIT = 3;

/**
 * The upload task of one node after the MPI task: every-node patterns from that node's MPI working directory (when
 * the outcome calls for files) and, except on the master (whose logs the MPI task uploads), that node's task
 * stdout/stderr (the coordination command's output: the scratch mount, the container start). Batch affinity is a
 * hint, so the task first checks it runs on its node and fails otherwise; its uploads only happen on success.
 */
/** Where the non-master nodes' default logs go: `<prefix>/logs/nodes/<node id>/<file>`. */
export function nodeLogsPrefix(prefix: string): string {
  return `${prefix}/logs/nodes/`;
}

/**
 * The log files every node's upload task uploads whatever the MPI task did: Batch writes a task's (and each subtask's)
 * stdout.txt and stderr.txt in its directory. Other `*.txt` files there (common resource files) are inputs.
 */
export const NODE_LOG_FILES: readonly string[] = ['stdout.txt', 'stderr.txt'];

export function nodeUploadTask(plan: OutputsPlan, node: UploadNode, containerUrl: string, exitCode: number): NodeUploadTask | undefined {
  if (!/^[A-Za-z0-9_.-]+$/.test(node.id) || !/^[A-Za-z0-9_./-]+$/.test(node.taskRootDirectory) || node.taskRootDirectory.split('/').includes('..')) {
    return undefined;
  }
  const taskDir = `$AZ_BATCH_NODE_ROOT_DIR/${node.taskRootDirectory}`;
  const base = `${plan.prefix}/nodes/${node.id}`;
  const outputFiles: TaskOutputFile[] = [];
  if (filesWanted(plan.when, exitCode)) {
    for (const p of plan.nodePatterns) {
      outputFiles.push({ filePattern: `${taskDir}/wd/${p}`, path: destinationFor(base, p), containerUrl, uploadCondition: 'taskSuccess' });
    }
  }
  if (plan.logs && !node.isMaster) {
    outputFiles.push({ filePattern: `${taskDir}/*.txt`, path: `${nodeLogsPrefix(plan.prefix)}${node.id}`, containerUrl, uploadCondition: 'taskSuccess' });
  }
  if (outputFiles.length === 0) return undefined;
  const id = shellQuote(node.id);
  return {
    nodeId: node.id,
    affinityId: node.affinityId,
    commandLine: bashCommandLine(
      `if [ "$AZ_BATCH_NODE_ID" != ${id} ]; then echo "this upload task is for node ${node.id} but runs on $AZ_BATCH_NODE_ID" >&2; exit ${WRONG_NODE_EXIT}; fi; ` +
        `echo "uploading the outputs of node ${node.id} from ${taskDir}"`,
    ),
    outputFiles,
  };
}
