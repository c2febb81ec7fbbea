import { rmSync } from 'node:fs';
import path from 'node:path';
import { timerMs } from '../model/duration';
import { touch } from '../model/etag';
import { exitOptionsFor, isEndedByRequest } from '../model/exitOptions';
import type { JobRecord, Json, NodeRecord, TaskRecord } from '../model/types';
import { Engine } from './engine';
import { safeSegment } from './sandbox';
import { TaskExecutor } from './taskExecutor';
import { backgroundFailure } from './background';

/** Job-level transitions: termination (user, wall clock, onAllTasksComplete), deletion, node loss. */
export class JobLifecycle {
  constructor(
    private readonly engine: Engine,
    private readonly executor: TaskExecutor,
  ) {
    executor.onTaskCompleted = (job, task) => this.taskCompleted(job, task);
    engine.onNodeLeaving = (node, requeue, reason) => this.nodeLeaving(node, requeue, reason);
  }

  setState(job: JobRecord, state: JobRecord['state']): void {
    if (job.state === state) return;
    job.previousState = job.state;
    job.previousStateTransitionTime = job.stateTransitionTime;
    job.state = state;
    job.stateTransitionTime = new Date();
    touch(job);
  }

  armWallClock(job: JobRecord): void {
    const ms = timerMs(job.constraints?.maxWallClockTime);
    if (ms === undefined) return;
    const elapsed = Date.now() - job.creationTime.getTime();
    this.engine.cancel(job.wallClockTimer);
    job.wallClockTimer = this.engine.later(Math.max(0, ms - elapsed), () => {
      if (job.state === 'active' || job.state === 'disabling' || job.state === 'disabled')
        this.terminate(job, 'MaxWallClockTimeExpiry').catch(backgroundFailure(`terminating job ${job.id}`));
    });
  }

  /**
   * A task completed: with onTaskFailure performExitOptionsJobAction its exit options may terminate (reason
   * TaskFailed) or disable the job; a job disabling with disableTasks wait becomes disabled when its last running
   * task is done; then onAllTasksComplete.
   */
  taskCompleted(job: JobRecord, task: TaskRecord): void {
    if (job.state === 'disabling' && !this.hasRunningTasks(job)) this.setState(job, 'disabled');
    const code = (task.executionInfo?.failureInfo as Json | undefined)?.code;
    if (job.onTaskFailure === 'performexitoptionsjobaction' && !isEndedByRequest(code) && (job.state === 'active' || job.state === 'disabled')) {
      const { jobAction } = exitOptionsFor(task);
      if (jobAction === 'terminate') {
        this.terminate(job, 'TaskFailed').catch(backgroundFailure(`terminating job ${job.id}`));
        return;
      }
      if (jobAction === 'disable' && job.state === 'active') this.disable(job, 'requeue');
    }
    this.checkAllTasksComplete(job);
  }

  private hasRunningTasks(job: JobRecord): boolean {
    for (const t of job.tasks.values()) if (t.state === 'running' || t.state === 'preparing') return true;
    return false;
  }

  /**
   * Disable: no new task of the job starts. disableTasks requeue ends running tasks and puts them back to active
   * (requeueCount + 1), terminate ends them for good (TaskEnded), wait lets them finish while the job is disabling.
   */
  disable(job: JobRecord, disableTasks: 'requeue' | 'terminate' | 'wait'): void {
    this.setState(job, 'disabling');
    for (const t of job.tasks.values()) {
      if (t.state !== 'running' && t.state !== 'preparing') continue;
      if (disableTasks === 'requeue') this.executor.requeue(job, t);
      else if (disableTasks === 'terminate') this.executor.terminate(job, t, 'Task was ended because its job was disabled');
    }
    if (!this.hasRunningTasks(job)) this.setState(job, 'disabled');
  }

  enable(job: JobRecord): void {
    if (job.state === 'disabled' || job.state === 'disabling') this.setState(job, 'active');
    this.checkAllTasksComplete(job);
  }

