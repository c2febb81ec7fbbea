import { exitOptionsFor } from '../model/exitOptions';
import type { JobRecord, Json, NodeRecord, PoolRecord, TaskRecord } from '../model/types';
import { affinityIdOf } from '../model/views';
import { Engine, taskKey } from './engine';
import { TaskExecutor } from './taskExecutor';

/**
 * Assigns active tasks to nodes with free slots, in job priority then submission order.
 * Multi-instance tasks need `numberOfInstances` free nodes at once, and only schedule on pools
 * with inter-node communication and one slot per node; otherwise they stay active, as on Batch.
 */
export class Scheduler {
  private pending = false;
  private readonly poll: NodeJS.Timeout;

  constructor(
    private readonly engine: Engine,
    private readonly executor: TaskExecutor,
  ) {
    engine.onCapacityChange = () => this.kick();
    // A safety net for anything that changes without an event (e.g. a fault toggled at runtime).
    this.poll = setInterval(() => this.kick(), engine.cfg.timing.startTaskPollMs);
    this.poll.unref();
  }

  stop(): void {
    clearInterval(this.poll);
  }

  kick(): void {
    if (this.pending || this.engine.isStopped) return;
    this.pending = true;
    setImmediate(() => {
      this.pending = false;
      if (!this.engine.isStopped) this.pass();
    });
  }

  private pass(): void {
    const jobs = [...this.engine.jobs.values()].filter((j) => j.state === 'active').sort((a, b) => b.priority - a.priority);
    for (const job of jobs) {
      const pool = this.engine.pools.get(job.poolId.toLowerCase());
      if (!pool || pool.state !== 'active') continue;
      const active = [...job.tasks.values()].filter((t) => t.state === 'active').sort((a, b) => a.seq - b.seq);
      if (!active.length) continue;
      let runningCount = [...job.tasks.values()].filter((t) => t.state === 'running' || t.state === 'preparing').length;
      for (const task of active) {
        if (job.maxParallelTasks !== -1 && runningCount >= job.maxParallelTasks) break;
        if (!dependenciesMet(job, task)) continue;
        const nodes = this.pick(job, task, pool);
        if (!nodes) continue;
        const key = taskKey(task);
        nodes.forEach((n, i) => {
          n.running.set(key, { jobId: job.id, taskId: task.id, subtaskId: task.spec.multiInstanceSettings ? i : undefined, slots: task.requiredSlots });
          this.engine.setNodeState(n, 'running');
        });
        runningCount++;
        this.executor.start(job, task, nodes);
      }
    }
  }

  private schedulable(job: JobRecord, pool: PoolRecord): NodeRecord[] {
    const slotsPerNode = Number(pool.spec.taskSlotsPerNode ?? 1);
    return this.engine.liveNodes(pool).filter((n) => {
      if (n.state !== 'idle' && n.state !== 'running') return false;
      if (n.schedulingState !== 'enabled') return false;
      const prep = n.jobTasks.get(job.id.toLowerCase())?.prep;
      const prepSpec = job.spec.jobPreparationTask as Json | undefined;
      if (prep?.state === 'completed' && prep.result === 'failure' && prepSpec?.waitForSuccess !== false) return false;
      return freeSlots(n, slotsPerNode) > 0;
    });
  }

  private pick(job: JobRecord, task: TaskRecord, pool: PoolRecord): NodeRecord[] | undefined {
    const slotsPerNode = Number(pool.spec.taskSlotsPerNode ?? 1);
    const candidates = this.schedulable(job, pool).filter((n) => freeSlots(n, slotsPerNode) >= task.requiredSlots);
    const mi = task.spec.multiInstanceSettings as Json | undefined;
    if (mi) {
      if (pool.spec.enableInterNodeCommunication !== true || slotsPerNode !== 1) return undefined;
      const count = typeof mi.numberOfInstances === 'number' ? mi.numberOfInstances : 1;
      const idle = candidates.filter((n) => n.running.size === 0);
      return idle.length >= count ? idle.slice(0, count) : undefined;
    }
    if (!candidates.length) return undefined;
    const fill = (pool.spec.taskSchedulingPolicy as Json | undefined)?.nodeFillType === 'pack' ? 'pack' : 'spread';
    const ordered = [...candidates].sort((a, b) =>
      fill === 'spread' ? freeSlots(b, slotsPerNode) - freeSlots(a, slotsPerNode) : freeSlots(a, slotsPerNode) - freeSlots(b, slotsPerNode),
    );
    const affinity = (task.spec.affinityInfo as Json | undefined)?.affinityId;
    if (typeof affinity === 'string') {
      const preferred = ordered.find((n) => affinityIdOf(n).toLowerCase() === affinity.toLowerCase());
      if (this.engine.cfg.faults.ignoreAffinity) {
        // Affinity is only a hint on Batch: show callers what happens when it is not honoured.
        const other = ordered.find((n) => n !== preferred);
        return [other ?? ordered[0]];
      }
      if (preferred) return [preferred];
    }
    return [ordered[0]];
  }
}

/**
 * dependsOn: a task waits until every task it names (ids and id ranges) has completed with a dependencyAction
 * of satisfy: by default a success; a task's exitConditions can make a failure satisfy or a success block.
 * A missing parent keeps it waiting.
 */
export function dependenciesMet(job: JobRecord, task: TaskRecord): boolean {
  const deps = task.spec.dependsOn as Json | undefined;
  if (!deps) return true;
  const ok = (id: string) => {
    const parent = job.tasks.get(id.toLowerCase());
    return parent?.state === 'completed' && exitOptionsFor(parent).dependencyAction === 'satisfy';
  };
  for (const id of (deps.taskIds as string[] | undefined) ?? []) if (!ok(id)) return false;
  for (const r of (deps.taskIdRanges as { start: number; end: number }[] | undefined) ?? []) {
    for (let i = r.start; i <= r.end; i++) if (!ok(String(i))) return false;
  }
  return true;
}

function freeSlots(n: NodeRecord, slotsPerNode: number): number {
  let used = 0;
  for (const r of n.running.values()) used += r.slots;
  return slotsPerNode - used;
}
