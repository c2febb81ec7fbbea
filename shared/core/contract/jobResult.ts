/**
 * The result a finished job records (activity jobFinish writes it on the job row) and every reader parses:
 * the job API, the logs endpoint, usage, the sweep, the CLI and the dashboard. Declared once, as zod schemas,
 * so the OpenAPI document describes it and a reader never trusts a stored row blindly.
 */
import { z } from 'zod';
import type { TerminalState } from '../state/states';
import { FAILURE_CLASSES } from '../planning/failureClass';
import type { NodePreflight } from './preflight';
import type { FailureEvidence } from '../planning/failureExplain';

export const StageTimingSchema = z
  .object({
    startedAt: z.string(),
    endedAt: z.string().optional(),
  })
  .meta({ title: 'StageTiming' });
export type StageTiming = z.infer<typeof StageTimingSchema>;

export const LogRefSchema = z
  .object({
    node: z.string(),
    stdout: z.string().meta({ description: "Batch file URL of the node's stdout (gone with the pool)." }),
    stderr: z.string(),
  })
  .meta({ title: 'LogRef' });
export type LogRef = z.infer<typeof LogRefSchema>;

export const SubtaskResultSchema = z
  .object({
    id: z.number(),
    nodeId: z.string().optional(),
    exitCode: z.number().optional(),
    state: z.string(),
    taskRootDirectory: z.string().optional().meta({ description: "The MPI task's directory on that node, relative to the node root." }),
    stderrTail: z.string().optional().meta({
      description:
        "A failed subtask only (exit code not 0): the last lines of its stderr on that node (the coordination command's), read before the pool goes.",
    }),
  })
  .meta({ title: 'SubtaskResult' });

export const MpiResultSchema = z
  .object({
    /** The multi-instance task's id in the Batch job (the logs endpoint reads its files). */
    taskId: z.string().optional(),
    exitCode: z.number(),
    noExitCode: z.literal(true).optional().meta({
      description:
        "Batch reported no exit code (the task was ended before its program exited, e.g. on a lost node): exitCode is the placeholder -1, not the program's.",
    }),
    failure: z.string().optional(),
    subtasks: z
      .array(SubtaskResultSchema)
      .meta({ description: "Per node: the subtask's exit code (coordination command; the master's includes the application)." }),
    logs: z.array(LogRefSchema),
    stdoutTail: z.string().meta({ description: "The last lines of the master's stdout (kept: the files go away with the pool)." }),
    stderrTail: z.string().optional(),
    startTime: z.string().optional(),
    endTime: z.string().optional(),
    taskRootDirectory: z.string().optional().meta({ description: "The MPI task's directory on the master node, relative to the node root." }),
    fileUploadFailure: z
      .string()
      .optional()
      .meta({ description: "Batch could not upload the task's output files (FileUpload… failure); the exit code is the program's." }),
  })
  .meta({ title: 'MpiResult' });

export const OutputFileSchema = z
  .object({
    name: z.string().meta({ description: 'Blob name relative to the prefix: workdir/…, scratch/…, nodes/<nodeId>/…, logs/….' }),
    size: z.number(),
    url: z.string().meta({ description: "The blob's URL, without a SAS (fetch through GET /api/jobs/{id}/outputs or `hpcjob download`)." }),
  })
  .meta({ title: 'OutputFile' });

export const OutputsResultSchema = z
  .object({
    container: z.string().meta({ description: 'URL of the container (no SAS).' }),
    prefix: z.string(),
    files: z.array(OutputFileSchema).meta({ description: 'The outputs found after the uploads (at most 200 listed; see count).' }),
    count: z.number(),
    bytes: z.number(),
    truncated: z.boolean(),
    errors: z
      .array(z.string())
      .meta({ description: "Uploads that failed (the master's output files, a node's upload task). Empty when every upload went through." }),
  })
  .meta({ title: 'OutputsResult' });
export type OutputsResult = z.infer<typeof OutputsResultSchema>;
export type MpiResult = z.infer<typeof MpiResultSchema>;

