/**
 * The sweep's singleton: a blob lease in host storage. Whoever holds the lease on `ops/sweep.lock` sweeps;
 * a run that finds it taken skips (logs and returns). The lease is renewed while the run lasts and released
 * at its end, so a crashed run blocks the next one for at most one lease period. This works the same in Azure
 * (several instances of the Function App) and locally (tests starting two sweeps at once).
 */
import { RestError, type BlobServiceClient } from '@azure/storage-blob';

export const LEASE_CONTAINER = 'ops';
export const LEASE_BLOB = 'sweep.lock';
const LEASE_SECONDS = 60;
const RENEW_EVERY_MS = 20_000;

export interface HeldLease {
  leaseId: string;
  release(): Promise<void>;
}

function status(err: unknown): number | undefined {
  return err instanceof RestError ? err.statusCode : undefined;
}

/** Takes the lease, or returns undefined when another run holds it. */
export async function tryAcquireSweepLease(service: BlobServiceClient): Promise<HeldLease | undefined> {
  const container = service.getContainerClient(LEASE_CONTAINER);
  await container.createIfNotExists();
  const blob = container.getBlockBlobClient(LEASE_BLOB);
  try {
    await blob.upload('', 0, { conditions: { ifNoneMatch: '*' } });
  } catch (err) {
    // 409/412: it exists already (possibly leased by the other run): that is the normal case.
    if (status(err) !== 409 && status(err) !== 412) throw new Error(`sweep lease: cannot create ${LEASE_CONTAINER}/${LEASE_BLOB}: ${(err as Error).message}`);
  }
  const lease = blob.getBlobLeaseClient();
  try {
    await lease.acquireLease(LEASE_SECONDS);
  } catch (err) {
    if (status(err) === 409) return undefined;
    throw new Error(`sweep lease: cannot acquire ${LEASE_CONTAINER}/${LEASE_BLOB}: ${(err as Error).message}`);
  }
  let renewing: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    renewing = lease.renewLease().catch(() => undefined);
  }, RENEW_EVERY_MS);
  timer.unref();
  return {
    leaseId: lease.leaseId,
    async release() {
      clearInterval(timer);
      await renewing;
      await lease.releaseLease().catch(() => undefined);
    },
  };
}
