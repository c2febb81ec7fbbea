/**
 * Reads the Batch account's facts and keeps them with their time: the supported images and node agent SKUs (data
 * plane, @azure/batch `account.listSupportedImages`), and, when the deployment has the management plane
 * (POOL_IDENTITY_*: shared/adapters/batch/armClient.ts), the account's quotas (@azure/arm-batch `batchAccountOperations.get`)
 * and the VM sizes its region offers (`location.listSupportedVirtualMachineSkus`, for BATCH_LOCATION).
 *
 * Cached per process and in the AccountFacts table of host storage (shared/adapters/batch/factsStore.ts), with the time each
 * part was read: quotas for FACTS_QUOTA_TTL_MINUTES, sizes and images for FACTS_CATALOG_TTL_MINUTES. A read
 * that fails keeps the last value it had (stale but real); a part never read is undefined, and nothing is checked
 * against an unknown part (shared/core/planning/azureFacts.ts). The matching itself is pure and lives there.
 */
import type { FactsConfig } from '../config';
import { imageFromInfo, quotaFromAccount, sizeFromSku, type AzureFacts, type FactImage, type FactQuota, type FactSize } from '../../core/planning/azureFacts';
import type { ArmBatchContext } from './armClient';
import type { BatchContext } from './client';
import { collectPages } from './common';
import type { FactPart, FactsPersistence, KeptFact } from './factsStore';
import { callWithRetry } from './retry';

export async function readSupportedImages(ctx: BatchContext): Promise<FactImage[]> {
  const what = { operation: 'account.listSupportedImages', resource: 'supportedimages' };
  const infos = await collectPages(
    ctx.retry,
    what,
    () => ctx.client.account.listSupportedImages(),
    (link) => ctx.client.account.listSupportedImagesNext(link),
  );
  return infos.map(imageFromInfo).filter((i): i is FactImage => i !== undefined);
}

export async function readRegionSizes(arm: ArmBatchContext, location: string): Promise<FactSize[]> {
  return callWithRetry(arm.retry, { operation: 'location.listSupportedVirtualMachineSkus', resource: `locations/${location}` }, async () => {
    const sizes: FactSize[] = [];
    for await (const sku of arm.client.location.listSupportedVirtualMachineSkus(location)) {
      const size = sizeFromSku(sku);
      if (size) sizes.push(size);
    }
    return sizes;
  });
}

export async function readAccountQuota(arm: ArmBatchContext): Promise<FactQuota> {
  const { resourceGroup, accountName } = arm.identity;
  const account = await callWithRetry(arm.retry, { operation: 'batchAccount.get', resource: `batchAccounts/${accountName}` }, () =>
    arm.client.batchAccountOperations.get(resourceGroup, accountName),
  );
  return quotaFromAccount(account);
}

export interface FactsSources {
  batch: BatchContext;
  /** Undefined: no management plane (no quotas, no sizes). */
  arm?: ArmBatchContext;
  config: FactsConfig;
  /** The Batch account's name: the facts' key in the shared table and what the dry run names. */
  account?: string;
  /**
   * The shared table (shared/adapters/batch/factsStore.ts): a part this process has not got, or has expired, is taken from the
   * table when the table's copy is still within its time to live, and only otherwise read from the account (and
   * written back). Undefined: kept per process only.
   */
  store?: FactsPersistence;
  now?: () => number;
  /** Called when a read fails (the cache keeps its last value). */
  onError?: (part: FactPart, err: unknown) => void;
  /** Called when the shared table cannot be read or written (the account is read, or its value kept, regardless). */
  onStoreError?: (part: FactPart, err: unknown) => void;
}

/** The account's facts, cached per part with its own time to live, in this process and in the shared table. */
export class FactsCache {
  private kept: Partial<Record<FactPart, KeptFact<unknown>>> = {};
  /** One read per part at a time: concurrent intakes of one instance wait for the same read. */
  private inflight: Partial<Record<FactPart, Promise<KeptFact<unknown> | undefined>>> = {};

  constructor(private readonly src: FactsSources) {}

  private now(): number {
    return (this.src.now ?? Date.now)();
  }

  private fresh(kept: KeptFact<unknown> | undefined, ttlMs: number): boolean {
    return kept !== undefined && this.now() - kept.at < ttlMs;
  }

  private refresh<T>(part: FactPart, ttlMs: number, read: () => Promise<T>): Promise<KeptFact<T> | undefined> {
    const mine = this.kept[part] as KeptFact<T> | undefined;
    if (this.fresh(mine, ttlMs)) return Promise.resolve(mine);
    const running = this.inflight[part] as Promise<KeptFact<T> | undefined> | undefined;
    if (running) return running;
    const next = this.load(part, mine, ttlMs, read).finally(() => {
      delete this.inflight[part];
    });
    this.inflight[part] = next;
    return next;
  }

  private async load<T>(part: FactPart, mine: KeptFact<T> | undefined, ttlMs: number, read: () => Promise<T>): Promise<KeptFact<T> | undefined> {
    const { store, account } = this.src;
    let shared: KeptFact<T> | undefined;
    if (store && account) {
      try {
        shared = await store.get<T>(account, part);
      } catch (err) {
        this.src.onStoreError?.(part, err);
      }
      if (shared && this.fresh(shared, ttlMs)) return (this.kept[part] = shared);
    }
    let got: KeptFact<T>;
    try {
      got = { value: await read(), at: this.now() };
    } catch (err) {
      this.src.onError?.(part, err);
      // Stale but real: the newer of this process's copy and the table's.
      const last = mine && shared ? (mine.at >= shared.at ? mine : shared) : (mine ?? shared);
      if (last) this.kept[part] = last;
      return last;
    }
    this.kept[part] = got;
    if (store && account) {
      try {
        await store.put(account, part, got);
      } catch (err) {
        this.src.onStoreError?.(part, err);
      }
    }
    return got;
  }

  /** Sizes, images and quotas as known now (reading what is missing or expired). */
  async facts(): Promise<AzureFacts> {
    const { batch, arm, config, account } = this.src;
    const location = config.location;
    const [images, sizes, quota] = await Promise.all([
      this.refresh('images', config.catalogTtlMs, () => readSupportedImages(batch)),
      arm && location ? this.refresh('sizes', config.catalogTtlMs, () => readRegionSizes(arm, location)) : Promise.resolve(undefined),
      arm ? this.refresh('quota', config.quotaTtlMs, () => readAccountQuota(arm)) : Promise.resolve(undefined),
    ]);
    const iso = (k?: KeptFact<unknown>) => (k ? new Date(k.at).toISOString() : undefined);
    return {
      source: 'account',
      ...(account ? { account } : {}),
      ...(location ? { location } : {}),
      fetchedAt: { images: iso(images), sizes: iso(sizes), quota: iso(quota) },
      ...(images ? { images: images.value } : {}),
      ...(sizes ? { sizes: sizes.value } : {}),
      ...(quota ? { quota: quota.value } : {}),
    };
  }

  /** The account's quota only (admission), read when missing or expired. */
  async accountQuota(): Promise<FactQuota | undefined> {
    const { arm, config } = this.src;
    if (!arm) return undefined;
    return (await this.refresh('quota', config.quotaTtlMs, () => readAccountQuota(arm)))?.value;
  }
}
