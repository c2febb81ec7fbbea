/**
 * Whether the host can invoke functions yet, and the wait for it, as the real host's HostAvailabilityCheckMiddleware
 * does (azure-functions-host, src/WebJobs.Script.WebHost/Middleware/HostAvailabilityCheckMiddleware.cs): a request
 * that arrives while the host is still starting (extensions such as the Durable engine not up yet) is held until the
 * host is running, for at most ScriptConstants.HostTimeoutSeconds (30 s), then answered 503 "Function host is not
 * running.". Without it, a restarted host answered 500 for the 0.2–4.7 s its Durable engine took to start, because
 * the function's durableClient binding could not be provided yet.
 */

/** The real host's ScriptConstants.HostTimeoutSeconds. */
export const HOST_READY_TIMEOUT_MS = 30_000;

/** The body of the real host's answer when the wait runs out. */
export const HOST_NOT_RUNNING = 'Function host is not running.';

export class HostReadiness {
  private ready = false;
  private stopped = false;
  private readonly waiters = new Set<(ready: boolean) => void>();

  /** The host is running: held requests go on, new ones pass straight through. */
  markReady(): void {
    this.ready = true;
    this.settle(true);
  }

  /** The host stops (or failed to start): held requests get their 503 now rather than at the timeout. */
  markStopped(): void {
    this.stopped = true;
    this.ready = false;
    this.settle(false);
  }

  isReady(): boolean {
    return this.ready;
  }

  /** True as soon as the host is running; false after `timeoutMs` or when it stops first. */
  waitUntilReady(timeoutMs: number): Promise<boolean> {
    if (this.ready) return Promise.resolve(true);
    if (this.stopped) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (ok: boolean): void => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve(ok);
      };
      const timer = setTimeout(() => done(false), timeoutMs);
      this.waiters.add(done);
    });
  }

  private settle(ok: boolean): void {
    for (const done of [...this.waiters]) done(ok);
  }
}