export const JobCostSchema = z
  .object({
    vmSize: z.string().optional(),
    nodes: z.number(),
    allocatedAt: z.string(),
    releasedAt: z.string(),
    minutes: z.number(),
    nodeMinutes: z.object({ dedicated: z.number(), lowPriority: z.number(), total: z.number() }),
    perStage: z.record(z.string(), z.number()).meta({ description: 'Node-minutes (dedicated and Spot) spent while each stage was current.' }),
    pricePerNodeHour: z.number().optional(),
    spotPricePerNodeHour: z.number().optional().meta({
      description:
        'The Spot price the Spot node-minutes were costed with (absent: no Spot nodes, or no Spot price known, when they were costed at the dedicated price).',
    }),
    currency: z.string(),
    estimatedCost: z.number().optional().meta({ description: 'Absent when the VM size is not in the price table.' }),
    estimatedCostSplit: z
      .object({ dedicated: z.number(), spot: z.number() })
      .optional()
      .meta({ description: 'The estimated cost of the dedicated and of the Spot node-minutes (jobs with pool.spot).' }),
    priceSource: z.string(),
    idleNodeMinutesBeforeMpi: z
      .number()
      .optional()
      .meta({ description: 'Σ over nodes of (node ready → MPI task start), per MPI task started: billed minutes nodes sat idle before MPI.' }),
  })
  .meta({ title: 'JobCost' });
export type JobCost = z.infer<typeof JobCostSchema>;

export const HealthResultSchema = z
  .object({
    check: z.string().meta({ description: 'cpu, memory, ib, ibbw, stream, gpu, linkflap or site.' }),
    device: z.string().optional().meta({ description: 'The InfiniBand device or port the figure is of.' }),
    ok: z.boolean(),
    measured: z.string().meta({ description: 'What the node showed, with its unit.' }),
    threshold: z.string().optional().meta({ description: 'What it had to be.' }),
    source: z.string().optional().meta({ description: 'Where the threshold comes from (AzNHC conf file and check).' }),
    skipped: z.string().optional().meta({ description: 'Why the figure was not judged (tool missing on the node, no threshold for the size).' }),
  })
  .meta({ title: 'HealthResult' });

export const NodePreflightSchema = z
  .object({
    ok: z.boolean(),
    ip: z.string(),
    sshMs: z.number().optional().meta({ description: "ssh round trip from the master on the launcher's port (the master: its local probe)." }),
    freeGB: z.number().optional().meta({ description: 'Free space under the Batch task directory.' }),
    latencyUs: z.number().optional().meta({ description: "The worst median one-way latency (8-byte messages) of the node's ping-pong pairs." }),
    bandwidthMBps: z.number().optional().meta({ description: "The worst bandwidth (1 MiB messages) of the node's ping-pong pairs." }),
    health: z.array(HealthResultSchema).optional().meta({ description: "The node health checks of the VM size (AzNHC figures) and the site's check, judged." }),
    problems: z.array(z.string()),
  })
  .meta({ title: 'NodePreflight' });

export const PreflightResultSchema = z
  .object({
    rounds: z.number().meta({ description: 'Checks run (a round that found bad nodes replaced them and checked again).' }),
    passed: z.boolean(),
    pingPong: z.string().meta({ description: '"measured over N pair(s)", or why there was no ping-pong.' }),
    nodes: z.record(z.string(), NodePreflightSchema).meta({ description: 'Node id → the figures of the last check on that node.' }),
    replaced: z.array(z.string()).meta({ description: 'Nodes the check replaced (or, in a reused pool, left out).' }),
  })
  .meta({ title: 'PreflightResult' });
export type PreflightResult = z.infer<typeof PreflightResultSchema>;
// The planner declares a node's figures (shared/core/planning/preflight.ts); the schema must describe exactly that.
const _sameFigures: [NodePreflight, z.infer<typeof NodePreflightSchema>] extends [z.infer<typeof NodePreflightSchema>, NodePreflight] ? true : never = true;
void _sameFigures;

