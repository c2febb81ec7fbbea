import { inNodeNamespace } from './mountNamespace';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { timerMs } from '../model/duration';
import { touch } from '../model/etag';
import { isFileUploadFailure, isPreProcessingFailure } from '../model/exitOptions';
import type { ExecInfo, JobRecord, Json, NodeRecord, PoolRecord, SubtaskRecord, TaskRecord, TaskState } from '../model/types';
import { Engine, taskKey } from './engine';
import { taskUserEnv, userEnv } from './env';
import { splitCommandLine } from './commandLine';
import { groupAlive, killGroup, runCommandLine, type ProcessOutcome } from './processes';
import { uploadOutputFiles } from './outputFiles';
import { downloadResourceFiles } from './resourceFiles';
import { taskRootRelative } from './sandbox';
import { mountedTargets } from './mounts';
import { backgroundFailure } from './background';

/** Batch's reserved port on the MI master (AZ_BATCH_MASTER_NODE=ip:6000). */
const MASTER_PORT = 6000;

interface RunOutcome {
  exitCode?: number;
  failureInfo?: Json;
}

function failure(code: string, message: string, details?: { name: string; value: string }[]): Json {
  return { category: 'usererror', code, message, ...(details ? { details } : {}) };
}

const EXIT_FAILURE = () =>
  failure('FailureExitCode', 'The task exited with an exit code representing a failure', [
    { name: 'Message', value: 'The task process exited with an unexpected exit code' },
    { name: 'AdditionalErrorCode', value: 'FailureExitCode' },
  ]);

/** " <code>: <message>" of a subtask's own failure other than a plain non-zero exit (a download, a start), else "". */
const subtaskCause = (r: RunOutcome): string =>
  r.failureInfo && r.exitCode === undefined && r.failureInfo.message ? ` ${r.failureInfo.code}: ${r.failureInfo.message}` : '';

const downloadFailure = (e: unknown): RunOutcome => ({
  failureInfo: failure('BlobDownloadMiscError', `Resource file download failed: ${(e as Error).message}`),
});

/**
 * One run of a start, preparation or release task: an injected fault (`injectedExitCode`) fails it without running;
 * otherwise `run` downloads its resource files and runs it, and a throw is a failed download.
 */
async function runOrFail(injectedExitCode: number | undefined, run: () => Promise<RunOutcome>): Promise<RunOutcome> {
  if (injectedExitCode !== undefined) return { exitCode: injectedExitCode, failureInfo: EXIT_FAILURE() };
  try {
    return await run();
  } catch (e) {
    return downloadFailure(e);
  }
}

/** A job preparation/release task's directory relative to the node root (`id` defaults as on Batch). */
function jobTaskRelative(jobId: string, spec: Json, defaultId: 'jobpreparation' | 'jobrelease'): string {
  return `workitems/${jobId}/job-1/${typeof spec.id === 'string' ? spec.id : defaultId}`;
}

function outcomeOf(o: ProcessOutcome, timedOut: boolean): RunOutcome {
  if (timedOut) {
    return {
      exitCode: o.exitCode ?? 137,
      failureInfo: failure('MaxWallClockTimeExceeded', 'The task ran longer than its maxWallClockTime constraint and was terminated.'),
    };
  }
  if (o.spawnError) return { failureInfo: failure('CommandProgramNotFound', `The command could not be started: ${o.spawnError}`) };
  const exitCode = o.exitCode ?? 128 + 9;
  return exitCode === 0 ? { exitCode } : { exitCode, failureInfo: EXIT_FAILURE() };
}

/**
 * containerSettings: as on Batch, the command line runs in the container with the node root mapped
 * at the same path, the task's environment and (by default) the task working directory. It goes
 * through the node's `docker` (the emulated one from nodetools, on the node PATH via nodePath).
 */
export function containerArgv(settings: Json, env: Record<string, string>, cwd: string, argv: string[]): string[] {
  const image = String(settings.imageName ?? '');
  const root = env.AZ_BATCH_NODE_ROOT_DIR;
  const runOptions = typeof settings.containerRunOptions === 'string' ? splitCommandLine(settings.containerRunOptions) : [];
  const workdir = settings.workingDirectory === 'containerImageDefault' ? [] : ['-w', cwd];
  const name = `${env.AZ_BATCH_JOB_ID ?? 'node'}_${env.AZ_BATCH_TASK_ID ?? 'task'}_${Date.now().toString(36)}`.replace(/[^A-Za-z0-9_.-]/g, '_');
  return ['docker', 'run', '--rm', '--name', name, '-v', `${root}:${root}`, ...workdir, ...runOptions, image, ...argv];
}

