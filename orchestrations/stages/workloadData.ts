import type {
  BatchTaskRef,
  JobOutcome,
  MpiResult,
  NodeRef,
  NodeTaskObservation,
  NodeTaskRequest,
  OutputsResult,
  PipelineSettings,
} from '../../shared/core/contract';
import { activityFailureMessage } from '../runtime/activityCalls';
import type { Task } from 'durable-functions';
import type { JobSpec } from '../../shared/core/spec/schema';
import type { MpiTaskUrls } from '../../shared/core/planning/mpiTaskRequest';
import {
  NODE_LOG_FILES,
  nodeFileSources,
  nodeLogsPrefix,
  nodeSasLifetimeMs,
  nodeUploadTask,
  outputsPlan,
  WRONG_NODE_EXIT,
  type NodeUploadTask,
  type OutputsPlan,
} from '../../shared/core/planning/workloadData';
import { Orchestration, PipelineRun } from '../runtime/pipelineRun';
import { uploadTaskRequest } from '../../shared/core/planning/batchRequests';
import { MAX_VERIFIED_UPLOADS, missingUploadErrors } from '../../shared/core/planning/outputsCheck';

/**
 * The SAS URLs the MPI task needs: a read-only one per blob of `files` (a read/list one per prefix) and a
 * create/write one for the outputs (on the job's outputs prefix alone on an HNS account, else on the container), valid for the MPI run (its wall clock per attempt plus the margin,
 * never beyond the deployment's cap). Nothing to mint: no call.
 */
export function* workloadUrls(run: PipelineRun, spec: JobSpec, settings: PipelineSettings): Orchestration<MpiTaskUrls> {
  const files = nodeFileSources(spec);
  if (files.length === 0 && !spec.outputs) return { commonResourceFiles: [] };
  const expiresAt = new Date(run.now().getTime() + nodeSasLifetimeMs(spec, settings)).toISOString();
  const outputs = outputsPlan(spec, run.jobId);
  const urls = yield* run.call('workloadUrls', {
    files,
    ...(outputs ? { outputs: { account: outputs.account, container: outputs.container, prefix: outputs.prefix } } : {}),
    expiresAt,
  });
  return { commonResourceFiles: urls.files, outputsContainerUrl: urls.outputsContainerUrl };
}

export interface NodeUploadsRequest {
  plan: OutputsPlan;
  batchJobId: string;
  /** The pool the nodes are in (the node uploads are verified by listing the nodes' files). */
  poolId: string;
  /** The job's nodes, in pool order (task ids use the index). */
  nodes: NodeRef[];
  mpi: MpiResult;
  containerUrl: string;
  maxAttempts: number;
  /** Check the default logs by one listing of the job's logs prefix (PipelineSettings.nodeLogsListed; absent: per node). */
  logsListed?: boolean;
}

/**
 * After the MPI task (whose own output files Batch uploaded from the master before it completed): one task per node
 * uploads that node's every-node files and its task stdout/stderr (Batch uploads a multi-instance task's output files
 * from the primary only). Batch affinity is a hint, so a task that ran on another node fails itself and is added
 * again for its node, up to maxAttempts; a failed upload is retried the same way, then reported. Waits on plain
 * durable timers: the MPI run is over, and what it produced is uploaded before cleanup may delete the pool (a cancel
 * arriving now takes effect after the uploads). Returns one message per node whose uploads failed.
 */
export function* uploadNodeOutputs(run: PipelineRun, req: NodeUploadsRequest): Orchestration<string[]> {
  const index = new Map(req.nodes.map((n) => [n.id, n]));
  const masterId = req.mpi.logs[0]?.node;
  const where = [
    ...(masterId && req.mpi.taskRootDirectory ? [{ nodeId: masterId, dir: req.mpi.taskRootDirectory, isMaster: true }] : []),
    ...req.mpi.subtasks
      .filter((s) => s.id !== 0 && s.nodeId && s.taskRootDirectory && s.nodeId !== masterId)
      .map((s) => ({ nodeId: s.nodeId as string, dir: s.taskRootDirectory as string, isMaster: false })),
  ];
  const work: { upload: NodeUploadTask; slot: number; dir: string }[] = [];
  const uploaded: UploadedFrom[] = [];
  for (const w of where) {
    const node = index.get(w.nodeId);
    if (!node) continue;
    const upload = nodeUploadTask(
      req.plan,
      { id: node.id, affinityId: node.affinityId, taskRootDirectory: w.dir, isMaster: w.isMaster },
      req.containerUrl,
      req.mpi.exitCode,
    );
    if (upload) work.push({ upload, slot: req.nodes.indexOf(node), dir: w.dir });
  }
  const errors: string[] = [];
  if (work.length === 0) return errors;

  const total = work.length;
  let done = 0;
  const report = () => run.report({ progress: { outputsUploaded: { done, total } } });
  report();
  let pending = work.map((w) => ({ ...w, attempt: 1 }));
  for (let round = 1; pending.length; round++) {
    const tasks: NodeTaskRequest[] = pending.map((p) => uploadTaskRequest(p.upload, p.slot, p.attempt));
    yield* run.call('nodeTasksAdd', { batchJobId: req.batchJobId, tasks });
    const byId = new Map(pending.map((p, i) => [tasks[i].id, p]));
    const open = new Set(byId.keys());
    const retry: typeof pending = [];
    for (let poll = 0; open.size; poll++) {
      yield* plainSleep(run, run.lookDelayMs(poll, `uploads-${round}`, run.pollDelayMs(Math.min(poll, 3))));
      const observed = yield* run.call('nodeTasksObserve', { batchJobId: req.batchJobId, taskIds: [...open] });
      for (const o of observed) {
        const p = byId.get(o.id);
        if (!p || (o.state !== 'completed' && o.state !== 'missing')) continue;
        open.delete(o.id);
        if (o.state === 'completed' && o.exitCode === 0 && !o.failure) {
          done += 1;
          uploaded.push({ upload: p.upload, dir: p.dir });
        } else if (p.attempt < req.maxAttempts) {
          retry.push({ ...p, attempt: p.attempt + 1 });
        } else {
          errors.push(`node ${p.upload.nodeId}: ${uploadFailure(o)}`);
        }
      }
      report();
    }
    pending = retry;
  }
  errors.push(...(yield* verifyNodeUploads(run, req, uploaded)));
  return errors;
}

