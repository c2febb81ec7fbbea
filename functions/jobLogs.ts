/**
 * GET /api/jobs/{id}/logs?node=<nodeId>&stream=stdout|stderr&since=<bytes>   (own job; admins any)
 *
 * The stdout/stderr of the MPI master (the default node) or of the subtask on `node`, read from Batch with the
 * app's credentials, so clients (the CLI) never hold Batch keys. `since` answers only the bytes after that
 * offset (at most MAX_BYTES, the newest ones), which is how `hpcjob logs --follow` tails a running job.
 * Once the pool is deleted the files are gone with it: the master's stdout then comes from the tail the
 * pipeline recorded in the job result (`source: "recorded"`), and so does the stderr of a node whose subtask failed
 * (the pipeline keeps its tail: docs/troubleshooting.md).
 */
import { type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { BatchError, getTask, listSubtasks, readNodeFile, readTaskFile, type BatchContext, type FileContent } from '../shared/adapters/batch';
import { batchContextFor, jobStore } from '../shared/services';
import { MPI_TASK_ID } from '../shared/core/planning/jobPlan';
import type { JobResult } from '../shared/core/contract';
import { isTerminal } from '../shared/adapters/state';
import { invalidRequest, problem, unavailable } from './lib/http';
import { authorize, visibleJob } from './lib/auth';
import { badJobId } from './lib/jobId';
import { registerRoute } from './lib/route';

const MAX_BYTES = 1024 * 1024;

type Stream = 'stdout' | 'stderr';

export interface JobLogsResponse {
  jobId: string;
  node: string;
  stream: Stream;
  /** live: read from the node now; recorded: the tail kept in the job result; none: nothing to read (yet or any more). */
  source: 'live' | 'recorded' | 'none';
  /** Size of the whole file (live) or of the recorded tail. */
  size: number;
  /** Byte offset of `content` in the file. */
  start: number;
  content: string;
  /** Every node with logs: the master first. */
  nodes: string[];
  message?: string;
}

interface NodeLog {
  node: string;
  read: (file: string, maxBytes: number) => Promise<FileContent>;
}

/** The MPI task of the job: the one its result names (results recorded before the id was kept name none). */
function mpiTaskIdOf(result: JobResult | undefined): string {
  return result?.mpi?.taskId ?? MPI_TASK_ID;
}

/** Where each node's files are, asked from Batch now: the master's task directory and every subtask's. */
async function nodeLogs(ctx: BatchContext, batchJobId: string, taskId: string): Promise<NodeLog[]> {
  const task = await getTask(ctx, batchJobId, taskId);
  if (task.state === 'missing' || !task.nodeId) return [];
  const master: NodeLog = { node: task.nodeId, read: (file, maxBytes) => readTaskFile(ctx, batchJobId, taskId, file, { maxBytes }) };
  const subtasks = await listSubtasks(ctx, batchJobId, taskId);
  const poolId = task.poolId;
  const others = subtasks
    .filter((s) => s.id !== 0 && s.nodeId && s.taskRootDirectory && poolId && s.nodeId !== task.nodeId)
    .map((s): NodeLog => ({
      node: s.nodeId as string,
      read: (file, maxBytes) => readNodeFile(ctx, poolId as string, s.nodeId as string, `${s.taskRootDirectory}/${file}`, { maxBytes }),
    }));
  return [master, ...others];
}

const MISSING: FileContent = { exists: false, size: 0, content: '', truncated: false };

/**
 * The bytes after `since`: the size first (no content), then the new end, bounded. Reads keep the END of a file,
 * so when it grew between the two calls the read is repeated with the larger size (a few times): otherwise the
 * bytes written in between would be skipped. A task whose node is gone (pool deleted) answers 409 (the task is
 * no longer on a node): that is "no file", not an API failure.
 */
async function readSince(log: NodeLog, stream: Stream, since: number): Promise<FileContent> {
  try {
    let file = await log.read(`${stream}.txt`, 0);
    for (let attempt = 0; attempt < 5 && file.exists && file.size > since; attempt++) {
      const wanted = Math.min(MAX_BYTES, file.size - since);
      file = await log.read(`${stream}.txt`, wanted);
      if (!file.exists || wanted === MAX_BYTES || file.size - Buffer.byteLength(file.content) <= since) break;
    }
    return file;
  } catch (err) {
    if (err instanceof BatchError && (err.status === 409 || err.status === 404)) return MISSING;
    throw err;
  }
}

export async function jobLogsHttp(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const auth = await authorize(request, 'job:read');
  if (!auth.ok) return auth.response;
  const id = request.params.id;
  const invalidId = badJobId(id);
  if (invalidId) return invalidId;
  const stream = (request.query.get('stream') ?? 'stdout') as Stream;
  if (stream !== 'stdout' && stream !== 'stderr') {
    return invalidRequest([{ path: 'stream', message: `must be stdout or stderr, got ${JSON.stringify(stream)}` }]);
  }
  const sinceText = request.query.get('since') ?? '0';
  const since = Number(sinceText);
  if (!Number.isInteger(since) || since < 0) {
    return invalidRequest([{ path: 'since', message: `must be a whole number of bytes, got ${JSON.stringify(sinceText)}` }]);
  }
  const wanted = request.query.get('node') ?? undefined;
  try {
    const job = visibleJob(auth.principal, await (await jobStore()).get(id));
    if (!job) return problem(404, 'JobNotFound', `no job with id ${id}`);
    const recorded = job.result;
    const logs = job.batchJobId ? await nodeLogs(batchContextFor(job.batchAccount), job.batchJobId, mpiTaskIdOf(recorded)) : [];
    const nodes = logs.length ? logs.map((l) => l.node) : (recorded?.logs ?? []).map((l) => l.node);
    const node = wanted ?? nodes[0];
    const base = { jobId: id, stream, nodes };
    if (!node) {
      const body: JobLogsResponse = {
        ...base,
        node: '',
        source: 'none',
        size: 0,
        start: 0,
        content: '',
        message: `job ${id} has not started its MPI task yet (${job.state})`,
      };
      return { status: 200, jsonBody: body };
    }
    if (!nodes.includes(node)) return problem(404, 'NodeNotFound', `job ${id} has no logs on node ${node}; nodes: ${nodes.join(', ') || 'none'}`);
    const log = logs.find((l) => l.node === node);
    const file = log ? await readSince(log, stream, since) : undefined;
    if (file?.exists) {
      const start = file.size - Buffer.byteLength(file.content);
      const body: JobLogsResponse = { ...base, node, source: 'live', size: file.size, start, content: file.content };
      return { status: 200, jsonBody: body };
    }
    // The node is gone (pool deleted): the master's output tails were kept in the result when the job ended, and the
    // stderr tail of every node whose subtask failed.
    const master = node === nodes[0];
    const tail = master
      ? stream === 'stdout'
        ? recorded?.mpi?.stdoutTail
        : recorded?.mpi?.stderrTail
      : stream === 'stderr'
        ? recorded?.mpi?.subtasks.find((s) => s.nodeId === node && s.stderrTail !== undefined)?.stderrTail
        : undefined;
    if (tail !== undefined) {
      const size = Buffer.byteLength(tail);
      const content = since >= size ? '' : Buffer.from(tail).subarray(since).toString('utf8');
      const body: JobLogsResponse = {
        ...base,
        node,
        source: 'recorded',
        size,
        start: Math.min(since, size),
        content,
        message: `the node is gone (pool deleted): these are the last lines of the ${master ? 'master' : `failed node ${node}`} ${stream} recorded when the job ended`,
      };
      return { status: 200, jsonBody: body };
    }
    const body: JobLogsResponse = {
      ...base,
      node,
      source: 'none',
      size: 0,
      start: 0,
      content: '',
      message: `the ${stream} of node ${node} is not available (${job.state === 'CleaningUp' || isTerminal(job.state) ? 'the node is gone or the task never ran there' : 'not written yet'})`,
    };
    return { status: 200, jsonBody: body };
  } catch (err) {
    return unavailable(context, `job logs ${id}`, err);
  }
}

registerRoute('jobLogs', { handler: jobLogsHttp });