export function setTaskState(t: TaskRecord, s: TaskState): void {
  if (t.state === s) return;
  t.previousState = t.state;
  t.previousStateTransitionTime = t.stateTransitionTime;
  t.state = s;
  t.stateTransitionTime = new Date();
  touch(t);
}

/** Runs start tasks, job preparation/release tasks and tasks (incl. multi-instance) as real processes. */
export class TaskExecutor {
  /** In-flight prep runs, `${job}/${node}` → success. */
  private readonly prepRuns = new Map<string, Promise<boolean>>();
  onTaskCompleted: (job: JobRecord, task: TaskRecord) => void = () => undefined;

  constructor(private readonly engine: Engine) {
    engine.runStartTask = (pool, node) => void this.runStartTask(pool, node).catch(backgroundFailure(`the start task on node ${node.id}`));
  }

  private track(pgid: number | undefined, node: NodeRecord, task?: TaskRecord): void {
    if (!pgid) return;
    this.engine.pgids.add(pgid);
    this.engine.groupsOf(node).add(pgid);
    task?.pgids.add(pgid);
  }

  /** Runs a command to completion with a wall-clock limit; output goes to dir/stdout.txt & stderr.txt. */
  private async runToEnd(opts: {
    commandLine: string;
    cwd: string;
    env: Record<string, string>;
    outDir: string;
    outPrefix?: string;
    maxWallClockMs?: number;
    task?: TaskRecord;
    /** The node it runs on: removing or rebooting the node kills it. */
    node: NodeRecord;
    /** The task's containerSettings: the command line then runs in that container. */
    container?: unknown;
  }): Promise<RunOutcome> {
    const prefix = opts.outPrefix ?? '';
    const stdoutPath = path.join(opts.outDir, `${prefix}stdout.txt`);
    const stderrPath = path.join(opts.outDir, `${prefix}stderr.txt`);
    writeFileSync(stdoutPath, '');
    writeFileSync(stderrPath, '');
    const container = opts.container as Json | undefined;
    // Every process of a node runs in its own mount namespace holding the node's fixed paths (mountNamespace.ts).
    const wrap = (argv: string[]) => inNodeNamespace(opts.node.rootDir, container ? containerArgv(container, opts.env, opts.cwd, argv) : argv);
    const kills = () => this.engine.killCount(opts.node) + (opts.task ? this.engine.killCount(opts.task) : 0);
    const killsBefore = kills();
    const proc = await runCommandLine({ commandLine: opts.commandLine, cwd: opts.cwd, env: opts.env, stdoutPath, stderrPath, wrap });
    this.track(proc.pgid, opts.node, opts.task);
    // Killed while it was starting (its node removed, its task terminated, the emulator stopped): kill it now.
    if (kills() !== killsBefore || this.engine.isStopped) killGroup(proc.pgid);
    let timedOut = false;
    const timer =
      opts.maxWallClockMs !== undefined
        ? this.engine.later(opts.maxWallClockMs, () => {
            timedOut = true;
            killGroup(proc.pgid);
          })
        : undefined;
    const o = await proc.done;
    this.engine.cancel(timer);
    // Forget groups that are gone, so a later kill can never hit a recycled process group id.
    if (proc.pgid && !groupAlive(proc.pgid)) {
      this.engine.pgids.delete(proc.pgid);
      this.engine.groupsOf(opts.node).delete(proc.pgid);
      opts.task?.pgids.delete(proc.pgid);
    }
    return outcomeOf(o, timedOut);
  }

  // ---- start task --------------------------------------------------------------------------

