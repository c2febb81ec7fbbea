/**
 * The composition root: the adapters the app uses (configuration, the Batch client, the job store, storage
 * accounts), built once per process from app settings and shared by the HTTP/queue/timer functions and the
 * activities. Nothing here knows whether it runs in Azure or on the local stack: only the settings differ.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { DefaultAzureCredential } from '@azure/identity';
import { priceRegionOf } from './core/config/batchAccounts';
import { loadConfig, type AppConfig, type BatchAccountRef, type StorageAccountRef } from './adapters/config';
import { createArmBatchContext, createBatchContext, type ArmBatchContext, type BatchContext } from './adapters/batch';
import { JobStore, type JobEvent } from './adapters/state';
import { blobAccount, type BlobAccount } from './adapters/storage/clients';
import { dataAccessPolicy, dataAccessRefusal, outputsSasScope } from './core/intake/dataAccess';
import { createTokenValidator, type TokenValidator } from './adapters/auth';
import { queueAnnouncer, type EventAnnouncer } from './adapters/events/announcer';
import { DeliveryStore } from './adapters/events/deliveryStore';
import type { DeliveryDeps } from './adapters/events/delivery';
import { eventGridEndpoint } from './adapters/events/eventGridSender';
import { webhookEndpoint } from './adapters/events/webhookSender';
import { AdmissionStore } from './adapters/scheduling/admissionStore';
import { DependentsStore } from './adapters/scheduling/dependentsStore';
import type { AdmissionLimits } from './core/scheduling/admission';
import type { SchedulingPolicy } from './core/scheduling/intake';
import type { AdmissionDeps } from './adapters/scheduling/admissionService';
import { inspectPool } from './adapters/batch/pools';
import type { ImageEvidenceDeps } from './adapters/registry/evidence';
import type { PoolCaller, PoolGate, PoolLookup } from './core/intake/poolAccess';
import { PriceStore } from './adapters/ops/priceStore';
import { priceService, type PriceService } from './core/ops/priceService';
import { fetchNodePrices } from './adapters/ops/retailPricesClient';
import { FactsCache } from './adapters/batch/facts';
import { FactsStore, type FactsPersistence } from './adapters/batch/factsStore';
import { effectiveCoreQuota, type AzureFacts } from './core/planning/azureFacts';
import { placeJob, type Placement, type PlacementAccount } from './core/planning/placement';
import { loadsOf, placementJob } from './core/scheduling/admission';
import { demandOf, placementNeeds } from './core/scheduling/demand';
import type { JobSpec } from './core/spec/schema';

let config: AppConfig | undefined;
let batch: BatchContext | undefined;
let store: JobStore | undefined;
let tablesReady: Promise<void> | undefined;

export function appConfig(): AppConfig {
  return (config ??= loadConfig());
}

let validator: TokenValidator | undefined;

/** The bearer token validator (keys cached per process), or undefined when AUTH_ISSUER is not set. */
export function tokenValidator(): TokenValidator | undefined {
  const bearer = appConfig().auth.bearer;
  return bearer && (validator ??= createTokenValidator(bearer));
}

/**
 * The Batch account the current activity works on: a job placed on another account than the home one carries its
 * name in every activity input after admission (orchestrations/runtime/activityCalls.ts runs the handler inside
 * this scope), so every Batch call of that job goes to its account without each activity passing it along.
 */
const accountScope = new AsyncLocalStorage<string>();

/** Runs `fn` with `account` as the Batch account of every batchContext()/armBatchContext() call inside it. */
export function inBatchAccount<T>(account: string | undefined, fn: () => T): T {
  return account ? accountScope.run(account, fn) : fn();
}

/** A configured Batch account by name (undefined: the home account); throws for one the deployment does not list. */
export function batchAccountRef(name?: string): BatchAccountRef {
  const accounts = appConfig().batchAccounts;
  if (name === undefined) return accounts[0];
  const found = accounts.find((a) => a.name === name);
  if (!found) throw new Error(`Batch account "${name}" is not one of this deployment's accounts (BATCH_ACCOUNTS: ${accounts.map((a) => a.name).join(', ')})`);
  return found;
}

