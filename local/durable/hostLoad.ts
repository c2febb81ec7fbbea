/**
 * How much the engine may run at once, given what the host's listeners are doing (HostContext.ingress): it gives up
 * SLOTS_PER_REQUEST episode slots, and as many activity slots, for each HTTP request or queue message in flight, down
 * to `maxConcurrentWhileHostBusy`. A status poll now and then costs the engine little (one request: two slots); a
 * burst of submissions (16 requests, or a queue batch of 16–24 messages) leaves it the floor, so the submissions are
 * answered at storage speed while the pipelines they start still move. The count used is the most in flight within
 * the last BUSY_GRACE_MS: a burst has gaps between requests and between queue batches, and without the grace each gap
 * would let a full set of episodes start in the middle of it.
 */
import type { Ingress } from '../host/ingress';

/** How long a higher count of requests in flight still holds the engine's limits down after it dropped. */
export const BUSY_GRACE_MS = 100;
/** Episode (and activity) slots the engine gives up per request or queue message in flight. */
export const SLOTS_PER_REQUEST = 2;

export class HostLoad {
  private peak = 0;
  private peakAt = -Infinity;
  private timer: NodeJS.Timeout | undefined;
  private readonly reliefListeners = new Set<() => void>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly ingress: Ingress,
    /** The fewest the engine keeps running however busy the listeners are (at least 1). */
    private readonly floor: number,
  ) {
    this.unsubscribe = ingress.onChange((n) => this.changed(n));
  }

  /** The most requests and queue messages in flight at once within the last BUSY_GRACE_MS (about). */
  recentPeak(): number {
    const now = performance.now();
    const current = this.ingress.inFlight();
    if (now - this.peakAt >= BUSY_GRACE_MS) {
      this.peak = current;
      this.peakAt = now;
    }
    return Math.max(this.peak, current);
  }

  /** Whether the listeners have (or just had) anything in flight. */
  busy(): boolean {
    return this.recentPeak() > 0;
  }

  /** The engine's limit `max`, lowered by SLOTS_PER_REQUEST per request in flight, not below the floor (nor above max). */
  limit(max: number): number {
    const lowered = max - SLOTS_PER_REQUEST * this.recentPeak();
    return Math.min(max, Math.max(1, this.floor, lowered));
  }

  /** Whether the listeners' load holds the engine at its floor now (for `max`). */
  atFloor(max: number): boolean {
    return this.limit(max) <= Math.max(1, this.floor) && this.busy();
  }

  /** Calls `listener` when the limits may have risen (the listeners' load went down and stayed down). */
  onRelief(listener: () => void): () => void {
    this.reliefListeners.add(listener);
    return () => this.reliefListeners.delete(listener);
  }

  stop(): void {
    this.unsubscribe();
    clearTimeout(this.timer);
    this.timer = undefined;
    this.reliefListeners.clear();
  }

  private changed(inFlight: number): void {
    const now = performance.now();
    if (inFlight >= this.peak || now - this.peakAt >= BUSY_GRACE_MS) {
      this.peak = inFlight;
      this.peakAt = now;
    }
    // Fewer in flight than the peak: the limits rise once the grace period has passed (unless the load comes back).
    if (inFlight < this.peak && !this.timer) this.armRelief();
  }

  private armRelief(): void {
    const wait = Math.max(1, this.peakAt + BUSY_GRACE_MS - performance.now() + 1);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const before = this.peak;
      const now = this.recentPeak(); // refreshes the peak once the grace period has passed
      if (now < before) for (const listener of [...this.reliefListeners]) listener();
      if (this.ingress.inFlight() < this.peak) this.armRelief();
    }, wait);
    this.timer.unref();
  }
}