  private async runStartTask(pool: PoolRecord, node: NodeRecord): Promise<void> {
    const st = pool.startTask as Json;
    const waitForSuccess = st.waitForSuccess !== false;
    const maxRetries = typeof st.maxTaskRetryCount === 'number' ? st.maxTaskRetryCount : 0;
    const startup = path.join(node.rootDir, 'startup');
    const wd = path.join(startup, 'wd');
    const info: Json & { state: 'running' | 'completed' } = { state: 'running', startTime: new Date().toISOString(), retryCount: 0 };
    node.startTaskInfo = info;
    for (let attempt = 0; ; attempt++) {
      const out = await runOrFail(this.engine.cfg.faults.startTaskFailureExitCode(pool.id, node.ordinal), async () => {
        mkdirSync(wd, { recursive: true });
        await downloadResourceFiles(st.resourceFiles as Json[] | undefined, wd, this.engine.agentOf(node.poolId));
        const env = {
          ...this.engine.nodeEnv(node),
          ...userEnv(st.environmentSettings),
          ...taskUserEnv(st.userIdentity),
          AZ_BATCH_TASK_DIR: startup,
          AZ_BATCH_TASK_WORKING_DIR: wd,
        };
        return this.runToEnd({ commandLine: String(st.commandLine ?? ''), cwd: wd, env, outDir: startup, container: st.containerSettings, node });
      });
      if (node.removed || node.state === 'leavingpool' || node.state === 'rebooting') return;
      const ok = out.exitCode === 0 && !out.failureInfo;
      if (!ok && (maxRetries === -1 || attempt < maxRetries)) {
        info.retryCount = attempt + 1;
        info.lastRetryTime = new Date().toISOString();
        continue;
      }
      Object.assign(info, {
        state: 'completed',
        endTime: new Date().toISOString(),
        ...(out.exitCode !== undefined ? { exitCode: out.exitCode } : {}),
        ...(out.failureInfo ? { failureInfo: out.failureInfo } : {}),
        result: ok ? 'success' : 'failure',
      });
      if (!waitForSuccess) return;
      if (ok) this.engine.nodeReady(pool, node);
      else this.engine.setNodeState(node, 'starttaskfailed');
      return;
    }
  }

  // ---- job preparation / release -----------------------------------------------------------

  /** Runs the job's prep task on the node once; resolves whether tasks of the job may run there. */
  ensureJobPrep(job: JobRecord, node: NodeRecord): Promise<boolean> {
    const prep = job.spec.jobPreparationTask as Json | undefined;
    if (!prep) return Promise.resolve(true);
    const key = `${job.id.toLowerCase()}/${node.poolId.toLowerCase()}/${node.id}`;
    let run = this.prepRuns.get(key);
    const done = node.jobTasks.get(job.id.toLowerCase())?.prep;
    if (!run && done?.state === 'completed') {
      // Known from before an emulator restart.
      run = Promise.resolve(done.result === 'success' || prep.waitForSuccess === false);
      this.prepRuns.set(key, run);
    }
    if (!run) {
      run = this.runPrep(job, node, prep);
      this.prepRuns.set(key, run);
    }
    return run;
  }

  /** Creates a job preparation/release task's directories on the node and its execution record there. */
  private beginJobTask(job: JobRecord, node: NodeRecord, kind: 'prep' | 'release', spec: Json) {
    const rel = jobTaskRelative(job.id, spec, kind === 'prep' ? 'jobpreparation' : 'jobrelease');
    const dir = path.join(node.rootDir, rel);
    const wd = path.join(dir, 'wd');
    mkdirSync(wd, { recursive: true });
    const entry = node.jobTasks.get(job.id.toLowerCase()) ?? {};
    node.jobTasks.set(job.id.toLowerCase(), entry);
    const info: NonNullable<typeof entry.prep> = { state: 'running', startTime: new Date(), retryCount: 0, requeueCount: 0, taskRootDirectory: rel };
    entry[kind] = info;
    return { dir, wd, info };
  }