const batchByAccount = new Map<string, BatchContext>();

/** The data-plane client of the current account (the home account outside a placed job's activity). */
export function batchContext(): BatchContext {
  return batchContextFor(accountScope.getStore());
}

/** The data-plane client of one account: one per account, cached. */
export function batchContextFor(account?: string): BatchContext {
  const ref = batchAccountRef(account);
  if (ref.name === appConfig().batch.accountName) return (batch ??= createBatchContext(appConfig()));
  let ctx = batchByAccount.get(ref.name);
  if (!ctx) {
    ctx = createBatchContext({ ...appConfig(), batch: { accountUrl: ref.accountUrl, accountName: ref.name, auth: ref.auth } });
    batchByAccount.set(ref.name, ctx);
  }
  return ctx;
}

let armBatch: ArmBatchContext | undefined;
const armByAccount = new Map<string, ArmBatchContext>();

/** The Batch management plane of the current account, or undefined when the deployment has no pool identity (pools from the data plane). */
export function armBatchContext(): ArmBatchContext | undefined {
  return armBatchContextFor(accountScope.getStore());
}

/** The management plane of one account (where BATCH_ACCOUNTS says it sits; else beside the home account), cached. */
export function armBatchContextFor(account?: string): ArmBatchContext | undefined {
  const cfg = appConfig();
  if (!cfg.poolIdentity) return undefined;
  const ref = batchAccountRef(account);
  if (ref.name === cfg.batch.accountName && !ref.arm) return (armBatch ??= createArmBatchContext(cfg));
  let ctx = armByAccount.get(ref.name);
  if (!ctx) {
    const pi = cfg.poolIdentity;
    ctx = createArmBatchContext({
      ...cfg,
      poolIdentity: {
        ...pi,
        accountName: ref.name,
        subscriptionId: ref.arm?.subscriptionId ?? pi.subscriptionId,
        resourceGroup: ref.arm?.resourceGroup ?? pi.resourceGroup,
        armEndpoint: ref.arm?.endpoint ?? pi.armEndpoint,
      },
    }) as ArmBatchContext;
    armByAccount.set(ref.name, ctx);
  }
  return ctx;
}

/**
 * The value of a registry secret a job names by setting, for the server it is declared for (REGISTRY_CREDENTIALS);
 * anything else is refused. The value goes straight into a Batch request and nowhere else.
 */
export function registrySecret(server: string, setting: string): string {
  const found = appConfig().registryCredentials.find((c) => c.server === server.toLowerCase() && c.setting === setting);
  if (!found) throw new Error(`app setting ${setting} is not a registry credential of ${server} on this deployment (REGISTRY_CREDENTIALS)`);
  return found.secret;
}

/** The registry reads of the image evidence (shared/adapters/registry/evidence.ts) with this app's secrets and identity. */
export function imageEvidenceDeps(): ImageEvidenceDeps {
  return {
    secret: registrySecret,
    entraToken: async () => {
      const token = await (appCredential ??= new DefaultAzureCredential()).getToken(REGISTRY_TOKEN_SCOPE);
      if (!token) throw new Error('the app identity got no token for the registry');
      return token.token;
    },
  };
}

/** The audience ACR accepts for the Entra ID token of /oauth2/exchange. */
const REGISTRY_TOKEN_SCOPE = 'https://containerregistry.azure.net/.default';

/** The reads the pool-ownership decision needs: the pool's metadata (data plane) and a job row's owner. */
export function poolLookup(): PoolLookup {
  return {
    inspect: (poolId) => inspectPool(batchContext(), poolId),
    jobOwner: async (jobId) => (await (await jobStore()).get(jobId))?.owner,
  };
}

/** What the doors need to judge pool.poolId for `caller` on this deployment (shared/core/intake/poolAccess.ts). */
export function poolGate(caller: PoolCaller): PoolGate {
  return { caller, shared: appConfig().sharedPools, lookup: poolLookup() };
}

