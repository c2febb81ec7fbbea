/**
 * Start-up recovery. Everything an episode sends out after its commit can be derived from the
 * committed state, so on start we re-send it for every non-terminal instance: work items for open
 * activities, timer messages for open timers, start messages for children and for executions whose
 * start was never processed, parent notifications for finished children, and instance rows that lag
 * behind the committed state. Re-sends are harmless: episodes drop answers to tasks that are no longer
 * open and start messages of executions already running (activities are at-least-once).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { parentNotification } from './episode';
import { EventType, events } from './history';
import { startMessage, timerMessage, type OrchestrationDispatcher } from './orchestrations';
import { rowFromState, type DurableStore, type InstanceRow } from './store';
import { isTerminal } from './state';

export interface RecoveryReport {
  instances: number;
  resent: number;
}

export async function recover(store: DurableStore, dispatcher: OrchestrationDispatcher, log: Logger): Promise<RecoveryReport> {
  const report: RecoveryReport = { instances: 0, resent: 0 };
  const rows: InstanceRow[] = [];
  for await (const row of store.allInstances({ runtimeStatus: ['Pending', 'Running', 'Suspended', 'ContinuedAsNew'] })) rows.push(row);
  for (const row of rows) {
    report.instances += 1;
    try {
      report.resent += await recoverOne(store, dispatcher, row);
    } catch (err) {
      log.error({ err, instanceId: row.instanceId }, 'durable recovery of instance failed');
    }
  }
  if (report.instances > 0) log.info(report, 'durable recovery: re-sent outstanding work of running instances');
  return report;
}

/**
 * Re-derive one instance's outstanding work (used after an episode failed past its commit, e.g. a
 * transient storage error while sending its outbox, so the instance does not wait for a restart).
 */
export async function recoverInstance(store: DurableStore, dispatcher: OrchestrationDispatcher, instanceId: string): Promise<number> {
  const row = await store.getInstance(instanceId);
  if (!row || isTerminal(row.runtimeStatus)) return 0;
  return recoverOne(store, dispatcher, row);
}

async function recoverOne(store: DurableStore, dispatcher: OrchestrationDispatcher, row: InstanceRow): Promise<number> {
  const loaded = await store.load(row.instanceId);
  const now = new Date();
  if (!loaded || (loaded.state.executionId !== row.executionId && isTerminal(loaded.state.status))) {
    // Created (by a client or a parent) but its start message was never processed.
    await store.sendControl(startMessage(row.instanceId, row.executionId, row.name, row.input, row.parent));
    return 1;
  }
  const state = loaded.state;
  let resent = 0;
  if (state.status !== row.runtimeStatus || state.executionId !== row.executionId || state.lastUpdatedTime !== row.lastUpdatedTime) {
    await store.putInstance(rowFromState(state));
  }
  if (isTerminal(state.status)) {
    const m = parentNotification(state, now);
    if (m) {
      await store.sendControl(m);
      resent += 1;
    }
    return resent;
  }
  if (state.historyLength === 0) {
    await store.sendControl(startMessage(state.instanceId, state.executionId, state.name, state.input, state.parent));
    return 1;
  }
  const scheduled = new Map<number, (typeof loaded.history)[number]>();
  for (const e of loaded.history) {
    if (e.EventType === EventType.TaskScheduled || e.EventType === EventType.SubOrchestrationInstanceCreated) scheduled.set(e.EventId, e);
  }
  const work: Parameters<DurableStore['sendWorkItems']>[0] = [];
  for (const [key, open] of Object.entries(state.open)) {
    const id = Number(key);
    if (open.kind === 'timer' && open.fireAt) {
      await dispatcher.sendTimer(timerMessage(state.instanceId, state.executionId, id, open.fireAt), Date.parse(open.fireAt) - Date.now());
      resent += 1;
    } else if (open.kind === 'activity') {
      const e = scheduled.get(id);
      work.push({ instanceId: state.instanceId, executionId: state.executionId, taskId: id, name: open.name ?? e?.Name ?? '', input: e?.Input });
      resent += 1;
    } else if (open.kind === 'suborch' && open.childInstanceId) {
      const parent = { instanceId: state.instanceId, executionId: state.executionId, taskId: id };
      const child = await store.load(open.childInstanceId);
      const childIsOurs =
        child?.state.parent?.instanceId === parent.instanceId &&
        child.state.parent.executionId === parent.executionId &&
        child.state.parent.taskId === parent.taskId;
      if (child && childIsOurs && child.state.status === 'Failed' && open.rewound) {
        // The parent was rewound: its failed child is rewound too (the rewind message may not have been sent).
        await store.sendControl({
          id: randomUUID(),
          instanceId: child.state.instanceId,
          event: events.rewind(now, `rewind of parent '${state.instanceId}'`),
          sentAt: now.toISOString(),
        });
      } else if (child && childIsOurs && isTerminal(child.state.status)) {
        const m = parentNotification(child.state, now);
        if (m) await store.sendControl(m);
      } else if (!child || !childIsOurs || child.state.historyLength === 0) {
        await dispatcher.startChild({ instanceId: open.childInstanceId, name: open.name ?? '', input: scheduled.get(id)?.Input, parent });
      }
      resent += 1;
    }
  }
  await store.sendWorkItems(work);
  return resent;
}
