/**
 * Reads the Batch account's facts and keeps them with their time: the supported images and node agent SKUs (data
 * plane, @azure/batch `account.listSupportedImages`), and, when the deployment has the management plane
 * (POOL_IDENTITY_*: shared/batch/armClient.ts), the account's quotas (@azure/arm-batch `batchAccountOperations.get`)
 * and the VM sizes its region offers (`location.listSupportedVirtualMachineSkus`, for BATCH_LOCATION).
 *
 * Cached per process: quotas for FACTS_QUOTA_TTL_MINUTES, sizes and images for FACTS_CATALOG_TTL_MINUTES. A read
 * that fails keeps the last value it had (stale but real); a part never read is undefined, and nothing is checked
 * against an unknown part (shared/planning/azureFacts.ts). The matching itself is pure and lives there.
 */
import type { FactsConfig } from '../config';
import { imageFromInfo, quotaFromAccount, sizeFromSku, type AzureFacts, type FactImage, type FactQuota, type FactSize } from '../planning/azureFacts';
import type { ArmBatchContext } from './armClient';
import type { BatchContext } from './client';
import { collectPages } from './common';
import { callWithRetry } from './retry';

export async function readSupportedImages(ctx: BatchContext): Promise<FactImage[]> {
  const what = { operation: 'account.listSupportedImages', resource: 'supportedimages' };
  const infos = await collectPages(ctx.retry, what, () => ctx.client.account.listSupportedImages(), (link) => ctx.client.account.listSupportedImagesNext(link));
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
  now?: () => number;
  /** Called when a read fails (the cache keeps its last value). */
  onError?: (part: 'images' | 'sizes' | 'quota', err: unknown) => void;
}

interface Kept<T> {
  value: T;
  at: number;
}

/** The account's facts, cached per part with its own time to live. */
export class FactsCache {
  private images?: Kept<FactImage[]>;
  private sizes?: Kept<FactSize[]>;
  private quota?: Kept<FactQuota>;

  constructor(private readonly src: FactsSources) {}

  private now(): number {
    return (this.src.now ?? Date.now)();
  }

  private async refresh<T>(part: 'images' | 'sizes' | 'quota', kept: Kept<T> | undefined, ttlMs: number, read: () => Promise<T>): Promise<Kept<T> | undefined> {
    if (kept && this.now() - kept.at < ttlMs) return kept;
    try {
      return { value: await read(), at: this.now() };
    } catch (err) {
      this.src.onError?.(part, err);
      return kept;
    }
  }

  /** Sizes, images and quotas as known now (reading what is missing or expired). */
  async facts(): Promise<AzureFacts> {
    const { batch, arm, config } = this.src;
    const location = config.location;
    const [images, sizes, quota] = await Promise.all([
      this.refresh('images', this.images, config.catalogTtlMs, () => readSupportedImages(batch)),
      arm && location ? this.refresh('sizes', this.sizes, config.catalogTtlMs, () => readRegionSizes(arm, location)) : Promise.resolve(undefined),
      arm ? this.refresh('quota', this.quota, config.quotaTtlMs, () => readAccountQuota(arm)) : Promise.resolve(undefined),
    ]);
    this.images = images;
    this.sizes = sizes;
    this.quota = quota;
    const iso = (k?: Kept<unknown>) => (k ? new Date(k.at).toISOString() : undefined);
    return {
      source: 'account',
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
    this.quota = await this.refresh('quota', this.quota, config.quotaTtlMs, () => readAccountQuota(arm));
    return this.quota?.value;
  }
}
