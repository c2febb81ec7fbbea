/**
 * Shard planner: turns a blob listing into ~100 MB shards spread over staging accounts and nodes.
 *
 * Units: sizes are bytes; "MB" means 10^6 bytes (the issue says 80–100 MB, and Azure documents throughput in decimal
 * units), so the defaults are 80,000,000 and 100,000,000 bytes.
 *
 * Packing walks the files in a canonical order (account, container, name by UTF-16 code units) and fills each shard
 * to a common capacity (`shardCapacity`): the even share of the total, so shards come out nearly equal and the last one
 * is not a short tail that would unbalance the accounts. Small files are packed whole while they fit; the file that
 * crosses a shard boundary is cut at the largest record boundary that fits (boundaries are multiples of
 * `recordAlignment` counted from the start of the file). A cut leaves the shard above capacity - recordAlignment, and
 * capacity >= minBytes + recordAlignment.
 * So every shard except the last lies in [minBytes, maxBytes], provided recordAlignment <= maxBytes - minBytes.
 *
 * Accounts: largest-first onto the least-loaded account, so bytes per account are balanced (what each account's
 * egress limit sees when all nodes download at once).
 * Nodes: contiguous runs of shards, counts differing by at most one, so node i's ranks read the i-th slice of the data.
 * Blob names start with a hash so staged blobs spread over the storage service's range partitions.
 */
import { PlanningError } from './errors';
import { fnv1a32, hex32, mix32 } from './hash';

export const MB = 1_000_000;
export const DEFAULT_MIN_SHARD_BYTES = 80 * MB;
export const DEFAULT_MAX_SHARD_BYTES = 100 * MB;
export const DEFAULT_SHARD_CONTAINER = 'mpijob-shards';

export interface BlobRef {
  account: string;
  container: string;
  name: string;
}

export interface ListedBlob extends BlobRef {
  size: number;
  etag?: string;
}

/** A byte range of one source blob, placed at `shardOffset` inside a shard. */
export interface ShardPart {
  source: BlobRef;
  offset: number;
  length: number;
  shardOffset: number;
  /** The source ETag seen in the listing, so the copy can use If-Match and notice a file changed under it. */
  etag?: string;
}

export interface Shard {
  id: string;
  index: number;
  /** Staging account that holds this shard. */
  account: string;
  container: string;
  blobName: string;
  bytes: number;
  node: number;
  parts: ShardPart[];
}

export interface ShardPlanOptions {
  stagingAccounts: string[];
  nodes: number;
  minBytes?: number;
  maxBytes?: number;
  /** Split offsets are multiples of this many bytes (fixed-size records). Default 1. */
  recordAlignment?: number;
  /** Staging container. Default `mpijob-shards`; callers usually pass one per job so cleanup is one delete. */
  container?: string;
  /** Put in front of the shard id inside the blob name (after the hash), e.g. `${jobId}/`. */
  namePrefix?: string;
}

export type ResolvedShardPlanOptions = Required<ShardPlanOptions>;

export interface ShardPlan {
  version: 1;
  options: ResolvedShardPlanOptions;
  totalBytes: number;
  fileCount: number;
  shards: Shard[];
  /** Bytes per staging account (every configured account appears, possibly with 0). */
  byAccount: Record<string, number>;
  /** Shard ids per node index ("0".."nodes-1"; every node appears, possibly with []). */
  byNode: Record<string, string[]>;
  /** Hash of the layout: two plans with the same digest place the same bytes in the same blobs. */
  digest: string;
}

function compareBlobRefs(a: BlobRef, b: BlobRef): number {
  if (a.account !== b.account) return a.account < b.account ? -1 : 1;
  if (a.container !== b.container) return a.container < b.container ? -1 : 1;
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  return 0;
}

function isWholeNumber(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
}

