/**
 * What the host's listeners have taken in and not finished: HTTP requests on the host's listener, and the queue
 * messages of full batches (from the received message to its delete). A full batch means the queue has a backlog;
 * a listener that receives partial batches keeps up and needs no room made for it (the app's job-events
 * announcements, one per pipeline transition, are such a trickle, and counting them held the Durable engine down for
 * most of the pipelines' run). Extensions read it to stay out of the way of that work: the Durable engine runs fewer
 * episodes and activities at once the more there is (local/durable/hostLoad.ts), so a burst of submissions is
 * answered at storage speed instead of queueing behind the pipelines it starts.
 * The real host has no such signal (in Azure, front-door and Durable work scale out over instances); on one machine
 * shared by every part of the stack it is what keeps the listeners from being starved.
 */
export interface Ingress {
  /** Requests and queue messages in progress now. */
  inFlight(): number;
  /** Calls `listener` with the new count each time it changes; returns the unsubscribe function. */
  onChange(listener: (inFlight: number) => void): () => void;
}

export class IngressGauge implements Ingress {
  private count = 0;
  private readonly listeners = new Set<(inFlight: number) => void>();

  inFlight(): number {
    return this.count;
  }

  onChange(listener: (inFlight: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Counts `work` as in flight until it settles; returns it unchanged. */
  track<T>(work: () => Promise<T>): Promise<T> {
    this.changeBy(1);
    let p: Promise<T>;
    try {
      p = work();
    } catch (err) {
      this.changeBy(-1);
      return Promise.reject(err as Error);
    }
    return p.finally(() => this.changeBy(-1));
  }

  private changeBy(delta: number): void {
    this.count += delta;
    for (const listener of this.listeners) {
      try {
        listener(this.count);
      } catch {
        // A listener's failure is its own; the others still hear of the change.
      }
    }
  }
}