/** A node upload task that reported success, and the MPI task's directory on its node it uploaded from. */
interface UploadedFrom {
  upload: NodeUploadTask;
  dir: string;
}

/** Blob names per outputsMissing call when the node checks are looked up. */
const NAMES_PER_LOOKUP = 250;

/**
 * Outputs verified before success, for the node uploads: as for the master's (verifyMasterUploads), the blobs each
 * upload task that reported success must have produced (from the files below the MPI task's directory on its node)
 * are looked up in the outputs container; each missing one is an error naming the node. The nodes' files are listed
 * together; the names of all nodes are looked up in batches, at most MAX_VERIFIED_UPLOADS for the job's nodes
 * together (the rest are not checked). A check that cannot be made is an error too.
 */
export function* verifyNodeUploads(
  run: PipelineRun,
  req: Pick<NodeUploadsRequest, 'plan' | 'poolId' | 'logsListed'>,
  uploaded: readonly UploadedFrom[],
): Orchestration<string[]> {
  if (uploaded.length === 0) return [];
  // With logsListed, the default logs (the same file names on every node) are checked by one listing of the job's
  // logs prefix; only the every-node files the spec asks for need each node's files listed (their names vary).
  const logsPrefix = nodeLogsPrefix(req.plan.prefix);
  const isLogs = (u: UploadedFrom, path: string | undefined) => !!req.logsListed && path === `${logsPrefix}${u.upload.nodeId}`;
  const listed = uploaded.map((u) => ({ u, files: u.upload.outputFiles.filter((f) => !isLogs(u, f.path)) })).filter((x) => x.files.length > 0);
  const logNodes = uploaded.filter((u) => u.upload.outputFiles.some((f) => isLogs(u, f.path))).map((u) => u.upload.nodeId);
  try {
    const logsMissing = logNodes.length
      ? yield* run.call('nodeLogsMissing', {
          account: req.plan.account,
          container: req.plan.container,
          prefix: logsPrefix,
          nodes: logNodes,
          files: [...NODE_LOG_FILES],
        })
      : [];
    const expected =
      listed.length === 0
        ? []
        : yield* run.all(
            listed.map(({ u, files }) =>
              run.start('nodeTaskUploads', {
                poolId: req.poolId,
                nodeId: u.upload.nodeId,
                taskRootDirectory: u.dir,
                outputFiles: files.map((f) => ({ filePattern: f.filePattern, ...(f.path !== undefined ? { path: f.path } : {}) })),
              }),
            ),
          );
    const owner = new Map<string, string>();
    listed.forEach(({ u }, i) => {
      for (const name of expected[i].names) if (!owner.has(name)) owner.set(name, u.upload.nodeId);
    });
    const names = [...owner.keys()].slice(0, MAX_VERIFIED_UPLOADS);
    const lookups = [];
    for (let i = 0; i < names.length; i += NAMES_PER_LOOKUP) {
      lookups.push(run.start('outputsMissing', { account: req.plan.account, container: req.plan.container, names: names.slice(i, i + NAMES_PER_LOOKUP) }));
    }
    const missing = lookups.length ? (yield* run.all(lookups)).flat() : [];
    const logOwner = (name: string) => name.slice(logsPrefix.length).split('/')[0];
    return [
      ...logsMissing.flatMap((name) => missingUploadErrors([name], `node ${logOwner(name)}`)),
      ...missing.flatMap((name) => missingUploadErrors([name], `node ${owner.get(name)}`)),
    ];
  } catch (err) {
    return [`node outputs not verified: ${activityFailureMessage(err)}`];
  }
}