export async function jobStore(): Promise<JobStore> {
  const cfg = appConfig();
  if (!store) {
    const host = cfg.hostStorage;
    const announcer = eventAnnouncer();
    const options = announcer ? { onTransition: (event: JobEvent) => announceTransition(announcer, event) } : {};
    store =
      host.kind === 'connectionString'
        ? JobStore.fromConnectionString(host.connectionString, options)
        : JobStore.fromTableEndpoint(host.tableEndpoint, new DefaultAzureCredential(), options);
    tablesReady = store.ensureTables();
  }
  await tablesReady;
  return store;
}

let admission: { store: AdmissionStore; dependents: DependentsStore; ready: Promise<unknown> } | undefined;

/** The Admission table and the dependents index, in host storage beside the Jobs table (docs/scheduling.md). */
export async function schedulingStores(): Promise<{ admission: AdmissionStore; dependents: DependentsStore }> {
  if (!admission) {
    const host = appConfig().hostStorage;
    const stores =
      host.kind === 'connectionString'
        ? { store: AdmissionStore.fromConnectionString(host.connectionString), dependents: DependentsStore.fromConnectionString(host.connectionString) }
        : {
            store: AdmissionStore.fromTableEndpoint(host.tableEndpoint, new DefaultAzureCredential()),
            dependents: DependentsStore.fromTableEndpoint(host.tableEndpoint, new DefaultAzureCredential()),
          };
    admission = { ...stores, ready: Promise.all([stores.store.ensureTable(), stores.dependents.ensureTable()]) };
  }
  await admission.ready;
  return { admission: admission.store, dependents: admission.dependents };
}

/** What intake needs for the scheduling section: the deployment's queues and the dependents index. */
export async function schedulingPolicy(): Promise<SchedulingPolicy> {
  return { queues: appConfig().admission.queues.map((q) => q.name), dependents: (await schedulingStores()).dependents };
}

const factsCaches = new Map<string, FactsCache>();
let factsTable: { store: FactsStore; ready: Promise<void> } | undefined;

/**
 * The AccountFacts table in host storage, created on first use: every instance shares one read of each account's
 * facts per time to live (shared/adapters/batch/factsStore.ts). A failed create is retried on the next use.
 */
function sharedFacts(): FactsPersistence {
  const ready = async (): Promise<FactsStore> => {
    if (!factsTable) {
      const host = appConfig().hostStorage;
      const store =
        host.kind === 'connectionString'
          ? FactsStore.fromConnectionString(host.connectionString)
          : FactsStore.fromTableEndpoint(host.tableEndpoint, new DefaultAzureCredential());
      factsTable = { store, ready: store.ensureTable() };
    }
    const kept = factsTable;
    try {
      await kept.ready;
    } catch (err) {
      if (factsTable === kept) factsTable = undefined;
      throw err;
    }
    return kept.store;
  };
  return {
    get: async (account, part) => (await ready()).get(account, part),
    put: async (account, part, kept) => (await ready()).put(account, part, kept),
  };
}

/** The home Batch account's sizes, images and quotas, cached (shared/adapters/batch/facts.ts; docs/azure-facts.md). */
export function accountFacts(): FactsCache {
  return accountFactsFor();
}

/** One account's facts (its own region's sizes, its own quota), one cache per account. */
export function accountFactsFor(account?: string): FactsCache {
  const ref = batchAccountRef(account);
  let cache = factsCaches.get(ref.name);
  if (!cache) {
    const home = ref.name === appConfig().batch.accountName;
    const facts = appConfig().facts;
    const location = home ? facts.location : ref.location;
    cache = new FactsCache({
      batch: batchContextFor(ref.name),
      arm: armBatchContextFor(ref.name),
      config: { ...facts, ...(location ? { location } : {}) },
      account: ref.name,
      store: sharedFacts(),
      onError: (part, err) =>
        console.warn(`azure facts: reading the ${part} of Batch account ${ref.name} failed; keeping what was read before: ${(err as Error).message}`),
      onStoreError: (part, err) =>
        console.warn(`azure facts: the AccountFacts table could not be used for the ${part} of Batch account ${ref.name}: ${(err as Error).message}`),
    });
    factsCaches.set(ref.name, cache);
  }
  return cache;
}

