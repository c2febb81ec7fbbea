/**
 * Azure's facts about the Batch account, as the control plane reads them (shared/adapters/batch/facts.ts): the VM sizes the
 * region offers for Batch (Location_ListSupportedVirtualMachineSkus), the supported images and their node agent
 * SKUs (Account_ListSupportedImages), and the account's quotas (BatchAccount_Get). Pure: matching a job's pool
 * against them (with the nearest valid choices), turning the API shapes into these, and the quota admission keeps.
 *
 * When the account cannot be asked (`explain --offline`, or a deployment without the management plane for sizes),
 * {@link offlineFacts} is the built-in table of shared/core/planning/vmSizes.ts, marked `offline`: it knows cores and
 * families but not what the region offers, so nothing is refused on its word.
 */
import { listedVmSizes } from './vmSizes';

export interface FactSize {
  name: string;
  /** The quota family (dedicatedCoreQuotaPerVMFamily's name). */
  family: string;
  /** vCPUs counted against quota. */
  vCPUs: number;
  memoryGiB?: number;
  gpus?: number;
  rdma?: boolean;
}

export interface FactImage {
  publisher: string;
  offer: string;
  sku: string;
  nodeAgentSku: string;
  osType?: string;
  /** When Batch stops accepting new pools with it (ISO), if announced. */
  endOfLife?: string;
}

export interface FactQuota {
  /** Dedicated cores of the account. */
  dedicatedCores?: number;
  lowPriorityCores?: number;
  /** Dedicated cores per VM family. */
  families: Record<string, number>;
  /** Whether the per-family quota is enforced (false: only the total limits). */
  familiesEnforced: boolean;
  pools?: number;
  activeJobs?: number;
}

export interface AzureFacts {
  /** `account`: read from the Batch account; `offline`: the built-in table, which cannot refuse anything. */
  source: 'account' | 'offline';
  /** The Batch account they were read from (BATCH_ACCOUNTS name), when known. */
  account?: string;
  /** When each part was read (ISO), for the explain document and the cache. */
  fetchedAt?: { sizes?: string; images?: string; quota?: string };
  /** The region, when known (the sizes are that region's). */
  location?: string;
  /** Undefined: not known (nothing is checked against it). */
  sizes?: FactSize[];
  images?: FactImage[];
  quota?: FactQuota;
}

export interface FactIssue {
  path: string[];
  message: string;
}

/** The pool part of a job spec these facts check. */
export interface PoolFactsInput {
  poolId?: string;
  vmSize?: string;
  image?: { publisher: string; offer: string; sku: string };
  customImageId?: string;
  nodeAgentSku?: string;
}

const lc = (s: string) => s.trim().toLowerCase();

/** Levenshtein distance (insert, delete, substitute: 1 each). */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

/** The letters that name a size's series ("hb" in Standard_HB120rs_v3), to prefer the same series in suggestions. */
function seriesOf(name: string): string {
  return /^(?:standard_)?([a-z]+)/i.exec(name.trim())?.[1]?.toLowerCase() ?? '';
}

/**
 * The `count` nearest names to `wanted`: by edit distance without the "Standard_" prefix, the same series first on
 * a tie, then by name (deterministic).
 */
export function nearest(wanted: string, names: readonly string[], count = 3): string[] {
  const key = (s: string) => lc(s).replace(/^standard_/, '');
  const w = key(wanted);
  const series = seriesOf(wanted);
  return [...new Set(names)]
    .map((n) => ({ n, d: editDistance(w, key(n)), same: seriesOf(n) === series ? 0 : 1 }))
    .sort((a, b) => a.d - b.d || a.same - b.same || a.n.localeCompare(b.n))
    .slice(0, count)
    .map((x) => x.n);
}

const urn = (i: { publisher: string; offer: string; sku: string }) => `${i.publisher}:${i.offer}:${i.sku}`;

/** The size of this name in the facts (Batch compares case-insensitively), or undefined. */
export function factSize(facts: AzureFacts, vmSize: string): FactSize | undefined {
  return facts.sizes?.find((s) => lc(s.name) === lc(vmSize));
}

/**
 * What Batch would refuse about this pool, with the field path and the nearest valid choices: a size the region does
 * not offer, an image Batch does not support, an image with another node agent SKU, an unknown agent SKU. A reused
 * pool (poolId) is not checked (it exists already). Offline facts refuse nothing.
 */