  private async runPrep(job: JobRecord, node: NodeRecord, prep: Json): Promise<boolean> {
    const { dir, wd, info } = this.beginJobTask(job, node, 'prep', prep);
    job.prepNodes.push(`${node.poolId}/${node.id}`);
    const constraints = (prep.constraints ?? {}) as Json;
    const maxRetries = typeof constraints.maxTaskRetryCount === 'number' ? constraints.maxTaskRetryCount : 0;
    for (let attempt = 0; ; attempt++) {
      const out = await runOrFail(undefined, async () => {
        await downloadResourceFiles(prep.resourceFiles as Json[] | undefined, wd, this.engine.agentOf(node.poolId));
        const env = {
          ...this.jobEnv(job, node),
          ...userEnv(prep.environmentSettings),
          ...taskUserEnv(prep.userIdentity),
          AZ_BATCH_TASK_ID: String(prep.id ?? 'jobpreparation'),
          AZ_BATCH_TASK_DIR: dir,
          AZ_BATCH_TASK_WORKING_DIR: wd,
        };
        return this.runToEnd({
          commandLine: String(prep.commandLine ?? ''),
          cwd: wd,
          env,
          outDir: dir,
          maxWallClockMs: timerMs(constraints.maxWallClockTime),
          container: prep.containerSettings,
          node,
        });
      });
      const ok = out.exitCode === 0 && !out.failureInfo;
      if (!ok && !node.removed && (maxRetries === -1 || attempt < maxRetries)) {
        info.retryCount = attempt + 1;
        info.lastRetryTime = new Date();
        continue;
      }
      Object.assign(info, {
        state: 'completed',
        endTime: new Date(),
        exitCode: out.exitCode,
        failureInfo: out.failureInfo,
        result: ok ? 'success' : 'failure',
      });
      return ok || prep.waitForSuccess === false;
    }
  }

  /** Runs the job's release task on every node that ran its prep task (job terminate/delete). */
  async runReleases(job: JobRecord): Promise<void> {
    const release = job.spec.jobReleaseTask as Json | undefined;
    if (!release || !job.spec.jobPreparationTask) return;
    const runs: Promise<void>[] = [];
    for (const ref of job.prepNodes) {
      const [poolId, nodeId] = ref.split('/');
      const node = this.engine.findNode(poolId, nodeId);
      if (!node || node.removed || node.state === 'leavingpool') continue;
      runs.push(this.runRelease(job, node, release));
    }
    await Promise.all(runs);
  }

  private async runRelease(job: JobRecord, node: NodeRecord, release: Json): Promise<void> {
    const { dir, wd, info } = this.beginJobTask(job, node, 'release', release);
    const out = await runOrFail(this.engine.cfg.faults.releaseTaskFailureExitCode(node.poolId, node.ordinal), async () => {
      await downloadResourceFiles(release.resourceFiles as Json[] | undefined, wd, this.engine.agentOf(node.poolId));
      const prepDir = path.join(node.rootDir, jobTaskRelative(job.id, job.spec.jobPreparationTask as Json, 'jobpreparation'));
      const env = {
        ...this.jobEnv(job, node),
        ...userEnv(release.environmentSettings),
        ...taskUserEnv(release.userIdentity),
        AZ_BATCH_TASK_ID: String(release.id ?? 'jobrelease'),
        AZ_BATCH_TASK_DIR: dir,
        AZ_BATCH_TASK_WORKING_DIR: wd,
        AZ_BATCH_JOB_PREP_DIR: prepDir,
        AZ_BATCH_JOB_PREP_WORKING_DIR: path.join(prepDir, 'wd'),
      };
      // Batch caps release tasks at 15 minutes.
      const max = Math.min(timerMs(release.maxWallClockTime) ?? 15 * 60_000, 15 * 60_000);
      return this.runToEnd({
        commandLine: String(release.commandLine ?? ''),
        cwd: wd,
        env,
        outDir: dir,
        maxWallClockMs: max,
        container: release.containerSettings,
        node,
      });
    });
    const ok = out.exitCode === 0 && !out.failureInfo;
    Object.assign(info, { state: 'completed', endTime: new Date(), exitCode: out.exitCode, failureInfo: out.failureInfo, result: ok ? 'success' : 'failure' });
  }

  // ---- tasks -------------------------------------------------------------------------------

  private jobEnv(job: JobRecord, node: NodeRecord): Record<string, string> {
    return { ...this.engine.nodeEnv(node), ...userEnv(job.spec.commonEnvironmentSettings), ...this.jobVars(job, node) };
  }

  /** The job-level variables Batch itself defines (they win over user settings). */
  private jobVars(job: JobRecord, node: NodeRecord): Record<string, string> {
    const vars: Record<string, string> = { AZ_BATCH_JOB_ID: job.id };
    const prep = job.spec.jobPreparationTask as Json | undefined;
    if (prep) {
      const prepDir = path.join(node.rootDir, jobTaskRelative(job.id, prep, 'jobpreparation'));
      vars.AZ_BATCH_JOB_PREP_DIR = prepDir;
      vars.AZ_BATCH_JOB_PREP_WORKING_DIR = path.join(prepDir, 'wd');
    }
    return vars;
  }