/**
 * What validation checks pools against: each Batch account's facts, the home account first (a pool is valid when an
 * account it can be placed on offers it), or undefined when FACTS_CHECK is false.
 */
export function submissionFacts(): (() => Promise<AzureFacts[]>) | undefined {
  return appConfig().facts.check ? () => Promise.all(appConfig().batchAccounts.map((a) => accountFactsFor(a.name).facts())) : undefined;
}

/** Admission over the deployment's Admission table and limits (with the account's live quota). */
export async function admissionDeps(): Promise<AdmissionDeps> {
  return { store: (await schedulingStores()).admission, limits: await liveAdmissionLimits() };
}

/**
 * The limits with the Batch account's core quota (read through the management plane, cached FACTS_QUOTA_TTL_MINUTES),
 * lowered by ADMISSION_CORE_QUOTA where that is lower; without the management plane, or while the account cannot be
 * read, ADMISSION_CORE_QUOTA alone (shared/core/planning/azureFacts.ts effectiveCoreQuota).
 */
export async function liveAdmissionLimits(): Promise<AdmissionLimits> {
  const limits = admissionLimits();
  const cfg = appConfig();
  const configured = cfg.facts.coreQuotaConfigured ? cfg.admission.coreQuota : undefined;
  const live = await accountFacts().accountQuota();
  const coreQuota = effectiveCoreQuota(live, configured);
  if (cfg.batchAccounts.length < 2) return { ...limits, coreQuota };
  return { ...limits, coreQuota, accounts: await placementAccounts(configured) };
}

/**
 * Each account as placement weighs it: its live quota (its own facts cache) lowered by its `coreQuota` in
 * BATCH_ACCOUNTS (else by ADMISSION_CORE_QUOTA), its low-priority cores, region, nearby staging accounts, and the
 * prices of its price region that the NodePrices table holds (no price read here: unknown prices rank last).
 */
async function placementAccounts(configured: AdmissionLimits['coreQuota'] | undefined): Promise<PlacementAccount[]> {
  return Promise.all(
    appConfig().batchAccounts.map(async (ref): Promise<PlacementAccount> => {
      const live = await accountFactsFor(ref.name).accountQuota();
      const region = ref.priceRegion ?? ref.location;
      const prices = region ? await regionPrices(region) : undefined;
      const vmSizes = await offeredSizes(ref.name);
      return {
        name: ref.name,
        coreQuota: effectiveCoreQuota(live, ref.coreQuota ?? configured),
        ...(live?.lowPriorityCores !== undefined ? { lowPriorityCores: live.lowPriorityCores } : {}),
        ...(ref.location ? { region: ref.location } : {}),
        stagingAccounts: ref.stagingAccounts,
        ...(prices ? { prices } : {}),
        ...(vmSizes ? { vmSizes } : {}),
      };
    }),
  );
}

/**
 * The sizes an account's region offers (its facts, shared through the AccountFacts table), so placement never picks
 * an account that would refuse the pool; unknown (FACTS_CHECK=false, no management plane, unreadable): any.
 */
async function offeredSizes(account: string): Promise<ReadonlySet<string> | undefined> {
  if (!appConfig().facts.check) return undefined;
  const sizes = (
    await accountFactsFor(account)
      .facts()
      .catch(() => undefined)
  )?.sizes;
  return sizes && new Set(sizes.map((s) => s.name.toLowerCase()));
}

const PRICES_KEPT_MS = 5 * 60_000;
const regionPriceCache = new Map<string, { at: number; prices: Record<string, number> }>();