export function checkPoolFacts(facts: AzureFacts, pool: PoolFactsInput): FactIssue[] {
  if (facts.source !== 'account' || pool.poolId !== undefined) return [];
  const issues: FactIssue[] = [];
  const where = facts.location ? ` in ${facts.location}` : '';
  if (facts.sizes && pool.vmSize !== undefined && !factSize(facts, pool.vmSize)) {
    const near = nearest(
      pool.vmSize,
      facts.sizes.map((s) => s.name),
    );
    issues.push({ path: ['pool', 'vmSize'], message: `${pool.vmSize} is not a VM size the Batch account offers${where}; did you mean ${near.join(', ')}?` });
  }
  if (facts.images && pool.nodeAgentSku !== undefined) {
    const agents = [...new Set(facts.images.map((i) => i.nodeAgentSku))];
    const agent = pool.nodeAgentSku;
    if (pool.image) {
      const image = pool.image;
      const matching = facts.images.filter((i) => lc(i.publisher) === lc(image.publisher) && lc(i.offer) === lc(image.offer) && lc(i.sku) === lc(image.sku));
      if (matching.length === 0) {
        const byUrn = new Map(facts.images.map((i) => [urn(i), i]));
        const near = nearest(urn(image), [...byUrn.keys()]);
        issues.push({
          path: ['pool', 'image'],
          message: `${urn(image)} is not an image the Batch account supports; did you mean ${near.map((u) => `${u} (${byUrn.get(u)?.nodeAgentSku})`).join(', ')}?`,
        });
      } else if (!matching.some((i) => lc(i.nodeAgentSku) === lc(agent))) {
        issues.push({
          path: ['pool', 'nodeAgentSku'],
          message: `the image ${urn(image)} needs the node agent SKU ${[...new Set(matching.map((i) => i.nodeAgentSku))].join(' or ')}, not "${agent}"`,
        });
      }
    } else if (!agents.some((a) => lc(a) === lc(agent))) {
      issues.push({
        path: ['pool', 'nodeAgentSku'],
        message: `"${agent}" is not a node agent SKU of the Batch account; did you mean ${nearest(agent, agents).join(', ')}?`,
      });
    }
  }
  return issues;
}

/** A virtualMachineSkus entry (name, familyName, capabilities as strings) as a size. */
export function sizeFromSku(sku: { name?: string; familyName?: string; capabilities?: { name?: string; value?: string }[] }): FactSize | undefined {
  if (!sku.name) return undefined;
  const cap = new Map((sku.capabilities ?? []).map((c) => [c.name ?? '', c.value ?? '']));
  const num = (k: string) => (cap.has(k) && Number.isFinite(Number(cap.get(k))) ? Number(cap.get(k)) : undefined);
  const rdma = cap.get('RdmaEnabled');
  return {
    name: sku.name,
    family: sku.familyName ?? '',
    vCPUs: num('vCPUs') ?? 0,
    memoryGiB: num('MemoryGB'),
    gpus: num('GPUs'),
    rdma: rdma === undefined ? undefined : lc(rdma) === 'true',
  };
}

/** An Account_ListSupportedImages entry as an image (only marketplace references have publisher/offer/sku). */
export function imageFromInfo(info: {
  nodeAgentSKUId?: string;
  osType?: string;
  batchSupportEndOfLife?: Date | string;
  imageReference?: { publisher?: string; offer?: string; sku?: string };
}): FactImage | undefined {
  const r = info.imageReference;
  if (!r?.publisher || !r.offer || !r.sku || !info.nodeAgentSKUId) return undefined;
  const eol = info.batchSupportEndOfLife;
  return {
    publisher: r.publisher,
    offer: r.offer,
    sku: r.sku,
    nodeAgentSku: info.nodeAgentSKUId,
    osType: info.osType,
    ...(eol ? { endOfLife: typeof eol === 'string' ? eol : eol.toISOString() } : {}),
  };
}