  /** A task's own environmentSettings override the job's commonEnvironmentSettings, as in Batch. */
  private taskEnv(job: JobRecord, task: TaskRecord, node: NodeRecord, taskDir: string): Record<string, string> {
    return {
      ...this.engine.nodeEnv(node),
      ...userEnv(job.spec.commonEnvironmentSettings),
      ...userEnv(task.spec.environmentSettings),
      ...this.jobVars(job, node),
      ...taskUserEnv(task.spec.userIdentity),
      AZ_BATCH_TASK_ID: task.id,
      AZ_BATCH_TASK_DIR: taskDir,
      AZ_BATCH_TASK_WORKING_DIR: path.join(taskDir, 'wd'),
    };
  }

  /** Starts a task whose slots the scheduler already reserved on `nodes` (one node unless multi-instance). */
  start(job: JobRecord, task: TaskRecord, nodes: NodeRecord[]): void {
    task.attempt += 1;
    const attempt = task.attempt;
    const primary = nodes[0];
    const rel = taskRootRelative(job.id, task.id);
    task.nodeInfo = { poolId: primary.poolId, nodeId: primary.id, taskRootDirectory: rel };
    const exec: ExecInfo = task.executionInfo ?? { retryCount: 0, requeueCount: 0 };
    task.executionInfo = exec;
    exec.startTime = new Date();
    delete exec.endTime;
    delete exec.exitCode;
    delete exec.failureInfo;
    delete exec.result;
    setTaskState(task, job.spec.jobPreparationTask ? 'preparing' : 'running');
    void this.execute(job, task, nodes, attempt).catch((e: Error) => {
      if (task.attempt === attempt)
        this.complete(job, task, nodes, attempt, { failureInfo: { category: 'servererror', code: 'EmulatorError', message: e.message } });
    });
  }

  private async execute(job: JobRecord, task: TaskRecord, nodes: NodeRecord[], attempt: number): Promise<void> {
    const prepOk = await Promise.all(nodes.map((n) => this.ensureJobPrep(job, n)));
    if (task.attempt !== attempt) return;
    if (prepOk.some((ok) => !ok)) {
      // Tasks of this job cannot run on a node whose prep task failed: give the task back to the scheduler.
      this.requeue(job, task, nodes);
      return;
    }
    setTaskState(task, 'running');
    const rel = taskRootRelative(job.id, task.id);
    const mi = task.spec.multiInstanceSettings as Json | undefined;
    let outcome = mi ? await this.runMultiInstance(job, task, nodes, rel, mi, attempt) : await this.runSingle(job, task, nodes[0], rel);
    if (task.attempt !== attempt || outcome === undefined) return;
    const outputFiles = task.spec.outputFiles as Json[] | undefined;
    // After the last attempt, if the process ran: uploaded from the primary's node only (multi-instance too).
    if (outputFiles?.length && !isPreProcessingFailure(outcome.failureInfo?.code) && !this.willRetry(job, task, nodes, outcome)) {
      const primary = nodes[0];
      const dir = path.join(primary.rootDir, rel);
      const failure = await uploadOutputFiles({
        outputFiles,
        taskDir: dir,
        nodeRoot: primary.rootDir,
        mounted: mountedTargets(primary.rootDir),
        env: this.taskEnv(job, task, primary, dir),
        exitCode: outcome.exitCode,
        agent: this.engine.agentOf(primary.poolId),
        lost: (blob) => this.engine.cfg.faults.uploadLost(blob),
      });
      if (task.attempt !== attempt) return;
      if (failure && !outcome.failureInfo) outcome = { ...outcome, failureInfo: failure };
    }
    this.complete(job, task, nodes, attempt, outcome);
  }

  private async prepareTaskDir(node: NodeRecord, rel: string, fresh: boolean): Promise<string> {
    const dir = path.join(node.rootDir, rel);
    if (fresh) rmSync(dir, { recursive: true, force: true });
    mkdirSync(path.join(dir, 'wd'), { recursive: true });
    return dir;
  }