/** Dedicated prices per node-hour the NodePrices table holds for a region (read at most every 5 minutes). */
async function regionPrices(region: string): Promise<Record<string, number> | undefined> {
  const kept = regionPriceCache.get(region);
  if (kept && Date.now() - kept.at < PRICES_KEPT_MS) return kept.prices;
  try {
    const host = appConfig().hostStorage;
    const store =
      host.kind === 'connectionString'
        ? PriceStore.fromConnectionString(host.connectionString)
        : PriceStore.fromTableEndpoint(host.tableEndpoint, new DefaultAzureCredential());
    const prices: Record<string, number> = {};
    for (const p of await store.list(region)) if (p.dedicated !== undefined) prices[p.vmSize.toLowerCase()] = p.dedicated;
    regionPriceCache.set(region, { at: Date.now(), prices });
    return prices;
  } catch {
    return kept?.prices; // no table yet, or unreachable: placement goes on without prices
  }
}

/**
 * Where admission would place a job now (the dry run): the live limits and what the deployment's jobs hold on each
 * account, read-only. Undefined with one account, or for a job on an existing pool (it stays home).
 */
export async function placementPreview(jobId: string, spec: JobSpec): Promise<Placement | undefined> {
  if (appConfig().batchAccounts.length < 2) return undefined;
  const limits = await liveAdmissionLimits();
  const demand = demandOf(jobId, spec);
  if (!limits.accounts || demand.pools === 0) return undefined;
  const snap = await (await schedulingStores()).admission.read();
  return placeJob(limits.accounts, loadsOf(limits.accounts, Object.values(snap.ledger.reservations)), placementJob({ ...demand, place: placementNeeds(spec) }));
}

/** The limits admission keeps, from configuration. */
export function admissionLimits(): AdmissionLimits {
  const a = appConfig().admission;
  return {
    queues: a.queues,
    coreQuota: a.coreQuota,
    maxPools: a.maxPools,
    maxNodes: a.maxNodes,
    ownerMaxNodes: a.ownerMaxNodes,
    ownerMaxCores: a.ownerMaxCores,
    backfillLimit: a.backfillLimit,
  };
}

/** Refused access to storage a job named (the data-access policy said no). */
export class DataAccessDenied extends Error {
  constructor(
    readonly account: string,
    readonly container: string,
    reason: string,
  ) {
    super(`storage ${account}/${container} refused: ${reason}`);
    this.name = 'DataAccessDenied';
  }
}

function configured(refs: readonly StorageAccountRef[], name: string, what: string): BlobAccount {
  const ref = refs.find((a) => a.accountName === name);
  if (!ref) throw new Error(`storage account "${name}" is not a configured ${what} account`);
  return blobAccount(ref);
}

/** A staging account of this deployment (shards are copied there and read from there). */
export function stagingAccount(name: string): BlobAccount {
  return configured(appConfig().stagingAccounts, name, 'staging');
}

/**
 * An account holding a job's own data, for one container of it: only what the deployment's data-access policy allows
 * (shared/core/intake/dataAccess.ts), checked here again because an orchestration's input is not only written by intake.
 */
export function dataAccount(name: string, container: string): BlobAccount {
  const refusal = dataAccessRefusal(dataAccessPolicy(appConfig()), name, container);
  if (refusal) throw new DataAccessDenied(name, container, refusal);
  return configured(appConfig().dataAccess.accounts, name, 'data');
}

/** Which SAS a node gets for outputs to this data account; throws when the deployment refuses it (shared/core/intake/dataAccess.ts). */
export function outputsSasScopeOf(account: string, container: string): 'directory' | 'container' {
  const sas = outputsSasScope(dataAccessPolicy(appConfig()), account);
  if ('refusal' in sas) throw new DataAccessDenied(account, container, sas.refusal);
  return sas.scope;
}

/** The staging accounts, as configured (the sweep walks them). */
export function stagingAccounts(): BlobAccount[] {
  return appConfig().stagingAccounts.map(blobAccount);
}

let appCredential: DefaultAzureCredential | undefined;
let announcer: EventAnnouncer | undefined;
let delivery: Promise<DeliveryDeps> | undefined;

/** Whether any event endpoint is configured (docs/events.md). */
export function eventsEnabled(): boolean {
  const events = appConfig().events;
  return events.webhooks.length > 0 || events.topicEndpoint !== undefined;
}