export function resolveShardPlanOptions(options: ShardPlanOptions): ResolvedShardPlanOptions {
  const minBytes = options.minBytes ?? DEFAULT_MIN_SHARD_BYTES;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_SHARD_BYTES;
  const recordAlignment = options.recordAlignment ?? 1;
  const accounts = [...new Set(options.stagingAccounts)].sort();
  if (!isWholeNumber(minBytes) || !isWholeNumber(maxBytes) || minBytes > maxBytes || maxBytes === 0) {
    throw new PlanningError(`shard sizes must be whole numbers with 0 <= minBytes <= maxBytes and maxBytes > 0`, {
      minBytes,
      maxBytes,
    });
  }
  if (!isWholeNumber(recordAlignment) || recordAlignment < 1 || recordAlignment > Math.max(1, maxBytes - minBytes)) {
    throw new PlanningError(`recordAlignment must be a whole number in [1, maxBytes - minBytes] so a split shard can stay within range`, {
      recordAlignment,
      minBytes,
      maxBytes,
    });
  }
  if (accounts.length === 0 || accounts.some((a) => typeof a !== 'string' || a.length === 0)) {
    throw new PlanningError('at least one non-empty staging account name is required', {
      stagingAccounts: options.stagingAccounts,
    });
  }
  if (!Number.isSafeInteger(options.nodes) || options.nodes < 1) {
    throw new PlanningError('nodes must be a positive whole number', { nodes: options.nodes });
  }
  return {
    stagingAccounts: accounts,
    nodes: options.nodes,
    minBytes,
    maxBytes,
    recordAlignment,
    container: options.container ?? DEFAULT_SHARD_CONTAINER,
    namePrefix: options.namePrefix ?? '',
  };
}

function canonicalListing(listing: readonly ListedBlob[]): ListedBlob[] {
  const sorted = listing.map((b, i) => {
    if (!b || typeof b.account !== 'string' || typeof b.container !== 'string' || typeof b.name !== 'string') {
      throw new PlanningError(`listing entry ${i} is not a blob reference`, { index: i, entry: b });
    }
    if (!isWholeNumber(b.size)) {
      throw new PlanningError(`listing entry ${b.account}/${b.container}/${b.name} has an invalid size`, {
        index: i,
        size: b.size,
      });
    }
    return b;
  });
  // Storage listings arrive name-ordered per container, so a linear check usually saves the O(n log n) sort.
  let ordered = true;
  for (let i = 1; i < sorted.length && ordered; i++) ordered = compareBlobRefs(sorted[i - 1], sorted[i]) < 0;
  if (!ordered) sorted.sort(compareBlobRefs);
  for (let i = 1; i < sorted.length; i++) {
    if (compareBlobRefs(sorted[i - 1], sorted[i]) === 0) {
      const d = sorted[i];
      throw new PlanningError(`listing names blob ${d.account}/${d.container}/${d.name} twice`, { blob: d });
    }
  }
  return sorted;
}

function sameBlob(a: BlobRef, b: BlobRef): boolean {
  return a.account === b.account && a.container === b.container && a.name === b.name;
}

interface Draft {
  parts: ShardPart[];
  bytes: number;
}

/**
 * Shard capacity: the smallest fill that still needs only n = ceil(total / (maxBytes - align + 1)) shards, given that
 * a record-aligned cut can leave up to align - 1 bytes of room unused. Raised to minBytes + align so a cut shard
 * reaches minBytes, capped at maxBytes.
 */
export function shardCapacity(totalBytes: number, minBytes: number, maxBytes: number, align: number): number {
  if (totalBytes === 0) return maxBytes;
  const n = Math.ceil(totalBytes / (maxBytes - align + 1));
  return Math.min(maxBytes, Math.max(Math.ceil(totalBytes / n) + align - 1, minBytes + align));
}