  /** onAllTasksComplete=terminatejob: a job whose tasks are all completed (or that has none) ends. */
  checkAllTasksComplete(job: JobRecord): void {
    if (job.onAllTasksComplete !== 'terminatejob' || job.state !== 'active') return;
    for (const t of job.tasks.values()) if (t.state !== 'completed') return;
    this.terminate(job, 'AllTasksComplete').catch(backgroundFailure(`terminating job ${job.id}`));
  }

  /** Running tasks end, release tasks run where prep ran, then the job is completed. Active tasks stay active. */
  async terminate(job: JobRecord, reason: string): Promise<void> {
    if (job.state === 'terminating' || job.state === 'completed' || job.state === 'deleting') return;
    this.setState(job, 'terminating');
    job.executionInfo.terminateReason = reason;
    this.engine.cancel(job.wallClockTimer);
    // Running tasks upload their output files as they end (Batch does on a job's termination); the job completes after.
    const ending: Promise<void>[] = [];
    for (const t of job.tasks.values()) {
      if (t.state === 'running' || t.state === 'preparing')
        ending.push(this.executor.terminateWithUploads(job, t, 'Task was ended because its job was terminated'));
    }
    await Promise.all(ending);
    await this.executor.runReleases(job);
    // A delete may have overtaken the termination while release tasks ran.
    if ((job.state as JobRecord['state']) !== 'terminating') return;
    job.executionInfo.endTime = new Date();
    this.setState(job, 'completed');
  }

  /**
   * Deletion, as Batch does it: the job is `deleting` (its id refused with JobBeingDeleted) while running tasks
   * end, release tasks run and files go, and for at least timing.jobDeleteMs; then it is gone.
   */
  async delete(job: JobRecord): Promise<void> {
    const started = Date.now();
    const wasEnded = job.state === 'completed' || job.state === 'terminating';
    this.setState(job, 'deleting');
    this.engine.cancel(job.wallClockTimer);
    for (const t of job.tasks.values()) {
      if (t.state === 'running' || t.state === 'preparing') this.executor.terminate(job, t, 'Task was ended because its job was deleted');
    }
    if (!wasEnded) await this.executor.runReleases(job);
    for (const t of job.tasks.values()) this.executor.removeTaskFiles(t);
    for (const p of this.engine.pools.values()) {
      for (const n of p.nodes.values()) {
        rmSync(path.join(n.rootDir, 'workitems', safeSegment(job.id)), { recursive: true, force: true });
        n.jobTasks.delete(job.id.toLowerCase());
      }
    }
    const rest = this.engine.cfg.timing.jobDeleteMs - (Date.now() - started);
    if (rest > 0) await new Promise<void>((resolve) => this.engine.later(rest, resolve));
    this.engine.jobs.delete(job.id.toLowerCase());
  }

  /** After a restore: tasks that were running start over, half-done job transitions finish. */
  resumeAfterRestore(): void {
    for (const job of [...this.engine.jobs.values()]) {
      for (const t of job.tasks.values()) {
        if (t.state === 'running' || t.state === 'preparing') this.executor.requeue(job, t, []);
      }
      if (job.state === 'terminating') {
        job.executionInfo.endTime = new Date();
        this.setState(job, 'completed');
      } else if (job.state === 'disabling') {
        this.setState(job, 'disabled');
      } else if (job.state === 'deleting') {
        this.delete(job).catch(backgroundFailure(`deleting job ${job.id}`));
      } else {
        this.armWallClock(job);
      }
    }
  }

  /** Tasks on a node that leaves (removal, pool deletion, reboot, disabled scheduling) are requeued or ended. */
  private nodeLeaving(node: NodeRecord, requeue: boolean, reason = 'Task was ended because its compute node was removed'): void {
    for (const r of [...node.running.values()]) {
      const job = this.engine.jobs.get(r.jobId.toLowerCase());
      const task = job?.tasks.get(r.taskId.toLowerCase());
      if (!job || !task || task.state === 'completed') continue;
      if (requeue) this.executor.requeue(job, task);
      else this.executor.terminate(job, task, reason);
    }
  }
}
