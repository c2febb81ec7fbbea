/**
 * The discrete-event core of the capacity model: a min-heap of events by time, ties broken by insertion order, so a run
 * is deterministic (two events at the same instant happen in the order they were scheduled).
 */
export interface SimEvent<T> {
  at: number;
  seq: number;
  data: T;
}

export class EventQueue<T> {
  private heap: SimEvent<T>[] = [];
  private nextSeq = 0;
  /** Time of the last event popped: events are never scheduled before it. */
  now = 0;

  get size(): number {
    return this.heap.length;
  }

  push(at: number, data: T): void {
    if (!Number.isFinite(at)) throw new RangeError(`event time must be finite, got ${at}`);
    if (at < this.now) throw new RangeError(`event at ${at} is before now (${this.now})`);
    this.heap.push({ at, seq: this.nextSeq++, data });
    this.up(this.heap.length - 1);
  }

  peek(): SimEvent<T> | undefined {
    return this.heap[0];
  }

  pop(): SimEvent<T> | undefined {
    const top = this.heap[0];
    if (!top) return undefined;
    const last = this.heap.pop()!;
    if (this.heap.length) {
      this.heap[0] = last;
      this.down(0);
    }
    this.now = top.at;
    return top;
  }

  private less(i: number, j: number): boolean {
    const a = this.heap[i];
    const b = this.heap[j];
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  private swap(i: number, j: number): void {
    [this.heap[i], this.heap[j]] = [this.heap[j], this.heap[i]];
  }

  private up(i: number): void {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(i, p)) return;
      this.swap(i, p);
      i = p;
    }
  }

  private down(i: number): void {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < this.heap.length && this.less(l, m)) m = l;
      if (r < this.heap.length && this.less(r, m)) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }
}

/** Pops events in order and hands each to `handle` (which may push more) until none are left or `maxEvents` is reached. */
export function runEvents<T>(q: EventQueue<T>, handle: (at: number, data: T) => void, maxEvents = 10_000_000): number {
  let n = 0;
  for (let e = q.pop(); e; e = q.pop()) {
    handle(e.at, e.data);
    if (++n >= maxEvents) throw new Error(`simulation did not settle within ${maxEvents} events`);
  }
  return n;
}
