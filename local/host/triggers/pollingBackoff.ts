/**
 * The queue listener's polling delay: randomized exponential growth while the queue stays empty, from
 * MIN up to maxPollingInterval, back to MIN as soon as a message arrives (the Storage extension's strategy).
 */
export class PollingBackoff {
  private delay: number;

  constructor(
    private readonly minMs: number,
    private readonly maxMs: number,
    private readonly random: () => number = Math.random,
  ) {
    if (!(minMs > 0 && maxMs >= minMs)) throw new Error(`PollingBackoff needs 0 < min <= max, got min ${minMs}, max ${maxMs}`);
    this.delay = minMs;
  }

  /** Delay before the next poll after an empty one. */
  nextEmpty(): number {
    const current = this.delay;
    // Grow by a random factor in [1.5, 2.5) (at least doubling on average), capped at max.
    this.delay = Math.min(this.maxMs, current * (1.5 + this.random()));
    return current;
  }

  /** A poll found messages. */
  reset(): void {
    this.delay = this.minMs;
  }
}
