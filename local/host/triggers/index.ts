/** Starts the listeners for the trigger types the host itself dispatches (queue, timer). */
import type { Logger } from 'pino';
import type { InvocationRequest, InvocationResult, RegisteredFunction } from '../extension';
import type { HostJson } from '../hostJson';
import type { IngressGauge } from '../ingress';
import { queueOptions } from './queueOptions';
import { QueueTriggerListener } from './queueTrigger';
import type { ScheduleMonitor } from './scheduleMonitor';
import { TimerTriggerListener } from './timerTrigger';

export { createQueueOutputWriter } from './queueOutput';

export interface TriggerListeners {
  stop(): Promise<void>;
}

export interface TriggerListenerOptions {
  functions: RegisteredFunction[];
  /** Persisted timer schedule status (the host's ScheduleMonitor). */
  scheduleMonitor?: ScheduleMonitor;
  hostJson: HostJson;
  log: Logger;
  invoke(functionName: string, request: InvocationRequest): Promise<InvocationResult>;
  /** Queue messages of full batches in progress are counted here (timers are background work and are not). */
  ingress?: IngressGauge;
  /** Queue messages' hold while their function runs (FunctionsHostOptions.queueHoldSeconds). */
  queueHoldSeconds?: number;
}

export async function startTriggerListeners(opts: TriggerListenerOptions): Promise<TriggerListeners> {
  const listeners: { prepare?(): Promise<void>; start(): void; stop(): Promise<void> }[] = [];
  const deps = { log: opts.log, invoke: opts.invoke };
  // Build every listener before starting any, so a bad binding fails start-up without side effects.
  for (const fn of opts.functions) {
    if (fn.trigger.type === 'queueTrigger')
      listeners.push(
        new QueueTriggerListener({ ...deps, fn, options: queueOptions(opts.hostJson), ingress: opts.ingress, holdSeconds: opts.queueHoldSeconds }),
      );
    else if (fn.trigger.type === 'timerTrigger') listeners.push(new TimerTriggerListener({ ...deps, fn, monitor: opts.scheduleMonitor }));
  }
  await Promise.all(listeners.map((l) => l.prepare?.()));
  listeners.forEach((l) => l.start());
  return {
    stop: async () => {
      await Promise.all(listeners.map((l) => l.stop()));
    },
  };
}
