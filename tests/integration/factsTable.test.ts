/**
 * The Batch account's facts shared through host storage (shared/adapters/batch/factsStore.ts, docs/azure-facts.md): several
 * facts caches (what several Functions instances, or one after a cold start, hold) over one real Azurite table and
 * one Batch emulator with its management plane. The account is read once per time to live, whichever instance asks;
 * the others take the table's copy with its read time. Counted where the requests arrive (the emulator's exchanges).
 */
import type { AccessToken, TokenCredential } from '@azure/core-auth';
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { startBatchEmulator, type BatchEmulatorHandle, type ExchangeRecord } from '../../local/batch';
import { startIdentityService, type IdentityService } from '../../local/identity';
import { localIdentityWiring, type LocalIdentityWiring } from '../../local/supervisor/identityWiring';
import { loadConfig, type FactsConfig } from '../../shared/adapters/config';
import * as batch from '../../shared/adapters/batch';
import { FactsCache } from '../../shared/adapters/batch/facts';
import { FactsStore, type FactsPersistence } from '../../shared/adapters/batch/factsStore';
import { factsSummary } from '../../shared/core/planning/azureFacts';

let azurite: AzuriteHandle;
let identity: IdentityService;
let wiring: LocalIdentityWiring;
let emu: BatchEmulatorHandle;
let arm: batch.ArmBatchContext;
let data: batch.BatchContext;
const armCalls: ExchangeRecord[] = [];
const dataCalls: ExchangeRecord[] = [];
let tables = 0;

const MIN = 60_000;
const config: FactsConfig = { check: true, location: 'westeurope', quotaTtlMs: 5 * MIN, catalogTtlMs: 24 * 60 * MIN, coreQuotaConfigured: false };

beforeAll(async () => {
  azurite = await startAzurite();
  identity = await startIdentityService();
  wiring = localIdentityWiring(identity);
  emu = await startBatchEmulator({
    timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 },
    identity: wiring.nodeIdentities,
    arm: wiring.arm,
    quota: { dedicatedCores: 480, pools: 20 },
    onExchange: (ex) => dataCalls.push(ex),
    onArmExchange: (ex) => armCalls.push(ex),
  });
  const credential: TokenCredential = {
    getToken: async (): Promise<AccessToken> => ({
      token: await identity.resourceToken('https://management.azure.com/', { identity: wiring.app }),
      expiresOnTimestamp: Date.now() + 3_600_000,
    }),
  };
  const cfg = loadConfig({
    BATCH_ACCOUNT_URL: emu.url,
    BATCH_ACCOUNT_NAME: emu.accountName,
    BATCH_ACCOUNT_KEY: emu.accountKey,
    AzureWebJobsStorage: 'UseDevelopmentStorage=true',
    STAGING_ACCOUNTS: 'devstoreaccount1',
    BATCH_SUBSCRIPTION_ID: wiring.arm.subscriptionId,
    BATCH_RESOURCE_GROUP: wiring.arm.resourceGroup,
    POOL_IDENTITY_RESOURCE_ID: wiring.pool.resourceId,
    POOL_IDENTITY_CLIENT_ID: wiring.pool.clientId,
    ARM_ENDPOINT: emu.armUrl as string,
  });
  const policy = { maxAttempts: 1, initialMs: 20, maxMs: 200, multiplier: 2, jitter: 0.5 };
  arm = batch.createArmBatchContext(cfg, { credential, policy }) as batch.ArmBatchContext;
  data = batch.createBatchContext(cfg, { policy });
}, 60_000);

afterAll(async () => {
  await emu?.stop();
  await identity?.stop();
  await azurite?.stop();
});

const quotaReads = () => armCalls.filter((c) => c.method === 'GET' && /\/batchAccounts\/[^/]+$/i.test(c.path)).length;
const sizeReads = () => armCalls.filter((c) => /\/virtualMachineSkus$/i.test(c.path)).length;
const imageReads = () => dataCalls.filter((c) => /\/supportedimages$/i.test(c.path)).length;

async function freshTable(): Promise<FactsStore> {
  const store = FactsStore.fromConnectionString(azurite.connectionString(), `AccountFacts${process.pid}x${++tables}`);
  await store.ensureTable();
  return store;
}