  private async runSingle(job: JobRecord, task: TaskRecord, node: NodeRecord, rel: string): Promise<RunOutcome> {
    const dir = await this.prepareTaskDir(node, rel, true);
    try {
      await downloadResourceFiles(task.spec.resourceFiles as Json[] | undefined, path.join(dir, 'wd'), this.engine.agentOf(node.poolId));
    } catch (e) {
      return downloadFailure(e);
    }
    return this.runToEnd({
      commandLine: String(task.spec.commandLine ?? ''),
      cwd: path.join(dir, 'wd'),
      env: this.taskEnv(job, task, node, dir),
      outDir: dir,
      maxWallClockMs: timerMs(task.constraints.maxWallClockTime),
      task,
      container: task.spec.containerSettings,
      node,
    });
  }

  /**
   * Multi-instance: every node downloads commonResourceFiles into the task root and runs the
   * coordination command; once all have exited successfully the application command runs on the
   * primary only. Any coordination failure fails the whole task.
   */
  private async runMultiInstance(
    job: JobRecord,
    task: TaskRecord,
    nodes: NodeRecord[],
    rel: string,
    mi: Json,
    attempt: number,
  ): Promise<RunOutcome | undefined> {
    const ips = nodes.map((n) => n.ipAddress);
    const started = new Date();
    task.subtasks = nodes.map((n, i) => ({
      id: i,
      poolId: n.poolId,
      nodeId: n.id,
      taskRootDirectory: rel,
      state: 'running',
      stateTransitionTime: started,
      previousState: 'preparing',
      previousStateTransitionTime: started,
      startTime: started,
    }));
    const deadline = timerMs(task.constraints.maxWallClockTime);
    const t0 = Date.now();
    const remaining = () => (deadline === undefined ? undefined : Math.max(0, deadline - (Date.now() - t0)));
    const envFor = (n: NodeRecord, i: number, dir: string) => ({
      ...this.taskEnv(job, task, n, dir),
      AZ_BATCH_HOST_LIST: ips.join(','),
      AZ_BATCH_NODE_LIST: ips.join(';'),
      AZ_BATCH_MASTER_NODE: `${ips[0]}:${MASTER_PORT}`,
      AZ_BATCH_IS_CURRENT_NODE_MASTER: i === 0 ? 'true' : 'false',
      AZ_BATCH_TASK_SHARED_DIR: dir,
      CCP_NODES: `${nodes.length} ${ips.map((ip) => `${ip} 1`).join(' ')}`,
    });
    const coordination = typeof mi.coordinationCommandLine === 'string' ? mi.coordinationCommandLine : '';
    const coordinationResults = await Promise.all(
      nodes.map(async (n, i): Promise<RunOutcome> => {
        const dir = await this.prepareTaskDir(n, rel, true);
        // stdout/stderr exist from the start even if the application command never runs.
        writeFileSync(path.join(dir, 'stdout.txt'), '');
        writeFileSync(path.join(dir, 'stderr.txt'), '');
        try {
          await downloadResourceFiles(mi.commonResourceFiles as Json[] | undefined, dir, this.engine.agentOf(n.poolId));
          if (i === 0) await downloadResourceFiles(task.spec.resourceFiles as Json[] | undefined, path.join(dir, 'wd'), this.engine.agentOf(n.poolId));
        } catch (e) {
          return downloadFailure(e);
        }
        if (!coordination) return { exitCode: 0 };
        // The primary keeps stdout.txt for the application command; its coordination output goes beside it.
        return this.runToEnd({
          commandLine: coordination,
          cwd: path.join(dir, 'wd'),
          env: envFor(n, i, dir),
          outDir: dir,
          outPrefix: i === 0 ? 'coordination-' : '',
          maxWallClockMs: remaining(),
          task,
          node: n,
        });
      }),
    );
    if (task.attempt !== attempt) return undefined;
    coordinationResults.forEach((r, i) => {
      const s = task.subtasks[i];
      if (r.exitCode !== undefined) s.exitCode = r.exitCode;
      if (r.failureInfo) {
        s.failureInfo = r.failureInfo;
        this.endSubtask(s, 'failure');
      }
    });
    const failedAt = coordinationResults.findIndex((r) => r.failureInfo);
    if (failedAt >= 0) {
      for (const s of task.subtasks) if (s.state !== 'completed') this.endSubtask(s, 'failure');
      return {
        exitCode: coordinationResults[failedAt].exitCode,
        // What failed there (e.g. a resource file's download) is in the message: the primary's subtask is not listed.
        failureInfo: failure(
          'SubtaskFailed',
          `The coordination command of subtask ${failedAt} on node ${nodes[failedAt].id} failed.${subtaskCause(coordinationResults[failedAt])}`,
          [
            { name: 'SubtaskId', value: String(failedAt) },
            ...(coordinationResults[failedAt].failureInfo?.code
              ? [{ name: 'SubtaskFailureCode', value: String(coordinationResults[failedAt].failureInfo?.code) }]
              : []),
          ],
        ),
      };
    }
    const dir = path.join(nodes[0].rootDir, rel);
    // The application command runs in the task's container if it has one; the coordination command on the host.
    const out = await this.runToEnd({
      commandLine: String(task.spec.commandLine ?? ''),
      cwd: path.join(dir, 'wd'),
      env: envFor(nodes[0], 0, dir),
      outDir: dir,
      maxWallClockMs: remaining(),
      task,
      container: task.spec.containerSettings,
      node: nodes[0],
    });
    if (task.attempt !== attempt) return undefined;
    const primary = task.subtasks[0];
    primary.exitCode = out.exitCode;
    if (out.failureInfo) primary.failureInfo = out.failureInfo;
    for (const s of task.subtasks) if (s.state !== 'completed') this.endSubtask(s, s.id === 0 && out.failureInfo ? 'failure' : 'success');
    return out;
  }

