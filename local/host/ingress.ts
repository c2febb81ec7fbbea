/**
 * What the host's listeners have taken in and not finished: HTTP requests on the host's listener and queue-triggered
 * invocations (from the received message to its delete). Extensions read it to stay out of the way of that work: the
 * Durable engine runs fewer episodes and activities at once while it is not zero (local/durable), so a burst of
 * submissions is answered at storage speed instead of queueing behind the pipelines it starts.
 * The real host has no such signal (in Azure, front-door and Durable work scale out over instances); on one machine
 * shared by every part of the stack it is what keeps the listeners from being starved.
 */
export interface Ingress {
  /** Requests and queue messages in progress now. */
  inFlight(): number;
  /** How long the count has been zero (ms; 0 while something is in flight). */
  idleForMs(): number;
  /** Calls `listener` each time the count drops to zero; returns the unsubscribe function. */
  onIdle(listener: () => void): () => void;
}

export class IngressGauge implements Ingress {
  private count = 0;
  private idleSince = performance.now();
  private readonly idle = new Set<() => void>();

  inFlight(): number {
    return this.count;
  }

  idleForMs(): number {
    return this.count > 0 ? 0 : performance.now() - this.idleSince;
  }

  onIdle(listener: () => void): () => void {
    this.idle.add(listener);
    return () => this.idle.delete(listener);
  }

  /** Counts `work` as in flight until it settles; returns it unchanged. */
  track<T>(work: () => Promise<T>): Promise<T> {
    this.count += 1;
    let p: Promise<T>;
    try {
      p = work();
    } catch (err) {
      this.leave();
      return Promise.reject(err as Error);
    }
    return p.finally(() => this.leave());
  }

  private leave(): void {
    this.count -= 1;
    if (this.count > 0) return;
    this.idleSince = performance.now();
    for (const listener of [...this.idle]) {
      try {
        listener();
      } catch {
        // A listener's failure is its own; the others still hear of it.
      }
    }
  }
}
