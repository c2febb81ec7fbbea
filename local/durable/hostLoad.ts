/**
 * How much the engine may run at once, given what the host's listeners are doing (HostContext.ingress): the
 * extension's limits while they are idle, `maxConcurrentWhileHostBusy` while they have HTTP requests or queue
 * messages in flight and for a short grace period after (a burst of submissions has gaps between requests and between
 * queue batches; without it each gap would let a full set of episodes start in the middle of the burst).
 */
import type { Ingress } from '../host/ingress';

/** How long the listeners must have been idle before the engine runs at its full limits again. */
export const BUSY_GRACE_MS = 100;

export class HostLoad {
  private readonly quietListeners = new Set<() => void>();
  private readonly unsubscribe: () => void;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ingress: Ingress,
    private readonly busyLimit: number,
  ) {
    this.unsubscribe = ingress.onIdle(() => this.armQuietCheck());
  }

  /** Whether the host's listeners are (or just were) working. */
  busy(): boolean {
    return this.ingress.inFlight() > 0 || this.ingress.idleForMs() < BUSY_GRACE_MS;
  }

  /** `max` while the host is quiet; the busy limit (at least 1, at most `max`) while it is busy. */
  limit(max: number): number {
    return this.busy() ? Math.max(1, Math.min(max, this.busyLimit)) : max;
  }

  /** Calls `listener` each time the host becomes quiet after being busy; returns the unsubscribe function. */
  onQuiet(listener: () => void): () => void {
    this.quietListeners.add(listener);
    return () => this.quietListeners.delete(listener);
  }

  stop(): void {
    this.unsubscribe();
    clearTimeout(this.timer);
    this.timer = undefined;
    this.quietListeners.clear();
  }

  private armQuietCheck(delayMs = BUSY_GRACE_MS): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.ingress.inFlight() > 0) return; // busy again: its next idle arms another check
      const left = BUSY_GRACE_MS - this.ingress.idleForMs();
      if (left > 0) {
        this.armQuietCheck(left + 1); // timers may fire a little early on the loop's clock
        return;
      }
      for (const listener of [...this.quietListeners]) listener();
    }, delayMs);
    this.timer.unref();
  }
}
