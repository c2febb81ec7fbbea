/**
 * A polling loop that backs off exponentially while idle, can be woken early (when this process just
 * enqueued something or freed a slot), and stops cleanly leaving no timer behind.
 */
import type { Logger } from 'pino';

const MIN_IDLE_MS = 20;

export class Poller {
  private stopped = false;
  private idleMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private wakeUp: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private woken = false;

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

  async stop(): Promise<void> {
    this.stopped = true;
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