  private endSubtask(s: SubtaskRecord, result: 'success' | 'failure'): void {
    s.previousState = s.state;
    s.previousStateTransitionTime = s.stateTransitionTime;
    s.state = 'completed';
    s.stateTransitionTime = new Date();
    s.endTime = s.stateTransitionTime;
    s.result = result;
  }

  /** Whether this attempt's outcome is retried (see complete). */
  private willRetry(job: JobRecord, task: TaskRecord, nodes: NodeRecord[], out: RunOutcome): boolean {
    const failed = !!out.failureInfo || out.exitCode !== 0;
    const code = out.failureInfo?.code;
    const max = task.constraints.maxTaskRetryCount;
    const retries = (task.executionInfo as ExecInfo).retryCount;
    if (!failed || isPreProcessingFailure(code) || isFileUploadFailure(code) || (max !== -1 && retries >= max)) return false;
    return ['active', 'disabling', 'disabled'].includes(job.state) && nodes.every((n) => !n.removed);
  }

  /**
   * Ends the current attempt: a nonzero exit is retried within maxTaskRetryCount (pre-processing and file upload
   * errors are not retried, as on Batch), else the task completes. A retry of a task whose job is disabled waits,
   * active, for the job to be enabled.
   */
  private complete(job: JobRecord, task: TaskRecord, nodes: NodeRecord[], attempt: number, out: RunOutcome): void {
    if (task.attempt !== attempt) return;
    this.killTaskProcesses(task);
    const exec = task.executionInfo as ExecInfo;
    const failed = !!out.failureInfo || out.exitCode !== 0;
    if (this.willRetry(job, task, nodes, out)) {
      exec.retryCount += 1;
      exec.lastRetryTime = new Date();
      touch(task);
      if (job.state === 'active') {
        this.start(job, task, nodes);
      } else {
        task.attempt += 1;
        this.release(task, nodes, false);
        delete task.nodeInfo;
        task.subtasks = [];
        setTaskState(task, 'active');
      }
      return;
    }
    exec.endTime = new Date();
    if (out.exitCode !== undefined) exec.exitCode = out.exitCode;
    if (out.failureInfo) exec.failureInfo = out.failureInfo;
    exec.result = failed ? 'failure' : 'success';
    task.attempt += 1;
    this.release(task, nodes, !failed);
    setTaskState(task, 'completed');
    this.onTaskCompleted(job, task);
  }

  /** Frees the task's slots on its nodes. */
  release(task: TaskRecord, nodes: NodeRecord[], succeeded: boolean): void {
    const key = taskKey(task);
    for (const n of nodes) {
      if (!n.running.delete(key)) continue;
      n.totalTasksRun += 1;
      if (succeeded) n.totalTasksSucceeded += 1;
      this.engine.settleNode(n);
    }
    this.engine.onCapacityChange();
  }