/** Why a node's upload task did not upload: it ran elsewhere, or Batch's upload failure, or what it printed. */
function uploadFailure(o: NodeTaskObservation): string {
  if (o.state === 'missing') return `upload task ${o.id} disappeared`;
  if (o.exitCode === WRONG_NODE_EXIT) return `upload task ran on ${o.nodeId ?? 'another node'} every time (Batch affinity is a hint)`;
  return [o.failure, o.outputTail && `output: ${o.outputTail}`].filter(Boolean).join('; ') || `upload task exited ${o.exitCode}`;
}

/**
 * Outputs verified before success: the blobs the MPI task's own output files must have produced (from the files in
 * its directory on the master, and its exit code) are looked up in the outputs container; each missing one is an
 * error. Batch reports an upload that failed, not one that never happened (the node or the stack died while
 * uploading, a write storage lost). A check that cannot be made is an error too: the outputs are then not known to be
 * complete.
 */
export function* verifyMasterUploads(run: PipelineRun, req: Pick<NodeUploadsRequest, 'plan' | 'batchJobId' | 'mpi'>): Orchestration<string[]> {
  const taskId = req.mpi.taskId;
  if (!taskId || req.plan.master.length === 0) return [];
  try {
    const expected = yield* run.call('mpiTaskUploads', { batchJobId: req.batchJobId, taskId, master: req.plan.master, exitCode: req.mpi.exitCode });
    if (expected.names.length === 0) return [];
    const missing = yield* run.call('outputsMissing', { account: req.plan.account, container: req.plan.container, names: expected.names });
    return missingUploadErrors(missing);
  } catch (err) {
    return [`outputs not verified: ${activityFailureMessage(err)}`];
  }
}

export interface KeepOutputsRequest extends NodeUploadsRequest {
  /** Whether upload tasks follow the MPI task (every-node files, or the other nodes' logs). */
  nodeUploads: boolean;
  /** The spec's cleanup.autoComplete: switch the job's auto-termination on after the node uploads. */
  autoComplete: boolean;
}

export interface KeptOutputs {
  /** What landed under the prefix; undefined when it could not be listed (the reason is in errors). */
  listing?: OutputsResult;
  errors: string[];
}

/**
 * Outputs after the MPI task: the master's upload result (Batch reports it as the task's failure) and the check that
 * its uploads are all in the container, the node uploads, then the listing for the job result. The job's auto-termination (unless cleanup.autoComplete is false) is switched
 * on once the node uploads are done.
 * Never throws for an upload or listing problem: that is reported, and the MPI outcome stands.
 */
export function* keepOutputs(run: PipelineRun, req: KeepOutputsRequest): Orchestration<KeptOutputs> {
  const errors = req.mpi.fileUploadFailure ? [`master: ${req.mpi.fileUploadFailure}`] : [];
  errors.push(...(yield* verifyMasterUploads(run, req)));
  try {
    if (req.nodeUploads) {
      errors.push(...(yield* uploadNodeOutputs(run, req)));
      if (req.autoComplete) yield* run.call('batchJobAutoComplete', { batchJobId: req.batchJobId });
    }
    const listing = yield* run.call('outputsList', { account: req.plan.account, container: req.plan.container, prefix: req.plan.prefix, errors });
    return { listing, errors };
  } catch (err) {
    errors.push(`outputs not listed: ${activityFailureMessage(err)}`);
    return { errors };
  }
}

/**
 * The job's outcome with its outputs: the listing goes into the result; upload failures become a note on the job
 * (the reason recorded with its final state) and, with onUploadFailure "fail", fail it.
 */
export function withOutputs(outcome: JobOutcome, kept: KeptOutputs, onUploadFailure: OutputsPlan['onUploadFailure']): JobOutcome {
  const result = kept.listing ? { ...outcome.result, outputs: kept.listing } : outcome.result;
  if (kept.errors.length === 0) return { ...outcome, result };
  const reason = [outcome.reason, `outputs incomplete: ${kept.errors.join('; ')}`].filter(Boolean).join('; ');
  return onUploadFailure === 'fail' && outcome.state === 'Succeeded' ? { state: 'Failed', reason, result } : { ...outcome, reason, result };
}

/**
 * Cleanup after a cancel or failure while the MPI task may still run: once its Batch job is terminated Batch ends
 * the task and uploads its output files; the pool must stay until it has (polls at most `maxPolls` times).
 * Returns false when the task had not completed by then.
 */
export function* awaitTaskCompleted(run: PipelineRun, task: BatchTaskRef, maxPolls: number): Orchestration<boolean> {
  for (let poll = 0; poll < maxPolls; poll++) {
    const obs = yield* run.call('mpiTaskObserve', task);
    if (obs.state === 'completed' || obs.state === 'missing') return true;
    yield* plainSleep(run, run.pollDelayMs(Math.min(poll, 3)));
  }
  return false;
}

/** A durable timer that a cancel does not interrupt (cleanup and the uploads after the MPI run wait on these). */
function* plainSleep(run: PipelineRun, ms: number): Orchestration<void> {
  const timer: Task = run.ctx.df.createTimer(new Date(run.now().getTime() + ms));
  yield timer;
}
