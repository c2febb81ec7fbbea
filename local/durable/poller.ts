/**
 * A polling loop that backs off exponentially while idle, can be woken early (when this process just
 * enqueued something or freed a slot) or at a set time (when a delayed message it sent becomes visible),
 * and stops cleanly leaving no timer behind.
 */
import type { Logger } from 'pino';

/**
 * The first idle wait. Work this process sends (messages, answers, timers) wakes the poller at once, so idle polls only
 * find what another process sent or a message whose visibility ran out; polling for those every 20 ms after each
 * message (as before) was half of a job's requests to Azurite (460 of ~1,000 for a two-node job; 170 now, and 25% less
 * CPU per job: docs/local-durable.md#concurrency-and-polling).
 */
const MIN_IDLE_MS = 500;

export class Poller {
  private stopped = false;
  private idleMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private wakeUp: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private woken = false;
  private readonly wakeTimers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly name: string,
    /** One polling round; resolves true when it found work (poll again at once). */
    private readonly round: () => Promise<boolean>,
    private readonly maxIdleMs: number,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.loop ??= this.run();
  }

  wake(): void {
    this.woken = true;
    this.idleMs = 0;
    if (this.wakeUp) this.wakeUp();
  }

  /** Wakes the loop in `ms` (instead of up to one idle interval later); stop() cancels it. */
  wakeIn(ms: number): void {
    if (this.stopped) return;
    const handle = setTimeout(() => {
      this.wakeTimers.delete(handle);
      this.wake();
    }, ms);
    handle.unref();
    this.wakeTimers.add(handle);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.wakeTimers) clearTimeout(t);
    this.wakeTimers.clear();
    this.wake();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      this.woken = false;
      let worked = false;
      try {
        worked = await this.round();
      } catch (err) {
        if (this.stopped) break;
        this.log.warn({ poller: this.name, err }, `${this.name} poll failed; backing off`);
      }
      if (this.stopped) break;
      if (worked) {
        this.idleMs = 0;
        continue;
      }
      if (this.woken) continue;
      this.idleMs = Math.min(this.maxIdleMs, this.idleMs === 0 ? MIN_IDLE_MS : this.idleMs * 2);
      await new Promise<void>((resolve) => {
        this.wakeUp = resolve;
        this.timer = setTimeout(resolve, this.idleMs);
      });
      clearTimeout(this.timer);
      this.timer = undefined;
      this.wakeUp = undefined;
    }
  }
}