export const AttemptSchema = z
  .object({
    attempt: z.number().meta({ description: '1, 2, …' }),
    startedAt: z.string(),
    endedAt: z.string(),
    nodes: z.array(z.string()).meta({ description: 'The nodes the attempt ran on (as far as it got).' }),
    outcome: z.enum(['succeeded', 'failed', 'cancelled']),
    failureClass: z.enum(FAILURE_CLASSES).optional(),
    reason: z.string().optional(),
    exitCode: z.number().optional().meta({
      description: "The MPI task's exit code; absent when the attempt had none (it ended before the MPI task, or Batch reported none: see failureClass).",
    }),
    mpiTaskId: z.string().optional(),
    /** What happened next: another attempt (after `retryAfterMs`, on nodes replacing `replacedNodes`) or not, and why. */
    retried: z.boolean().optional(),
    retryReason: z.string().optional(),
    retryAfterMs: z.number().optional(),
    replacedNodes: z.array(z.string()).optional(),
    nodeMinutes: z
      .number()
      .meta({ description: "Nodes × the attempt's duration (the job's cost covers the pool over every attempt and the waits between them)." }),
    preflight: PreflightResultSchema.optional().meta({
      description:
        "The attempt's last check; `nodes` holds the failing nodes only (every node's figures of the run's last check are in the result's `preflight`).",
    }),
  })
  .meta({ title: 'Attempt' });
export type Attempt = z.infer<typeof AttemptSchema>;

export const StagingTimesSchema = z
  .object({
    overlapped: z.boolean().meta({ description: 'Staged beside provisioning and the pulls (PIPELINE_OVERLAP).' }),
    copy: StageTimingSchema.meta({ description: 'The server-side shard copy: from admission to the last URL minted.' }),
    downloads: StageTimingSchema.optional().meta({ description: 'The first node download task added → the last one seen done.' }),
  })
  .meta({ title: 'StagingTimes' });

export const JobResultSchema = z
  .object({
    exitCode: z.number().optional(),
    timings: z.record(z.string(), StageTimingSchema).meta({ description: 'When each stage started and ended.' }),
    staging: StagingTimesSchema.optional().meta({
      description: 'When the overlapped staging copied and downloaded (its work runs across the stages of `timings`).',
    }),
    nodeMinutes: z.number().optional(),
    cost: JobCostSchema.optional(),
    logs: z.array(LogRefSchema).optional(),
    mpi: MpiResultSchema.optional(),
    outputs: OutputsResultSchema.optional().meta({ description: "Where the job's outputs went (spec outputs), with sizes and URLs." }),
    attempts: z
      .array(AttemptSchema)
      .optional()
      .meta({ description: 'Every attempt of the pipeline and why it ended (retry by failure class, docs/scheduling.md).' }),
    preflight: PreflightResultSchema.optional().meta({ description: 'The last preflight check before the MPI task, per node.' }),
  })
  .meta({ title: 'JobResult' });
export type JobResult = z.infer<typeof JobResultSchema>;

/**
 * The result as a client of the API reads it: leniently, since any part may be missing (an older server, a job
 * that ended before the MPI task). The CLI and the dashboard use this, so a renamed field breaks their build.
 */
export type JobResultView = Partial<Omit<JobResult, 'mpi'>> & { mpi?: Partial<MpiResult> };

/** What the orchestration returns and jobFinish records. */
export interface JobOutcome {
  state: TerminalState;
  reason?: string;
  result: JobResult;
  /** What the pipeline saw of a failure before its pool went (a start task's stderr, …): the job's error explains it. */
  evidence?: FailureEvidence;
}

/**
 * A stored result, parsed: undefined when there is none or it does not have the expected shape (a row written
 * by an older version, or damaged), so one bad row never breaks a reader.
 */
export function parseJobResult(value: unknown): JobResult | undefined {
  if (value === undefined || value === null) return undefined;
  const parsed = JobResultSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}