/** Cut the canonical byte stream into shard drafts (see the module comment for the rules). */
function packShards(files: readonly ListedBlob[], opts: ResolvedShardPlanOptions): Draft[] {
  const { minBytes, maxBytes, recordAlignment: align } = opts;
  const capacity = shardCapacity(
    files.reduce((sum, f) => sum + f.size, 0),
    minBytes,
    maxBytes,
    align,
  );
  const drafts: Draft[] = [];
  let cur: Draft = { parts: [], bytes: 0 };
  const add = (f: ListedBlob, offset: number, length: number): void => {
    const part: ShardPart = {
      source: { account: f.account, container: f.container, name: f.name },
      offset,
      length,
      shardOffset: cur.bytes,
    };
    if (f.etag !== undefined) part.etag = f.etag;
    cur.parts.push(part);
    cur.bytes += length;
  };
  const close = (): void => {
    if (cur.parts.length > 0) drafts.push(cur);
    cur = { parts: [], bytes: 0 };
  };

  for (const f of files) {
    if (f.size === 0) {
      add(f, 0, 0); // recorded so a node can recreate empty files
      continue;
    }
    let offset = 0;
    while (offset < f.size) {
      const remaining = f.size - offset;
      const room = capacity - cur.bytes;
      if (remaining <= room) {
        add(f, offset, remaining);
        offset = f.size;
        if (cur.bytes === capacity) close();
      } else {
        // offset is always a multiple of align here (0 or a previous cut), so this cut is record-aligned too.
        const piece = Math.floor(room / align) * align;
        if (piece > 0) {
          add(f, offset, piece);
          offset += piece;
        }
        close(); // holds > capacity - align >= minBytes
      }
    }
  }
  if (cur.parts.length > 0) {
    const prev = drafts[drafts.length - 1];
    if (prev && cur.bytes < minBytes && prev.bytes + cur.bytes <= maxBytes) {
      // A short tail (or only empty files) joins the previous shard when it fits: a tiny last shard is what tips an
      // account over the balance bound, and a 0-byte blob is pointless. Adjacent parts of one file are coalesced.
      for (const p of cur.parts) {
        const last = prev.parts[prev.parts.length - 1];
        if (last && p.length > 0 && last.offset + last.length === p.offset && sameBlob(last.source, p.source)) {
          last.length += p.length;
        } else {
          prev.parts.push({ ...p, shardOffset: prev.bytes });
        }
        prev.bytes += p.length;
      }
    } else {
      drafts.push(cur);
    }
  }
  return drafts;
}

/**
 * Largest-first onto the least-loaded account (ties: lower shard index, first account in sorted order). Taking the
 * smallest shards last lets them even out the count granularity: in-order assignment of the same shards measured
 * up to 1.11 max/min where this stays within 1.1 (property test). Which node reads a shard does not matter for
 * account limits: an account's egress is the sum over all nodes reading from it.
 */
function assignAccounts(drafts: readonly Draft[], accountCount: number): number[] {
  const order = drafts.map((_, i) => i).sort((a, b) => drafts[b].bytes - drafts[a].bytes || a - b);
  const load = new Array<number>(accountCount).fill(0);
  const result = new Array<number>(drafts.length);
  for (const i of order) {
    let best = 0;
    for (let a = 1; a < accountCount; a++) if (load[a] < load[best]) best = a;
    result[i] = best;
    load[best] += drafts[i].bytes;
  }
  return result;
}

/** Node of shard `index` when `count` shards are split into `nodes` contiguous runs differing by at most one. */
export function nodeForShardIndex(index: number, count: number, nodes: number): number {
  // Inverse of run start = floor(node * count / nodes).
  return Math.floor(((index + 1) * nodes - 1) / count);
}

export function shardId(index: number): string {
  return `shard-${String(index).padStart(6, '0')}`;
}

/** `<4 hex of hash>/<prefix><id>`: the hash in front spreads blobs across partitions (Azure's naming guidance). */
export function shardBlobName(id: string, namePrefix: string): string {
  return `${hex32(mix32(fnv1a32(namePrefix + id))).slice(0, 4)}/${namePrefix}${id}`;
}

export function planShards(listing: readonly ListedBlob[], options: ShardPlanOptions): ShardPlan {
  const opts = resolveShardPlanOptions(options);
  const files = canonicalListing(listing);
  const drafts = packShards(files, opts);
  const accountOf = assignAccounts(drafts, opts.stagingAccounts.length);

  const byAccount: Record<string, number> = {};
  for (const a of opts.stagingAccounts) byAccount[a] = 0;
  const byNode: Record<string, string[]> = {};
  for (let n = 0; n < opts.nodes; n++) byNode[String(n)] = [];

  let digestState = fnv1a32(`v1|${opts.container}|${opts.namePrefix}`);
  const shards: Shard[] = drafts.map((d, index) => {
    const id = shardId(index);
    const account = opts.stagingAccounts[accountOf[index]];
    const node = nodeForShardIndex(index, drafts.length, opts.nodes);
    byAccount[account] += d.bytes;
    byNode[String(node)].push(id);
    for (const p of d.parts) {
      digestState = fnv1a32(`${id}|${account}|${p.source.account}/${p.source.container}/${p.source.name}|${p.offset}|${p.length}|${p.etag ?? ''}`, digestState);
    }
    return {
      id,
      index,
      account,
      container: opts.container,
      blobName: shardBlobName(id, opts.namePrefix),
      bytes: d.bytes,
      node,
      parts: d.parts,
    };
  });

  return {
    version: 1,
    options: opts,
    totalBytes: files.reduce((s, f) => s + f.size, 0),
    fileCount: files.length,
    shards,
    byAccount,
    byNode,
    digest: hex32(digestState),
  };
}

