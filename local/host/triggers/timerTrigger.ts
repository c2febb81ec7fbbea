/**
 * Timer trigger: fires on the schedule, never overlapping itself (the next occurrence is armed after an
 * invocation ends, from that moment, as the host's TimerListener does; occurrences that pass while the function
 * runs are skipped). When a due occurrence fires so late that a later one already passed too (the event loop
 * was blocked), the missed ones are folded into one invocation with isPastDue = true. runOnStartup fires once
 * at start; a persisted status (./scheduleMonitor) showing a missed occurrence fires once at start, past due.
 */
import type { Logger } from 'pino';
import type { InvocationRequest, InvocationResult, RegisteredFunction } from '../extension';
import { hostTimestamp } from './queueMessages';
import { resolveAppSettingExpressions } from './bindingSettings';
import type { ScheduleMonitor } from './scheduleMonitor';
import { parseTimerSchedule, type TimerSchedule } from './timerSchedule';

/** setTimeout's ceiling; longer waits are re-armed. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export interface TimerListenerDeps {
  fn: RegisteredFunction;
  log: Logger;
  invoke(functionName: string, request: InvocationRequest): Promise<InvocationResult>;
  now?: () => Date;
  /** Persisted schedule status; used when the schedule recurs at most once a minute (or useMonitor is true). */
  monitor?: ScheduleMonitor;
}

export class TimerTriggerListener {
  readonly schedule: TimerSchedule;
  private timer?: NodeJS.Timeout;
  private running = false;
  private current?: Promise<void>;
  private last?: Date;
  private pastDueAtStart = false;
  private readonly now: () => Date;
  private readonly monitor?: ScheduleMonitor;

  constructor(private readonly deps: TimerListenerDeps) {
    const what = `Function "${deps.fn.name}" timer trigger`;
    const expr = resolveAppSettingExpressions(String(deps.fn.trigger.schedule ?? ''), what);
    this.schedule = parseTimerSchedule(expr, process.env.WEBSITE_TIME_ZONE ?? 'UTC');
    this.now = deps.now ?? (() => new Date());
    this.monitor = useMonitor(deps.fn.trigger.useMonitor, this.schedule, this.now()) ? deps.monitor : undefined;
  }

  /** Loads the persisted status; call before start(). */
  async prepare(): Promise<void> {
    this.pastDueAtStart = false;
    if (!this.monitor) return;
    const status = await this.monitor.get(this.deps.fn.name);
    if (status) {
      this.last = new Date(status.Last);
      // The host was down (or stopped) across the occurrence it had planned next.
      this.pastDueAtStart = Date.parse(status.Next) <= this.now().getTime();
    }
  }

  start(): void {
    this.running = true;
    const startedAt = this.now();
    const pastDue = this.pastDueAtStart;
    if (this.deps.fn.trigger.runOnStartup === true || pastDue) {
      this.current = this.fire(startedAt, pastDue).then(() => this.arm(this.schedule.next(this.now())));
    } else {
      this.arm(this.schedule.next(startedAt));
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    await this.current;
    clearTimeout(this.timer);
  }

  private arm(due: Date): void {
    if (!this.running) return;
    const wait = due.getTime() - this.now().getTime();
    this.timer = setTimeout(
      () => {
        if (!this.running) return;
        if (due.getTime() > this.now().getTime()) {
          this.arm(due); // a long wait re-armed in steps, or a timer that woke early
          return;
        }
        this.current = this.onDue(due);
      },
      Math.min(Math.max(0, wait), MAX_TIMEOUT_MS),
    );
  }

  private async onDue(due: Date): Promise<void> {
    const firedAt = this.now();
    // Past due when an occurrence after `due` has already passed too: we fell behind the schedule.
    const isPastDue = this.schedule.next(due).getTime() <= firedAt.getTime();
    if (isPastDue) {
      this.deps.log.warn({ functionName: this.deps.fn.name, due: due.toISOString(), firedAt: firedAt.toISOString() }, 'Timer is past due');
    }
    await this.fire(firedAt, isPastDue);
    this.arm(this.schedule.next(this.now()));
  }

  private async fire(at: Date, isPastDue: boolean): Promise<void> {
    const { fn } = this.deps;
    const payload = {
      Schedule: { AdjustForDST: true },
      ScheduleStatus: {
        Last: hostTimestamp(this.last ?? at),
        Next: hostTimestamp(this.schedule.next(at)),
        LastUpdated: hostTimestamp(at),
      },
      IsPastDue: isPastDue,
    };
    this.last = at;
    const result = await this.deps.invoke(fn.name, {
      inputData: [{ name: fn.trigger.name, data: { json: JSON.stringify(payload) } }],
      triggerMetadata: { TimerTrigger: { string: at.toISOString() } },
    });
    if (result.error)
      this.deps.log.warn({ functionName: fn.name, invocationId: result.invocationId }, 'Timer invocation failed; waiting for the next occurrence');
    if (this.monitor) {
      const done = this.now();
      const status = { Last: at.toISOString(), Next: this.schedule.next(done).toISOString(), LastUpdated: done.toISOString() };
      await this.monitor.set(fn.name, status).catch((err: unknown) => this.deps.log.warn({ functionName: fn.name, err }, 'Could not save the timer status'));
    }
  }
}

/** The host's rule: monitor by default only when occurrences are at least a minute apart. */
function useMonitor(setting: unknown, schedule: TimerSchedule, now: Date): boolean {
  if (typeof setting === 'boolean') return setting;
  const first = schedule.next(now);
  return schedule.next(first).getTime() - first.getTime() >= 60_000;
}
