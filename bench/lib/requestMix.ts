/**
 * A profile of who makes the outgoing HTTP requests (storage, the Durable RPC endpoint, webhooks, Batch) of an
 * in-process stack, phase by phase: every request is counted under the work it was made for, found through an
 * AsyncLocalStorage context entered at the entry points of the host and the Durable engine (their methods are wrapped
 * here, unchanged otherwise). On this machine a storage request costs about as much CPU as a raw Table insert, so the
 * mix says where intake's time goes. Diagnostics for bench/intake.ts only: load it before the stack starts.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import dc from 'node:diagnostics_channel';
import { ActivityDispatcher } from '../../local/durable/activities';
import { ManagementApi } from '../../local/durable/api';
import { OrchestrationDispatcher } from '../../local/durable/orchestrations';
import { IngressGauge } from '../../local/host/ingress';
import { QueueTriggerListener } from '../../local/host/triggers/queueTrigger';
import { TimerTriggerListener } from '../../local/host/triggers/timerTrigger';

const owner = new AsyncLocalStorage<string>();

type Method = (...args: unknown[]) => unknown;

function tagged(proto: object, method: string, name: (self: Record<string, unknown>) => string): void {
  const target = proto as Record<string, Method>;
  const original = target[method];
  if (typeof original !== 'function') throw new Error(`requestMix: ${method} is not a method; update bench/lib/requestMix.ts`);
  target[method] = function (this: Record<string, unknown>, ...args: unknown[]) {
    return owner.run(name(this), () => original.apply(this, args));
  };
}

/** Counts of requests by owner, per phase. */
export class RequestMix {
  private phase = 'setup';
  private readonly counts = new Map<string, Map<string, number>>();

  constructor() {
    // HTTP requests the host serves (a queue message's invocation is tagged again below), then the engine's work.
    tagged(IngressGauge.prototype, 'track', () => 'http door');
    tagged(QueueTriggerListener.prototype, 'process', (self) => `queue ${String(self.queueName)}`);
    tagged(QueueTriggerListener.prototype, 'run', () => 'queue polls');
    tagged(TimerTriggerListener.prototype, 'start', () => 'timers');
    tagged(ManagementApi.prototype, 'handle', () => `durable start/status (${owner.getStore() ?? 'rpc'})`);
    tagged(OrchestrationDispatcher.prototype, 'runEpisode', () => 'engine episodes');
    tagged(OrchestrationDispatcher.prototype, 'round', () => 'engine polls');
    tagged(ActivityDispatcher.prototype, 'run', () => 'engine activities');
    tagged(ActivityDispatcher.prototype, 'round', () => 'engine polls');
    tagged(ActivityDispatcher.prototype, 'flush', () => 'engine activities');
    dc.subscribe('http.client.request.start', () => {
      const who = owner.getStore() ?? 'other';
      let m = this.counts.get(this.phase);
      if (!m) this.counts.set(this.phase, (m = new Map()));
      m.set(who, (m.get(who) ?? 0) + 1);
    });
  }

  /** Runs `work` as the benchmark's own client (its requests are counted as "bench client"). */
  client<T>(work: () => Promise<T>): Promise<T> {
    return owner.run('bench client', work);
  }

  enter(phase: string): void {
    this.phase = phase;
  }

  /** "owner n (share)" for one phase, largest first. */
  describe(phase: string, perJobOf = 0): string {
    const m = this.counts.get(phase);
    if (!m) return '(none)';
    const total = [...m.values()].reduce((a, b) => a + b, 0);
    const parts = [...m].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}${perJobOf ? ` (${(v / perJobOf).toFixed(1)}/job)` : ''}`);
    return `${total} requests: ${parts.join(', ')}`;
  }
}
