/**
 * Faults the emulator can inject, each producing the state a real Batch account shows for it.
 * Every fault is off unless configured. Fractions are drawn from a seeded generator, so a given
 * seed and request sequence always fails the same calls.
 */
import picomatch from 'picomatch';

export interface FaultConfig {
  /** Seed for every random choice below (default 1). */
  seed?: number;
  /**
   * Allocation failure: a pool (optionally only `poolId`) gets at most `maxNodes` nodes per resize
   * (0 = total failure); the resize ends with allocationState `steady` and `resizeErrors` set.
   */
  allocation?: { maxNodes: number; poolId?: string; code?: string; message?: string };
  /**
   * The first `count` nodes (by creation order) of a pool (optionally only `poolId`) go `unusable`:
   * nodes still booting when they would become idle, nodes already up as soon as the fault is set
   * (their running tasks are requeued, as Batch does).
   */
  unusableNodes?: { count: number; poolId?: string };
  /** The start task on the first `count` nodes of a pool fails with `exitCode` (default 1) instead of running. */
  startTaskFailure?: { count: number; poolId?: string; exitCode?: number };
  /**
   * The job release task on the first `count` nodes of a pool fails with `exitCode` (default 1) instead of running
   * (as when the container runtime hangs or the task times out): whatever it should have removed stays on the node.
   */
  releaseTaskFailure?: { count: number; poolId?: string; exitCode?: number };
  /** Fractions (0..1) of API calls answered 429 (with Retry-After) or 503 ServerBusy. */
  throttle?: { rate429?: number; rate503?: number; retryAfterSeconds?: number };
  /** The first `count` nodes of each pool take `extraAllocateMs` longer to allocate. */
  slowNodes?: { count: number; extraAllocateMs: number; poolId?: string };
  /**
   * Output file uploads are lost: a file whose blob name (container-relative, e.g. `job-1/workdir/result.txt`) matches
   * the glob `blobPattern` is logged as uploaded in fileuploadout.txt and fails nothing, but never reaches storage, as
   * when the node (or the whole stack) dies during the upload or storage loses the write. `count`: only the first
   * `count` such uploads (default: all).
   */
  lostUploads?: { blobPattern: string; count?: number };
  /** Soft affinity is ignored: a task with affinityInfo lands on another schedulable node when there is one. */
  ignoreAffinity?: boolean;
  /**
   * Faults of single nodes, each matched by `nodeId`, or by `ordinal` (creation order in its pool, from 0) within
   * `poolId` (or any pool). Set while nodes are up, they act at once.
   */
  nodes?: NodeFault[];
  /**
   * How long after a preemption Batch finds Spot capacity again: the node keeps its id and is reinitialized
   * (`creating` → `starting` → its start task → `idle`), as Batch does "when replacement capacity is found". Absent:
   * capacity does not come back (the node stays `preempted` until removed or the pool is resized).
   */
  spotRestoreMs?: number;
}

/** One node's faults (see docs/local-batch.md, "Fault injection"). */
export interface NodeFault {
  nodeId?: string;
  poolId?: string;
  ordinal?: number;
  /** Its ssh port is closed: the node's ssh stand-in answers "Connection refused" (exit 255), as a dead sshd does. */
  sshRefused?: boolean;
  /** Every ssh connection to it takes this much longer to open (a slow launcher path). */
  sshDelayMs?: number;
  /** It goes unusable (booting: instead of idle; up: at once, its running tasks requeued). */
  unusable?: boolean;
  /**
   * Azure takes it back (a Spot/low-priority node only; a dedicated node is never preempted): its state becomes
   * `preempted`, its VM and disk are gone, its running tasks are requeued (a multi-instance task as a whole), and
   * the pool keeps listing it. Once per node: a node Batch brings back (spotRestoreMs) is not preempted again.
   */
  preempted?: boolean;
  /**
   * These mounts of its pool (by relativeMountPath) failed on it: the node comes up without them, as a node whose NFS
   * or blobfuse mount did not come up does. Read when the node is made (its mounts are made then), not later.
   */
  brokenMounts?: string[];
  /**
   * Modelled hardware (docs/local-batch.md "Modelled node hardware"): its InfiniBand port is down (`ibstat`: Down,
   * Polling, 10 Gb/s; `ib_write_bw` fails), its link trained at `ibRateGbps` instead of the size's rate (a slow link:
   * `ibstat` shows the rate, `ib_write_bw` 2.5% under it), its STREAM shows `streamMBps` (low memory bandwidth).
   * Read by the node's emulated tools whenever they run, so they act at once. `gdrMissing`: on a GPUDirect size (ND
   * A100/H100) its peer-memory module is not loaded (the emulated `lsmod` lists no `nvidia_peermem`).
   */
  ibPortDown?: boolean;
  ibRateGbps?: number;
  streamMBps?: number;
  gdrMissing?: boolean;
}

