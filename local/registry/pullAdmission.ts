/**
 * Admission control for pulls: the registry's "limit of concurrent pulls".
 *
 * Definition (also in docs/local-registry.md):
 * - A *pull client* is identified by the `X-Pull-Client` request header when present (the node tools send
 *   `<pool>/<node>`), else by the remote address. On a real network every node has its own address; here all
 *   emulated nodes share 127.0.0.1, hence the header.
 * - A client is *pulling* while it has at least one manifest or blob GET in flight (HEAD and `/v2/` are free).
 * - At most `limit` clients may be pulling at once. A GET from a client that is already pulling is admitted
 *   (one pull may fetch several layers in parallel); a GET from any other client is answered 429 while `limit`
 *   clients are pulling. A node whose pull pauses between two requests loses its slot, as with a
 *   connection-limited front end, so an overloaded registry fails pulls midway too.
 */
export interface ClientStats {
  requests: number;
  pulls: number;
  rejected429: number;
  bytesServed: number;
}

export interface RegistryStats {
  /** Current limit on concurrently pulling clients; null when unlimited. */
  limit: number | null;
  pullingNow: number;
  transfersNow: number;
  /** Highest number of clients pulling at the same time (the quantity the limit bounds). */
  maxConcurrentObserved: number;
  /** Highest number of manifest/blob GETs in flight at the same time. */
  maxConcurrentTransfers: number;
  /** Manifest GETs answered 200: each image pull fetches its manifest once. */
  totalPulls: number;
  totalRequests: number;
  total429: number;
  /** Body bytes of manifests and blobs sent to clients. */
  bytesServed: number;
  perClient: Record<string, ClientStats>;
}

export interface Admission {
  release(): void;
}

export class PullAdmission {
  private readonly inFlight = new Map<string, number>();
  private transfers = 0;
  private stats!: Omit<RegistryStats, 'limit' | 'pullingNow' | 'transfersNow'>;

  constructor(private limit: number | undefined) {
    PullAdmission.checkLimit(limit);
    this.reset();
  }

  private static checkLimit(limit: number | undefined): void {
    if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1)) throw new Error(`maxConcurrentPulls must be an integer >= 1, got ${limit}`);
  }

  setLimit(limit: number | undefined): void {
    PullAdmission.checkLimit(limit);
    this.limit = limit;
  }

  reset(): void {
    this.stats = {
      maxConcurrentObserved: this.inFlight.size,
      maxConcurrentTransfers: this.transfers,
      totalPulls: 0,
      totalRequests: 0,
      total429: 0,
      bytesServed: 0,
      perClient: {},
    };
  }

  private client(key: string): ClientStats {
    let c = this.stats.perClient[key];
    if (!c) {
      c = { requests: 0, pulls: 0, rejected429: 0, bytesServed: 0 };
      this.stats.perClient[key] = c;
    }
    return c;
  }

  /** Counts a request that needs no admission (HEAD, /v2/, catalog). */
  countRequest(key: string): void {
    this.stats.totalRequests++;
    this.client(key).requests++;
  }

  /** Admits a manifest/blob GET or returns undefined when the caller must answer 429. */
  tryAdmit(key: string): Admission | undefined {
    this.countRequest(key);
    const current = this.inFlight.get(key) ?? 0;
    if (current === 0 && this.limit !== undefined && this.inFlight.size >= this.limit) {
      this.stats.total429++;
      this.client(key).rejected429++;
      return undefined;
    }
    this.inFlight.set(key, current + 1);
    this.transfers++;
    this.stats.maxConcurrentObserved = Math.max(this.stats.maxConcurrentObserved, this.inFlight.size);
    this.stats.maxConcurrentTransfers = Math.max(this.stats.maxConcurrentTransfers, this.transfers);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.transfers--;
        const n = (this.inFlight.get(key) ?? 1) - 1;
        if (n <= 0) this.inFlight.delete(key);
        else this.inFlight.set(key, n);
      },
    };
  }

  countPull(key: string): void {
    this.stats.totalPulls++;
    this.client(key).pulls++;
  }

  countBytes(key: string, n: number): void {
    this.stats.bytesServed += n;
    this.client(key).bytesServed += n;
  }

  snapshot(): RegistryStats {
    const perClient: Record<string, ClientStats> = {};
    for (const [k, v] of Object.entries(this.stats.perClient)) perClient[k] = { ...v };
    return { limit: this.limit ?? null, pullingNow: this.inFlight.size, transfersNow: this.transfers, ...this.stats, perClient };
  }
}