/** Announces transitions on the job-events queue, or undefined when no event endpoint is configured. */
export function eventAnnouncer(): EventAnnouncer | undefined {
  if (!eventsEnabled()) return undefined;
  return (announcer ??= queueAnnouncer(appConfig().hostStorage, () => (appCredential ??= new DefaultAzureCredential())));
}

async function announceTransition(a: EventAnnouncer, event: JobEvent): Promise<void> {
  try {
    await a.announce(event.jobId);
  } catch (err) {
    console.warn(`job ${event.jobId}: announcing transition ${event.seq} failed (the event relay delivers it at its next run): ${(err as Error).message}`);
  }
}

/** What the event deliverer and relay need (shared/adapters/events/delivery.ts), or undefined when no endpoint is configured. */
export async function eventDelivery(): Promise<DeliveryDeps | undefined> {
  if (!eventsEnabled()) return undefined;
  delivery ??= (async () => {
    const cfg = appConfig();
    const host = cfg.hostStorage;
    const credential = () => (appCredential ??= new DefaultAzureCredential());
    const deliveries =
      host.kind === 'connectionString'
        ? DeliveryStore.fromConnectionString(host.connectionString)
        : DeliveryStore.fromTableEndpoint(host.tableEndpoint, credential());
    await deliveries.ensureTables();
    const ev = cfg.events;
    const announce = eventAnnouncer();
    return {
      jobs: await jobStore(),
      deliveries,
      endpoints: [
        ...(ev.topicEndpoint !== undefined ? [eventGridEndpoint(ev.topicEndpoint, credential())] : []),
        ...ev.webhooks.map((w) => webhookEndpoint({ ...w, allowLoopback: ev.allowLoopback })),
      ],
      policy: { maxAttempts: ev.maxAttempts, initialMs: ev.retryInitialMs, maxMs: ev.retryMaxMs },
      ...(ev.sourceBaseUrl !== undefined ? { sourceBaseUrl: ev.sourceBaseUrl } : {}),
      ...(announce ? { schedule: (jobId: string, delayMs: number) => announce.announce(jobId, delayMs) } : {}),
    };
  })().catch((err: unknown) => {
    delivery = undefined;
    throw err;
  });
  return delivery;
}

const pricesByRegion = new Map<string, { service: PriceService; ready: Promise<unknown> }>();

/**
 * Node prices: the Retail Prices API through the NodePrices table in host storage, the configured table as fallback.
 * Prices are those of the Batch account's price region: the account of the current scope (an activity of a job placed
 * on another account: its BATCH_ACCOUNTS `priceRegion`, else its `location`), else the home account's PRICES_REGION.
 */
export async function nodePrices(account: string | undefined = accountScope.getStore()): Promise<PriceService> {
  const cfg = appConfig();
  const retail = cfg.ops.retailPrices;
  const ref = batchAccountRef(account);
  const region = priceRegionOf(ref, ref.name === cfg.batch.accountName, retail.region);
  const key = region ?? '';
  let prices = pricesByRegion.get(key);
  if (!prices) {
    const host = cfg.hostStorage;
    const store =
      host.kind === 'connectionString'
        ? PriceStore.fromConnectionString(host.connectionString)
        : PriceStore.fromTableEndpoint(host.tableEndpoint, new DefaultAzureCredential());
    const service = priceService({
      ...(region && retail.url ? { region } : {}),
      ...(retail.off ? { retailOff: retail.off } : {}),
      table: cfg.ops.priceTable,
      maxAgeMs: retail.maxAgeMs,
      store,
      fetchPrices: (r, sizes) => fetchNodePrices(retail.url!, r, sizes),
      now: () => new Date(),
    });
    // A table that cannot be created leaves prices to the API and the fallback (every read of it is guarded).
    prices = { service, ready: store.ensureTable().catch(() => undefined) };
    pricesByRegion.set(key, prices);
  }
  await prices.ready;
  return prices.service;
}