/** One Functions instance's cache (its own memory), over the shared table. */
function instance(store: FactsPersistence | undefined, now: () => number, onStoreError?: (err: unknown) => void): FactsCache {
  return new FactsCache({
    batch: data,
    arm,
    config,
    account: emu.accountName,
    now,
    ...(store ? { store } : {}),
    ...(onStoreError ? { onStoreError: (_p, e) => onStoreError(e) } : {}),
  });
}

describe('facts shared through the AccountFacts table', () => {
  it('reads the account once for several instances and intakes; the others take the table copy with its read time', async () => {
    const store = await freshTable();
    let clock = Date.parse('2026-11-27T10:00:00Z');
    const now = () => clock;
    const before = { q: quotaReads(), s: sizeReads(), i: imageReads() };
    const first = await instance(store, now).facts();
    const once = { q: quotaReads() - before.q, s: sizeReads() - before.s, i: imageReads() - before.i };
    expect(once.q).toBe(1);
    expect(once.s).toBeGreaterThanOrEqual(1);
    expect(once.i).toBeGreaterThanOrEqual(1);

    clock += 30_000;
    // Three more instances (a cold start each), several intakes and admissions each: no further read of the account.
    for (let n = 0; n < 3; n++) {
      const cache = instance(store, now);
      const [a, b] = await Promise.all([cache.facts(), cache.facts()]);
      await cache.accountQuota();
      expect(a).toEqual(first);
      expect(b.fetchedAt).toEqual(first.fetchedAt);
    }
    expect({ q: quotaReads() - before.q, s: sizeReads() - before.s, i: imageReads() - before.i }).toEqual(once);

    // The explain document's age is the table copy's, not the instance's.
    const summary = factsSummary(first, 'Standard_HB120rs_v3', clock);
    expect(summary.account).toBe(emu.accountName);
    expect(summary.ageSeconds).toEqual({ images: 30, sizes: 30, quota: 30 });
  });

  it('reads the quota again after its time to live, once for every instance, and sees the account change', async () => {
    const store = await freshTable();
    let clock = Date.parse('2026-11-27T11:00:00Z');
    const now = () => clock;
    const a = instance(store, now);
    expect((await a.facts()).quota?.dedicatedCores).toBe(480);
    emu.setQuota({ dedicatedCores: 96, pools: 20 });
    try {
      clock += 4 * MIN; // within the time to live: the table's copy
      const q0 = quotaReads();
      const s0 = sizeReads();
      expect((await instance(store, now).accountQuota())?.dedicatedCores).toBe(480);
      expect(quotaReads()).toBe(q0);
      clock += 2 * MIN; // past it: one read, shared by the next instances
      expect((await instance(store, now).accountQuota())?.dedicatedCores).toBe(96);
      expect((await instance(store, now).facts()).quota?.dedicatedCores).toBe(96);
      expect((await a.accountQuota())?.dedicatedCores).toBe(96);
      expect(quotaReads()).toBe(q0 + 1);
      expect(sizeReads()).toBe(s0); // sizes keep their own, longer time to live
    } finally {
      emu.setQuota({ dedicatedCores: 480, pools: 20 });
    }
  });

  it('keeps working when the table cannot be used: the account is read, and the failure reported', async () => {
    const broken: FactsPersistence = {
      get: () => Promise.reject(new Error('table unreachable')),
      put: () => Promise.reject(new Error('table unreachable')),
    };
    const errors: unknown[] = [];
    const q0 = quotaReads();
    const facts = await instance(broken, Date.now, (e) => errors.push(e)).facts();
    expect(facts.quota?.dedicatedCores).toBe(480);
    expect(facts.sizes?.length).toBeGreaterThan(0);
    expect(quotaReads()).toBe(q0 + 1);
    expect(errors.length).toBeGreaterThanOrEqual(2);
  });

  it('stores a part with its read time, split over properties when large', async () => {
    const store = await freshTable();
    const sizes = Array.from({ length: 3000 }, (_, i) => ({ name: `Standard_X${i}`, family: 'standardXFamily', vCPUs: i + 1, memoryGiB: 8 }));
    await store.put('Acct', 'sizes', { value: sizes, at: Date.parse('2026-11-27T12:00:00Z') });
    const back = await store.get<typeof sizes>('acct', 'sizes');
    expect(back?.at).toBe(Date.parse('2026-11-27T12:00:00Z'));
    expect(back?.value).toEqual(sizes); // more than one 64 KiB property's worth, split and joined
    expect(await store.get('acct', 'quota')).toBeUndefined();
  });
});