  killTaskProcesses(task: TaskRecord): void {
    this.engine.countKill(task);
    for (const g of task.pgids) {
      killGroup(g);
      this.engine.pgids.delete(g);
    }
    task.pgids.clear();
  }

  nodesOf(task: TaskRecord): NodeRecord[] {
    const key = taskKey(task);
    const out: NodeRecord[] = [];
    for (const p of this.engine.pools.values()) for (const n of p.nodes.values()) if (n.running.has(key)) out.push(n);
    return out;
  }

  /** Puts a started task back to active (node left, rebooted, or prep failed); counts a requeue. */
  requeue(job: JobRecord, task: TaskRecord, nodes: NodeRecord[] = this.nodesOf(task)): void {
    task.attempt += 1;
    this.killTaskProcesses(task);
    const key = taskKey(task);
    for (const n of nodes) {
      n.running.delete(key);
      this.engine.settleNode(n);
    }
    const exec = task.executionInfo as ExecInfo;
    exec.requeueCount += 1;
    exec.lastRequeueTime = new Date();
    delete task.nodeInfo;
    task.subtasks = [];
    setTaskState(task, 'active');
    this.engine.onCapacityChange();
  }

  /** Ends a started task now (terminate, job termination, node removal with terminate). */
  /**
   * Ends a running task as its job's termination does on Batch: the processes are killed, and as the task's process
   * has exited its output files are uploaded under their uploadCondition (taskCompletion: whatever the exit; a killed
   * task has no exit code, so taskSuccess does not hold) before the task is completed; it stays running meanwhile.
   * A task that never ran, or has no output files, ends at once (terminate).
   */
  async terminateWithUploads(job: JobRecord, task: TaskRecord, reason: string): Promise<void> {
    const outputFiles = task.spec.outputFiles as Json[] | undefined;
    const primary = this.nodesOf(task)[0];
    if (task.state !== 'running' || !outputFiles?.length || !primary) return this.terminate(job, task, reason);
    // A new attempt number: the running attempt's execute() stops where it is and does not complete the task.
    task.attempt += 1;
    const attempt = task.attempt;
    this.killTaskProcesses(task);
    const dir = path.join(primary.rootDir, taskRootRelative(job.id, task.id));
    await uploadOutputFiles({
      outputFiles,
      taskDir: dir,
      nodeRoot: primary.rootDir,
      mounted: mountedTargets(primary.rootDir),
      env: this.taskEnv(job, task, primary, dir),
      exitCode: undefined,
      agent: this.engine.agentOf(primary.poolId),
      lost: (blob) => this.engine.cfg.faults.uploadLost(blob),
    }).catch(() => undefined);
    if (task.attempt === attempt) this.terminate(job, task, reason);
  }

  terminate(job: JobRecord, task: TaskRecord, reason: string): void {
    if (task.state === 'completed') return;
    const nodes = this.nodesOf(task);
    task.attempt += 1;
    this.killTaskProcesses(task);
    const exec: ExecInfo = task.executionInfo ?? { retryCount: 0, requeueCount: 0 };
    task.executionInfo = exec;
    if (task.state !== 'active') {
      exec.endTime = new Date();
      exec.failureInfo = failure('TaskEnded', reason);
      exec.result = 'failure';
      for (const s of task.subtasks) if (s.state !== 'completed') this.endSubtask(s, 'failure');
    }
    this.release(task, nodes, false);
    setTaskState(task, 'completed');
    this.onTaskCompleted(job, task);
  }

  /** Removes a task's directories from every node it touched. */
  removeTaskFiles(task: TaskRecord): void {
    const rel = taskRootRelative(task.jobId, task.id);
    const places = new Set<string>();
    if (task.nodeInfo) places.add(`${task.nodeInfo.poolId}/${task.nodeInfo.nodeId}`);
    for (const s of task.subtasks) places.add(`${s.poolId}/${s.nodeId}`);
    for (const p of places) {
      const [poolId, nodeId] = p.split('/');
      const n = this.engine.findNode(poolId, nodeId);
      if (n) rmSync(path.join(n.rootDir, rel), { recursive: true, force: true });
    }
  }
}