/** The quota fields of a BatchAccount (the management plane's account GET). */
export function quotaFromAccount(a: {
  dedicatedCoreQuota?: number;
  lowPriorityCoreQuota?: number;
  dedicatedCoreQuotaPerVMFamily?: { name?: string; coreQuota?: number }[];
  dedicatedCoreQuotaPerVMFamilyEnforced?: boolean;
  poolQuota?: number;
  activeJobAndJobScheduleQuota?: number;
}): FactQuota {
  const families: Record<string, number> = {};
  for (const f of a.dedicatedCoreQuotaPerVMFamily ?? []) if (f.name && typeof f.coreQuota === 'number') families[f.name] = f.coreQuota;
  return {
    dedicatedCores: a.dedicatedCoreQuota,
    lowPriorityCores: a.lowPriorityCoreQuota,
    families,
    familiesEnforced: a.dedicatedCoreQuotaPerVMFamilyEnforced ?? true,
    pools: a.poolQuota,
    activeJobs: a.activeJobAndJobScheduleQuota,
  };
}

export interface CoreQuota {
  total?: number;
  families: Readonly<Record<string, number>>;
}

/**
 * The core quota admission keeps: the account's (per family only when the account enforces it), lowered by the
 * deployment's ADMISSION_CORE_QUOTA where that names a lower number (a deployment may keep below the account, e.g.
 * to leave room for other users); without the account's, ADMISSION_CORE_QUOTA alone.
 */
export function effectiveCoreQuota(live: FactQuota | undefined, configured: CoreQuota | undefined): CoreQuota {
  if (!live) return { total: configured?.total, families: { ...(configured?.families ?? {}) } };
  const min = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.min(a, b));
  const families: Record<string, number> = live.familiesEnforced ? { ...live.families } : {};
  for (const [name, cores] of Object.entries(configured?.families ?? {})) families[name] = min(families[name], cores) as number;
  return { total: min(live.dedicatedCores, configured?.total), families };
}

/**
 * With several Batch accounts (BATCH_ACCOUNTS, home first): a pool is valid when one account offers it, since
 * admission places the job only on an account that does (placement.ts, `vmSizes`). `offeredBy` is the first such
 * account's facts; when none does, the home account's issues, each saying that no other account offers it either.
 */
export function checkPoolFactsOnAny(all: readonly AzureFacts[], pool: PoolFactsInput): { issues: FactIssue[]; offeredBy?: AzureFacts } {
  if (all.length === 0) return { issues: [] };
  const checked = all.map((facts) => ({ facts, issues: checkPoolFacts(facts, pool) }));
  const ok = checked.find((c) => c.issues.length === 0);
  if (ok) return { issues: [], offeredBy: ok.facts };
  if (all.length === 1) return { issues: checked[0].issues };
  const others = all
    .slice(1)
    .map((f) => `${f.account ?? '?'}${f.location ? ` (${f.location})` : ''}`)
    .join(', ');
  return {
    issues: checked[0].issues.map((i) => ({ ...i, message: `${i.message} No other Batch account of the deployment (${others}) can run this pool either.` })),
  };
}

/** The built-in table as facts, marked offline: sizes with cores and families, no images, no quota. */
export function offlineFacts(): AzureFacts {
  return { source: 'offline', sizes: listedVmSizes().map(({ name, cores, family }) => ({ name, family, vCPUs: cores })) };
}

/** What the explain document says about the facts a pool was checked against (ExplainDocument pool.facts). */
export function factsSummary(
  facts: AzureFacts,
  vmSize: string | undefined,
  now?: number,
): {
  source: AzureFacts['source'];
  account: string | null;
  location: string | null;
  readAt: { images: string | null; sizes: string | null; quota: string | null };
  ageSeconds: { images: number | null; sizes: number | null; quota: number | null };
  vmSize: { name: string; family: string; vCPUs: number; memoryGiB: number | null; gpus: number | null; rdma: boolean | null } | null;
} {
  const size = vmSize === undefined ? undefined : factSize(facts, vmSize);
  const read = facts.fetchedAt ?? {};
  // How old each part is: read once for every instance (the AccountFacts table), so it can be older than this process.
  const age = (iso: string | undefined) => (iso === undefined || now === undefined ? null : Math.max(0, Math.floor((now - Date.parse(iso)) / 1000)));
  return {
    source: facts.source,
    account: facts.account ?? null,
    location: facts.location ?? null,
    readAt: { images: read.images ?? null, sizes: read.sizes ?? null, quota: read.quota ?? null },
    ageSeconds: { images: age(read.images), sizes: age(read.sizes), quota: age(read.quota) },
    vmSize: size
      ? { name: size.name, family: size.family, vCPUs: size.vCPUs, memoryGiB: size.memoryGiB ?? null, gpus: size.gpus ?? null, rdma: size.rdma ?? null }
      : null,
  };
}