/** A small deterministic PRNG (mulberry32); quality is irrelevant, determinism is the point. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type ThrottleDecision = { status: 429; retryAfterSeconds: number } | { status: 503 } | undefined;

/** Holds the live fault configuration and the random stream used for per-request faults. */
export class FaultState {
  private config: FaultConfig;
  private random: () => number;
  /** Uploads lost so far under the current lostUploads fault (reset when it is set again). */
  private lost = 0;
  /** Told about every change, so faults that hit live nodes can act at once. */
  onChange: (patch: Partial<FaultConfig>) => void = () => undefined;

  constructor(initial: FaultConfig = {}) {
    this.config = { ...initial };
    this.random = seededRandom(initial.seed ?? 1);
  }

  get current(): Readonly<FaultConfig> {
    return this.config;
  }

  update(patch: Partial<FaultConfig>): void {
    this.config = { ...this.config, ...patch };
    if (patch.seed !== undefined) this.random = seededRandom(patch.seed);
    if ('lostUploads' in patch) this.lost = 0;
    this.onChange(patch);
  }

  /** Decides whether this API call is answered with a throttling error. */
  throttleDecision(): ThrottleDecision {
    const t = this.config.throttle;
    if (!t || (!t.rate429 && !t.rate503)) return undefined;
    const draw = this.random();
    if (t.rate429 && draw < t.rate429) return { status: 429, retryAfterSeconds: t.retryAfterSeconds ?? 1 };
    if (t.rate503 && draw < (t.rate429 ?? 0) + t.rate503) return { status: 503 };
    return undefined;
  }

  private appliesTo(poolId: string, filter?: string): boolean {
    return filter === undefined || filter.toLowerCase() === poolId.toLowerCase();
  }

  /** Whether a "first `count` nodes of a pool" fault hits the node with this 0-based creation `ordinal`. */
  private hits<F extends { count: number; poolId?: string }>(f: F | undefined, poolId: string, ordinal: number): f is F {
    return !!f && this.appliesTo(poolId, f.poolId) && ordinal < f.count;
  }

  allocationLimit(poolId: string): { maxNodes: number; code: string; message: string } | undefined {
    const a = this.config.allocation;
    if (!a || !this.appliesTo(poolId, a.poolId)) return undefined;
    return {
      maxNodes: a.maxNodes,
      code: a.code ?? (a.maxNodes === 0 ? 'AllocationFailed' : 'AllocationTimedout'),
      message:
        a.message ??
        (a.maxNodes === 0
          ? 'Desired number of dedicated nodes could not be allocated due to an allocation failure'
          : 'Desired number of dedicated nodes could not be allocated as the resize timeout was reached'),
    };
  }

  nodeBecomesUnusable(poolId: string, ordinal: number, nodeId?: string): boolean {
    return this.hits(this.config.unusableNodes, poolId, ordinal) || !!this.nodeFault(poolId, ordinal, nodeId)?.unusable;
  }

  /** The faults of one node (several matching entries are merged, later ones winning). */
  nodeFault(poolId: string, ordinal: number, nodeId?: string): NodeFault | undefined {
    const matching = (this.config.nodes ?? []).filter((f) =>
      f.nodeId !== undefined ? f.nodeId === nodeId : f.ordinal === ordinal && this.appliesTo(poolId, f.poolId),
    );
    return matching.length ? Object.assign({}, ...matching) : undefined;
  }

  startTaskFailureExitCode(poolId: string, ordinal: number): number | undefined {
    const s = this.config.startTaskFailure;
    return this.hits(s, poolId, ordinal) ? (s.exitCode ?? 1) : undefined;
  }

  releaseTaskFailureExitCode(poolId: string, ordinal: number): number | undefined {
    const s = this.config.releaseTaskFailure;
    return this.hits(s, poolId, ordinal) ? (s.exitCode ?? 1) : undefined;
  }

  extraAllocateMs(poolId: string, ordinal: number): number {
    const s = this.config.slowNodes;
    return this.hits(s, poolId, ordinal) ? s.extraAllocateMs : 0;
  }

  /** Whether the upload of this blob is lost (counted: call once per upload). */
  uploadLost(blobName: string): boolean {
    const f = this.config.lostUploads;
    if (!f || (f.count !== undefined && this.lost >= f.count)) return false;
    if (!picomatch(f.blobPattern, { dot: true })(blobName)) return false;
    this.lost += 1;
    return true;
  }

  get ignoreAffinity(): boolean {
    return !!this.config.ignoreAffinity;
  }
}