/** What one node reads to find and (if needed) reassemble its slice of the input. */
export interface NodeShardManifest {
  version: 1;
  planDigest: string;
  node: number;
  nodes: number;
  bytes: number;
  shards: NodeShardEntry[];
}

export interface NodeShardEntry {
  shardId: string;
  account: string;
  container: string;
  blobName: string;
  /** `<account>/<container>/<blobName>`: a stable key until the activity fills `url` with a read-only SAS URL. */
  blobPath: string;
  url?: string;
  bytes: number;
  parts: ShardPart[];
}

export function buildNodeManifests(plan: ShardPlan): NodeShardManifest[] {
  const byId = new Map(plan.shards.map((s) => [s.id, s]));
  return Array.from({ length: plan.options.nodes }, (_, node) => {
    const entries: NodeShardEntry[] = (plan.byNode[String(node)] ?? []).map((id) => {
      const s = byId.get(id);
      if (!s) throw new PlanningError(`plan lists shard ${id} for node ${node} but has no such shard`, { id, node });
      return {
        shardId: s.id,
        account: s.account,
        container: s.container,
        blobName: s.blobName,
        blobPath: `${s.account}/${s.container}/${s.blobName}`,
        bytes: s.bytes,
        parts: s.parts,
      };
    });
    return {
      version: 1,
      planDigest: plan.digest,
      node,
      nodes: plan.options.nodes,
      bytes: entries.reduce((sum, e) => sum + e.bytes, 0),
      shards: entries,
    };
  });
}

/** Fill in URLs (e.g. SAS URLs minted by an activity). Every shard of the manifest must get one. */
export function withShardUrls(manifest: NodeShardManifest, urlByShardId: Readonly<Record<string, string>>): NodeShardManifest {
  return {
    ...manifest,
    shards: manifest.shards.map((e) => {
      const url = urlByShardId[e.shardId];
      if (typeof url !== 'string' || url.length === 0) {
        throw new PlanningError(`no URL for shard ${e.shardId} of node ${manifest.node}`, {
          shardId: e.shardId,
          node: manifest.node,
        });
      }
      return { ...e, url };
    }),
  };
}

export interface StagingProgress {
  totalShards: number;
  doneShards: number;
  totalBytes: number;
  doneBytes: number;
  /** Shards still to copy, in plan order: a re-run copies exactly these. */
  pendingShardIds: string[];
  /** Completed ids that are not in this plan (a different plan's leftovers): reported, never counted. */
  unknownIds: string[];
}

/** Which shards are finished, from the ids that copy activities reported as verified. Order and duplicates don't matter. */
export function stagingProgress(plan: ShardPlan, completedIds: Iterable<string>): StagingProgress {
  const done = new Set(completedIds);
  const known = new Set<string>();
  const pending: string[] = [];
  let doneBytes = 0;
  let doneShards = 0;
  for (const s of plan.shards) {
    known.add(s.id);
    if (done.has(s.id)) {
      doneShards++;
      doneBytes += s.bytes;
    } else {
      pending.push(s.id);
    }
  }
  const unknownIds = [...done].filter((id) => !known.has(id)).sort();
  const shardBytes = plan.shards.reduce((sum, s) => sum + s.bytes, 0);
  return {
    totalShards: plan.shards.length,
    doneShards,
    totalBytes: shardBytes,
    doneBytes,
    pendingShardIds: pending,
    unknownIds,
  };
}
