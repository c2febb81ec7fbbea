/**
 * One bandwidth budget shared by every transfer of the registry: each chunk reserves its time slot on a single
 * timeline (bytes / rate), so N concurrent transfers each get about 1/N of the cap, as on a saturated link.
 */
export class BandwidthLimiter {
  private nextFreeMs = 0;

  constructor(private readonly bytesPerSec: number | undefined) {
    if (bytesPerSec !== undefined && !(bytesPerSec > 0)) throw new Error(`bandwidthBytesPerSec must be > 0, got ${bytesPerSec}`);
  }

  get limited(): boolean {
    return this.bytesPerSec !== undefined;
  }

  /** Resolves when `bytes` may be sent without exceeding the cap. */
  async take(bytes: number): Promise<void> {
    if (this.bytesPerSec === undefined) return;
    const now = performance.now();
    const start = Math.max(now, this.nextFreeMs);
    this.nextFreeMs = start + (bytes / this.bytesPerSec) * 1000;
    // Wait for the end of the slot: the chunk is "on the wire" during it.
    const wait = this.nextFreeMs - now;
    if (wait >= 1) await new Promise((r) => setTimeout(r, wait));
  }
}
