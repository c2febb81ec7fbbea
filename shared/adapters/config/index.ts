/**
 * The app's configuration: read once from environment variables (Function App settings), validated,
 * and handed around as a plain frozen object. Nothing else in the app reads process.env.
 *
 * Azure and local differ only in values: without a Batch key the app authenticates with its managed identity
 * through DefaultAzureCredential, and storage accounts are named (Azure) or given by their service URIs (the local
 * stack's Azurite), not keyed. Only the local stack's shared-key opt-in gives the emulator's key and Azurite
 * connection strings.
 */
import { z } from 'zod';
import { accountNameOfServiceUri, parseStorageAccountRef, serviceUri, type HostStorageRef, type StorageAccountRef } from '../../core/config/storageAccounts';
import { parsePriceTable, type PriceTable } from '../../core/config/priceTable';
import { RETAIL_PRICES_URL, regionOfBatchAccountUrl } from '../../core/ops/retailPrices';
import { authEnvSchema, parseAuthConfig, type AuthConfig } from '../../core/config/auth';
import { eventsEnvSchema, parseEventsConfig, type EventsConfig } from './events';
import { parseCoreQuota, parseQueues, type AdmissionConfig } from '../../core/config/admission';
import { parsePoolIdentity, type PoolIdentityConfig } from '../../core/config/poolIdentity';
import { DEFAULT_KEY_VAULT_URL_TEMPLATE } from '../../core/mpi/secretFetch';
import { parseRegistryCredentials, type RegistryCredential } from '../../core/config/registryCredentials';
import { SUBNET_ID_HINT, SUBNET_ID_RE } from '../../core/spec/sections/network';
import { parseSharedPools, type SharedPool } from '../../core/config/sharedPools';
import { parseSharedDataAreas, type SharedDataArea } from './dataAreas';
import { parseHnsAccounts } from '../../core/config/hnsAccounts';
import { parseDefaultOutputs } from '../../core/config/defaultOutputs';
import { parseRegistryAliases } from '../../core/config/registryAliases';
import { parseCustomNodeImages } from '../../core/config/nodeImages';
import type { DeclaredCustomImage } from '../../core/images/catalog';
import { parseBatchAccounts, type BatchAccountRef } from '../../core/config/batchAccounts';
import { HEALTH_CHECKS, type HealthCheck } from '../../core/spec/sections/preflight';

/** PREFLIGHT_HEALTH_CHECKS: unset or "all" runs every check, "none" none, else the listed ones. */
export function healthChecksSetting(value: string | undefined): HealthCheck[] {
  if (value === undefined || value === '' || value === 'all') return [...HEALTH_CHECKS];
  if (value === 'none') return [];
  return HEALTH_CHECKS.filter((c) =>
    value
      .split(',')
      .map((x) => x.trim())
      .includes(c),
  );
}

export type { HostStorageRef, StorageAccountRef } from '../../core/config/storageAccounts';
export type { AdmissionConfig, QueueSetting } from '../../core/config/admission';
export { parseConnectionString, parseStorageAccountRef } from '../../core/config/storageAccounts';
export { ROLES, MIN_OPERATOR_KEY_LENGTH, type Role, type AuthConfig, type BearerConfig } from '../../core/config/auth';
export { eventsRelaySchedule, DEFAULT_EVENTS_RELAY_SCHEDULE, type EventsConfig, type WebhookTarget } from './events';
export { ARM_TOKEN_SCOPE, DEFAULT_ARM_ENDPOINT, POOL_IDENTITY_SETTINGS, type PoolIdentityConfig } from '../../core/config/poolIdentity';
export type { RegistryCredential } from '../../core/config/registryCredentials';
export { SHARED_POOL_USERS, type SharedPool, type SharedPoolUser } from '../../core/config/sharedPools';
export type { SharedDataArea } from './dataAreas';
export type { BatchAccountRef } from '../../core/config/batchAccounts';

/**
 * The Entra ID scope of the Batch data plane. Batch accepts only tokens whose audience is exactly
 * `https://batch.core.windows.net/` (with the slash), and Entra puts in `aud` the resource as it was asked for:
 * the managed identity endpoint gets the scope minus "/.default", so `https://batch.core.windows.net/.default`
 * would ask for `https://batch.core.windows.net` and Batch would answer 401 "wrong audience". Hence the double slash.
 */
export const BATCH_TOKEN_SCOPE = 'https://batch.core.windows.net//.default';

import type { BatchAuth } from '../../core/config/batchAccounts';
export type { BatchAuth } from '../../core/config/batchAccounts';

export interface BatchConfig {
  accountUrl: string;
  accountName: string;
  auth: BatchAuth;
}

/** Exponential backoff knobs: attempt n waits min(maxMs, initialMs * multiplier^(n-1)) (shared/core/planning/backoff.ts). */
export interface BackoffConfig {
  initialMs: number;
  maxMs: number;
  multiplier: number;
}

export interface RetryConfig extends BackoffConfig {
  /** Fraction of the delay randomised, 0..1 (0.5 = +-50 %): many activities retrying the same service spread out. */
  jitter: number;
  /** Total tries of one call, first one included. */
  maxAttempts: number;
}

export interface AppConfig {
  /** The home Batch account (BATCH_ACCOUNT_*): reused pools, facts checks and jobs never placed elsewhere use it. */
  batch: BatchConfig;
  /**
   * Every Batch account jobs may be placed on, the home account first (BATCH_ACCOUNTS; without it, the home account
   * alone). See shared/core/config/batchAccounts.ts and docs/scheduling.md.
   */
  batchAccounts: BatchAccountRef[];
  /** Host storage (AzureWebJobsStorage): Durable state, queues, the Jobs table. */
  hostStorage: HostStorageRef;
  /** Accounts the shard stager spreads data over, in the order given. */
  stagingAccounts: StorageAccountRef[];
  /** Where jobs may read inputs and files from (and write outputs to); see docs/security.md. */
  dataAccess: DataAccessConfig;
  /** How the orchestrator polls Batch (durable timers between polls). */
  /** lookMaxMs: the cap of the looks at node tasks and checks in flight (POLL_LOOK_MAX_MS; PipelineRun.lookDelayMs). */
  polling: BackoffConfig & { lookMaxMs: number };
  /** How the Batch adapter retries throttled / failed calls inside one activity. */
  batchRetry: RetryConfig;
  /** What the pipeline needs beyond polling; handed to each orchestration at intake. */
  pipeline: PipelineConfig;
  /**
   * host.json `extensions.queues.maxDequeueCount`: the queue door marks a job Failed on the attempt before the
   * host moves its message to the poison queue, so it must know the count.
   */
  queueMaxDequeueCount: number;
  /** The operations sweep (functions/sweep.ts) and cost accounting; see docs/operations.md. */
  ops: OpsConfig;
  /**
   * Secrets jobs may reference by name for pool mounts (Azure Files account keys, CIFS passwords): the app settings
   * MOUNT_SECRET_<name>, keyed by <name>. In Azure each is a Key Vault reference the platform resolves.
   */
  mountSecrets: Readonly<Record<string, string>>;
  /** Who may call the job API (Entra ID bearer tokens, operator keys, anonymous); see docs/security.md. */
  auth: AuthConfig;
  /** What job containers may ask for beyond the allowlist (docs/workloads.md). */
  containers: ContainersConfig;
  /** Where each job state change is published (Event Grid, webhooks); see docs/events.md. */
  events: EventsConfig;
  /** Queues and the limits admission keeps; see docs/scheduling.md. */
  admission: AdmissionConfig;
  /** Reading the Batch account's sizes, images and quotas (docs/azure-facts.md). */
  facts: FactsConfig;
  /**
   * The user-assigned identity pools run with (pools then come from the management plane), or undefined: pools from
   * the data plane, no identity on the nodes (see shared/core/config/poolIdentity.ts).
   */
  poolIdentity?: PoolIdentityConfig;
  /** Registry secrets jobs may name by setting (container.registry.identity.secretRef), per server. */
  registryCredentials: RegistryCredential[];
  /** Pools the deployment declares shared (SHARED_POOLS): any other pool.poolId must be the submitter's own. */
  sharedPools: SharedPool[];
  /** The subnet new pools join when their spec names none (POOL_SUBNET_ID; default: no virtual network). */
  poolSubnetId?: string;
  /**
   * How nodes turn a secret reference's vault name into the vault URL (KEY_VAULT_URL_TEMPLATE, "{vault}" replaced):
   * "https://{vault}.vault.azure.net" in Azure's public cloud, the sovereign clouds' suffixes, or the local stack's.
   */
  keyVaultUrlTemplate: string;
}

export interface ContainersConfig {
  /** Whether a job may run its docker container with --privileged (CONTAINER_ALLOW_PRIVILEGED; default false). */
  allowPrivileged: boolean;
  /** Registry names users write → the registry each stands for (REGISTRY_ALIASES, shared/core/intake/registryAliases.ts). */
  registryAliases?: Readonly<Record<string, string>>;
  /** The deployment's custom node images, described for the node image checks (NODE_IMAGES_CUSTOM, nodeImages.ts). */
  customNodeImages?: DeclaredCustomImage[];
}

/** NODE_IMAGES_CUSTOM as a config field: absent when the deployment declares none. */
function customNodeImagesOf(text: string | undefined, problems: string[]): Pick<ContainersConfig, 'customNodeImages'> {
  const images = parseCustomNodeImages(text, problems);
  return images.length ? { customNodeImages: images } : {};
}

export interface DataAccessConfig {
  /** Accounts a job spec may name. Never the host storage or a staging account (refused at start-up). */
  accounts: StorageAccountRef[];
  /**
   * When set, only these containers of those accounts: `container` exactly, or a prefix ending in "*".
   * Unset: any container of an allowed account (staging containers are refused everywhere regardless).
   */
  containers?: { account: string; container: string }[];
  /**
   * File servers jobs may mount (DATA_MOUNT_SOURCES): NFS exports `host:/path` and SMB shares `//host/share`, each
   * exact or a prefix ending in "*". Storage of the data accounts (NFS on Blob or Files) needs no entry.
   */
  mountSources: string[];
  /**
   * Internal hosts jobs may name anyway (ALLOWED_INTERNAL_HOSTS: `host` or `host:port`, comma-separated; default none):
   * the local stack's registry on 127.0.0.1, a private registry or download server in the VNet. Every other internal
   * address (loopback, private, link-local, metadata, the wire server) is refused in files[].url and image
   * references (shared/core/spec/address.ts); the app's own storage is refused whatever this says.
   */
  allowedInternalHosts?: string[];
  /** Areas open to more than one owner (SHARED_DATA_AREAS, shared/adapters/config/dataAreas.ts); every owner also has `users/<ownerKey>/`. */
  sharedAreas: SharedDataArea[];
  /** Data accounts with a hierarchical namespace (DATA_ACCOUNTS_HNS, shared/core/config/hnsAccounts.ts): outputs get a directory SAS there. */
  hnsAccounts?: string[];
  /**
   * Whether outputs must go to an HNS account (OUTPUTS_REQUIRE_SCOPED_SAS; default false): a flat account can only be
   * given a container SAS, which lets a node write any blob of the container (docs/security.md, "Outputs").
   */
  outputsRequireScopedSas?: boolean;
  /**
   * Where a job without an outputs section keeps every task's full stdout/stderr (DEFAULT_OUTPUTS = account/container,
   * a data account and container jobs may use), under the owner's area. Unset: derived from DATA_ACCOUNTS and
   * DATA_CONTAINERS (shared/core/config/defaultOutputs.ts); undefined only for DEFAULT_OUTPUTS=none or no data account.
   */
  defaultOutputs?: { account: string; container: string };
}

export interface PipelineConfig {
  /** Shard copies run at once per job. */
  copyConcurrency: number;
  /** Extra validity of node SAS URLs beyond the job's wall-clock limit (minutes). */
  sasMarginMinutes: number;
  /** Attempts of a per-node task (image pull, shard download) before the job fails. */
  nodeTaskMaxAttempts: number;
  /** Longest lifetime of any SAS URL handed to a node (Azure caps user delegation SAS at 7 days). */
  sasMaxLifetimeMinutes: number;
  /** The wall clock a job without limits.maxWallClock gets at intake (DEFAULT_MAX_WALL_CLOCK_HOURS), so its node SAS lives that long plus the margin, not the cap. */
  defaultMaxWallClockMinutes: number;
  /** Judge the preflight ping-pong of RDMA jobs by the built-in thresholds when a spec sets none (docs/scheduling.md). */
  preflightFabricDefaults: boolean;
  /** The node health checks preflight runs and judges (PREFLIGHT_HEALTH_CHECKS, docs/pipeline.md "Node health checks"). */
  preflightHealthChecks: HealthCheck[];
  /**
   * The least the preflight check waits for a node's answer on the launcher's ssh port, whatever the spec's
   * preflight.maxSshMs (PREFLIGHT_SSH_WAIT_MIN_MS; 0, the default: the spec's value). For a machine whose emulated
   * nodes share a few cores (the counting bench's stack), not for Azure, whose nodes are separate machines.
   */
  preflightSshWaitMinMs: number;
  /** Copy shards from admission on and start each node's downloads when its pull ends (PIPELINE_OVERLAP, docs/pipeline.md). */
  overlapStaging: boolean;
}

export interface OpsConfig {
  /** NCRONTAB (six fields) of the sweep timer. */
  sweepSchedule: string;
  /** A running orchestration with no progress for longer than this is stalled. */
  stallLimitMs: number;
  /** Extra time before the sweep removes a resource whose job is unknown or past its limits. */
  graceMs: number;
  /** Staging containers of finished or unknown jobs are deleted this long after they last changed. */
  stagingRetentionMs: number;
  /** Finished jobs' rows and events are purged this long after they ended; undefined = never (the default). */
  jobsRetentionMs?: number;
  priceTable: PriceTable;
  /** Node prices from the Azure Retail Prices API (shared/core/ops/priceService.ts). */
  retailPrices: RetailPricesConfig;
}

export interface RetailPricesConfig {
  /** The API's URL (RETAIL_PRICES_URL); undefined when `off` says why it is not used. */
  url?: string;
  /** The region prices are read for (PRICES_REGION, else the Batch account URL's region). */
  region?: string;
  off?: string;
  /** A cached price older than this is asked for again (PRICES_MAX_AGE_HOURS). */
  maxAgeMs: number;
}

/** The price refresh timer's default schedule: once a day, 03:15 UTC. */
export const DEFAULT_PRICES_REFRESH_SCHEDULE = '0 15 3 * * *';

/** The price refresh timer's schedule (PRICES_REFRESH_SCHEDULE), read at registration like the sweep's. */
export function pricesRefreshSchedule(env: Record<string, string | undefined> = process.env): string {
  const v = env.PRICES_REFRESH_SCHEDULE?.trim();
  return v ? v : DEFAULT_PRICES_REFRESH_SCHEDULE;
}

/** The sweep's default schedule: every 5 minutes, on the minute. */
export const DEFAULT_SWEEP_SCHEDULE = '0 */5 * * * *';

/**
 * The sweep timer's schedule, read when the function is registered (before the rest of the configuration is
 * needed, and without failing registration when some other setting is bad).
 */
export function sweepSchedule(env: Record<string, string | undefined> = process.env): string {
  const v = env.SWEEP_SCHEDULE?.trim();
  return v ? v : DEFAULT_SWEEP_SCHEDULE;
}

/**
 * The app's version for the health endpoint: APP_VERSION when the deployment sets it, else undefined (the
 * caller falls back to package.json). Read on its own, like the sweep schedule: health must answer even when
 * the rest of the configuration is bad.
 */
export function appVersionSetting(env: Record<string, string | undefined> = process.env): string | undefined {
  const v = env.APP_VERSION?.trim();
  return v ? v : undefined;
}

/** Raised when settings are missing or invalid; lists every problem, each prefixed with the variable name. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

const required = (name: string) =>
  z
    .string({ error: `${name} is required` })
    .trim()
    .min(1, { error: `${name} is required (empty)`, abort: true });

/** An optional numeric setting: the fallback when unset or empty, else a number in [min, max] (a whole one if `integer`). */
const numericSetting = (fallback: number, min: number, max: number, integer: boolean) =>
  z
    .string()
    .trim()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return fallback;
      const n = Number(v);
      if (!(integer ? Number.isInteger(n) : Number.isFinite(n)) || n < min || n > max) {
        ctx.addIssue({ code: 'custom', message: `must be ${integer ? 'an integer' : 'a number'} in [${min}, ${max}], got "${v}"` });
        return z.NEVER;
      }
      return n;
    });
const intSetting = (fallback: number, min: number, max: number) => numericSetting(fallback, min, max, true);
const numberSetting = (fallback: number, min: number, max: number) => numericSetting(fallback, min, max, false);

const httpUrl = (name: string) =>
  required(name).refine(
    (v) => {
      try {
        const u = new URL(v);
        return (u.protocol === 'https:' || u.protocol === 'http:') && u.pathname.replace(/\/+$/, '') === '';
      } catch {
        return false;
      }
    },
    { error: 'must be an http(s) URL with no path, e.g. https://myaccount.westeurope.batch.azure.com' },
  );

const envSchema = z.object({
  BATCH_ACCOUNT_URL: httpUrl('BATCH_ACCOUNT_URL'),
  BATCH_ACCOUNT_NAME: required('BATCH_ACCOUNT_NAME').regex(/^[a-z0-9]{3,24}$/, {
    error: 'must be 3-24 lowercase letters or digits',
  }),
  BATCH_ACCOUNT_KEY: z.string().trim().optional(),
  BATCH_ACCOUNTS: z.string().optional(),
  AzureWebJobsStorage: z.string().trim().optional(),
  AzureWebJobsStorage__accountName: z.string().trim().optional(),
  AzureWebJobsStorage__blobServiceUri: z.string().trim().optional(),
  AzureWebJobsStorage__queueServiceUri: z.string().trim().optional(),
  AzureWebJobsStorage__tableServiceUri: z.string().trim().optional(),
  STAGING_ACCOUNTS: required('STAGING_ACCOUNTS'),
  STORAGE_ENDPOINT_SUFFIX: z.string().trim().optional(),
  POLL_INITIAL_MS: intSetting(5_000, 1, 3_600_000),
  POLL_MAX_MS: intSetting(60_000, 1, 3_600_000),
  POLL_MULTIPLIER: numberSetting(2, 1, 10),
  POLL_LOOK_MAX_MS: intSetting(30_000, 1, 3_600_000),
  PREFLIGHT_SSH_WAIT_MIN_MS: intSetting(0, 0, 120_000),
  BATCH_RETRY_MAX_ATTEMPTS: intSetting(6, 1, 50),
  BATCH_RETRY_INITIAL_MS: intSetting(500, 1, 600_000),
  BATCH_RETRY_MAX_MS: intSetting(30_000, 1, 600_000),
  STAGING_COPY_CONCURRENCY: intSetting(8, 1, 64),
  DATA_ACCOUNTS: z.string().trim().optional(),
  DATA_CONTAINERS: z.string().trim().optional(),
  DEFAULT_OUTPUTS: z.string().trim().optional(),
  DATA_MOUNT_SOURCES: z.string().trim().optional(),
  DATA_ACCOUNTS_HNS: z.string().trim().optional(),
  OUTPUTS_REQUIRE_SCOPED_SAS: z
    .string()
    .trim()
    .optional()
    .refine((v) => v === undefined || v === '' || v === 'true' || v === 'false', { error: 'must be "true" or "false"' }),
  ALLOWED_INTERNAL_HOSTS: z.string().trim().optional(),
  SAS_MAX_LIFETIME_HOURS: intSetting(168, 1, 168),
  SHARED_DATA_AREAS: z.string().trim().optional(),
  DEFAULT_MAX_WALL_CLOCK_HOURS: intSetting(24, 1, 168),
  NODE_SAS_MARGIN_MINUTES: intSetting(60, 0, 24 * 60),
  NODE_TASK_MAX_ATTEMPTS: intSetting(3, 1, 10),
  QUEUE_MAX_DEQUEUE_COUNT: intSetting(5, 1, 1_000),
  SWEEP_SCHEDULE: z.string().trim().optional(),
  SWEEP_STALL_LIMIT_SECONDS: intSetting(30 * 60, 1, 30 * 24 * 3_600),
  SWEEP_GRACE_SECONDS: intSetting(10 * 60, 0, 30 * 24 * 3_600),
  STAGING_RETENTION_HOURS: numberSetting(24, 0, 24 * 365),
  JOBS_RETENTION_DAYS: numberSetting(0, 0, 3_650),
  PRICE_TABLE_JSON: z.string().optional(),
  RETAIL_PRICES_URL: z.string().trim().optional(),
  PRICES_REGION: z
    .string()
    .trim()
    .optional()
    .refine((v) => v === undefined || v === '' || /^[a-z][a-z0-9]{2,39}$/.test(v), { error: 'must be an Azure region name such as "eastus" or "westeurope"' }),
  PRICES_MAX_AGE_HOURS: intSetting(48, 1, 24 * 365),
  PRICES_REFRESH_SCHEDULE: z.string().trim().optional(),
  ...authEnvSchema,
  PREFLIGHT_FABRIC_DEFAULTS: z
    .string()
    .trim()
    .optional()
    .refine((v) => v === undefined || v === '' || v === 'true' || v === 'false', { error: 'must be "true" or "false"' }),
  PREFLIGHT_HEALTH_CHECKS: z
    .string()
    .trim()
    .optional()
    .refine(
      (v) => v === undefined || v === '' || v === 'all' || v === 'none' || v.split(',').every((c) => (HEALTH_CHECKS as readonly string[]).includes(c.trim())),
      { error: `must be "all", "none" or a comma-separated list of ${HEALTH_CHECKS.join(', ')}` },
    ),
  PIPELINE_OVERLAP: z
    .string()
    .trim()
    .optional()
    .refine((v) => v === undefined || v === '' || v === 'true' || v === 'false', { error: 'must be "true" or "false"' }),
  CONTAINER_ALLOW_PRIVILEGED: z
    .string()
    .trim()
    .optional()
    .refine((v) => v === undefined || v === '' || v === 'true' || v === 'false', { error: 'must be "true" or "false"' }),
  REGISTRY_ALIASES: z.string().trim().optional(),
  NODE_IMAGES_CUSTOM: z.string().trim().optional(),
  ...eventsEnvSchema,
  ADMISSION_QUEUES: z.string().optional(),
  ADMISSION_CORE_QUOTA: z.string().optional(),
  // 0 = no limit.
  ADMISSION_MAX_POOLS: intSetting(0, 0, 100_000),
  ADMISSION_MAX_NODES: intSetting(0, 0, 10_000_000),
  ADMISSION_OWNER_MAX_NODES: intSetting(0, 0, 10_000_000),
  ADMISSION_OWNER_MAX_CORES: intSetting(0, 0, 100_000_000),
  ADMISSION_BACKFILL_LIMIT: intSetting(4, 0, 1_000),
  ADMISSION_POLL_SECONDS: intSetting(60, 1, 3_600),
  // Azure facts (shared/adapters/batch/facts.ts, docs/azure-facts.md): the region the account's sizes are asked for, how long
  // the quotas and the size/image lists are kept before they are read again, and whether validation asks at all.
  BATCH_LOCATION: z
    .string()
    .trim()
    .regex(/^[a-z0-9]{2,40}$/, { error: 'must be an Azure region name such as "westeurope"' })
    .optional(),
  FACTS_QUOTA_TTL_MINUTES: intSetting(5, 1, 7 * 24 * 60),
  FACTS_CATALOG_TTL_MINUTES: intSetting(24 * 60, 1, 30 * 24 * 60),
  FACTS_CHECK: z
    .string()
    .trim()
    .optional()
    .refine((v) => v === undefined || v === '' || v === 'true' || v === 'false', { error: 'must be "true" or "false"' }),
  BATCH_SUBSCRIPTION_ID: z.string().optional(),
  BATCH_RESOURCE_GROUP: z.string().optional(),
  POOL_IDENTITY_RESOURCE_ID: z.string().optional(),
  POOL_IDENTITY_CLIENT_ID: z.string().optional(),
  ARM_ENDPOINT: z.string().optional(),
  REGISTRY_CREDENTIALS: z.string().optional(),
  SHARED_POOLS: z.string().optional(),
  POOL_SUBNET_ID: z.string().trim().optional(),
  // https, or plain http on loopback only (the local stack's Key Vault stand-in); must contain "{vault}".
  KEY_VAULT_URL_TEMPLATE: z
    .string()
    .trim()
    .optional()
    .refine(
      (v) =>
        !v || (/^(?:https:\/\/[A-Za-z0-9.{}-]+|http:\/\/(?:127\.0\.0\.1|localhost)(?::\d{1,5})?)(?:\/[A-Za-z0-9._{}-]*)*$/.test(v) && v.includes('{vault}')),
      {
        error: 'must be a URL with "{vault}" in it, such as "https://{vault}.vault.azure.net" (plain http only on 127.0.0.1/localhost)',
      },
    ),
});

/** Every app setting the app reads (APP_VERSION aside, read on its own by appVersionSetting). */
export const SETTING_NAMES: readonly string[] = Object.keys(envSchema.shape);

/**
 * Reads and validates the configuration. Pure: everything comes from `env`.
 * Throws ConfigError naming each missing or bad variable.
 */
/** How the control plane reads the Batch account's facts (shared/adapters/batch/facts.ts, docs/azure-facts.md). */
export interface FactsConfig {
  /** Validate pools against the account's sizes and images (FACTS_CHECK, default true). */
  check: boolean;
  /** The account's region (BATCH_LOCATION): the sizes are that region's. Unset: sizes are not checked. */
  location?: string;
  /** How long quotas are kept (FACTS_QUOTA_TTL_MINUTES, default 5: admission weighs them). */
  quotaTtlMs: number;
  /** How long sizes and images are kept (FACTS_CATALOG_TTL_MINUTES, default 1440). */
  catalogTtlMs: number;
  /** Whether ADMISSION_CORE_QUOTA was set (it then lowers the account's quota; without the management plane it is the quota). */
  coreQuotaConfigured: boolean;
}

export function loadConfig(env: Record<string, string | undefined> = process.env): AppConfig {
  const parsed = envSchema.safeParse(env);
  const problems: string[] = [];
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const variable = String(issue.path[0] ?? '?');
      problems.push(issue.message.startsWith(variable) ? issue.message : `${variable}: ${issue.message}`);
    }
    throw new ConfigError(problems);
  }
  const e = parsed.data;
  const endpointSuffix = e.STORAGE_ENDPOINT_SUFFIX || 'core.windows.net';

  const { priceTable, queues, coreQuota } = parseLimits(e, problems);

  const hostStorage = parseHostStorage(e, endpointSuffix, problems);

  const stagingAccounts = parseStagingAccounts(e.STAGING_ACCOUNTS, endpointSuffix, problems);
  const names = stagingAccounts.map((a) => a.accountName);

  const dataAccess = parseDataAccess(e.DATA_ACCOUNTS, e.DATA_CONTAINERS, endpointSuffix, [hostStorage?.accountName, ...names], problems);
  const auth = parseAuthConfig(e, problems);
  addDataAreas(dataAccess, e, problems);
  const mountSecrets = parseMountSecrets(env, problems);
  const events = parseEventsConfig(e, problems);
  const poolIdentity = parsePoolIdentity(e, e.BATCH_ACCOUNT_NAME, problems);
  const registryCredentials = parseRegistryCredentials(e.REGISTRY_CREDENTIALS, env, problems);
  const sharedPools = parseSharedPools(e.SHARED_POOLS, problems);
  const poolSubnetId = e.POOL_SUBNET_ID || undefined;
  if (poolSubnetId && !SUBNET_ID_RE.test(poolSubnetId)) problems.push(`POOL_SUBNET_ID: must be ${SUBNET_ID_HINT}`);
  const batch: BatchConfig = {
    accountUrl: e.BATCH_ACCOUNT_URL.replace(/\/+$/, ''),
    accountName: e.BATCH_ACCOUNT_NAME,
    auth: e.BATCH_ACCOUNT_KEY ? { kind: 'sharedKey', accountKey: e.BATCH_ACCOUNT_KEY } : { kind: 'aad', scope: BATCH_TOKEN_SCOPE },
  };
  const batchAccounts = parseBatchAccounts(e, batch, env, names, problems);

  if (problems.length > 0 || !hostStorage || !priceTable || !queues || !coreQuota) throw new ConfigError(problems);

  const config: AppConfig = {
    batch,
    batchAccounts,
    hostStorage,
    stagingAccounts,
    dataAccess,
    polling: { initialMs: e.POLL_INITIAL_MS, maxMs: e.POLL_MAX_MS, multiplier: e.POLL_MULTIPLIER, lookMaxMs: e.POLL_LOOK_MAX_MS },
    batchRetry: {
      maxAttempts: e.BATCH_RETRY_MAX_ATTEMPTS,
      initialMs: e.BATCH_RETRY_INITIAL_MS,
      maxMs: e.BATCH_RETRY_MAX_MS,
      multiplier: 2,
      jitter: 0.5,
    },
    pipeline: pipelineConfig(e),
    queueMaxDequeueCount: e.QUEUE_MAX_DEQUEUE_COUNT,
    ops: opsConfig(e, priceTable, problems),
    mountSecrets,
    auth,
    containers: {
      allowPrivileged: e.CONTAINER_ALLOW_PRIVILEGED === 'true',
      registryAliases: parseRegistryAliases(e.REGISTRY_ALIASES, problems),
      ...customNodeImagesOf(e.NODE_IMAGES_CUSTOM, problems),
    },
    events,
    admission: admissionConfig(e, queues, coreQuota),
    facts: factsConfig(e),
    ...(poolIdentity ? { poolIdentity } : {}),
    registryCredentials,
    sharedPools,
    ...(poolSubnetId ? { poolSubnetId } : {}),
    keyVaultUrlTemplate: e.KEY_VAULT_URL_TEMPLATE || DEFAULT_KEY_VAULT_URL_TEMPLATE,
  };
  return deepFreeze(config);
}

/** The pipeline's settings (PipelineSettings' deployment-wide part). */
function pipelineConfig(e: z.infer<typeof envSchema>): AppConfig['pipeline'] {
  return {
    copyConcurrency: e.STAGING_COPY_CONCURRENCY,
    sasMarginMinutes: e.NODE_SAS_MARGIN_MINUTES,
    nodeTaskMaxAttempts: e.NODE_TASK_MAX_ATTEMPTS,
    sasMaxLifetimeMinutes: e.SAS_MAX_LIFETIME_HOURS * 60,
    defaultMaxWallClockMinutes: e.DEFAULT_MAX_WALL_CLOCK_HOURS * 60,
    preflightFabricDefaults: e.PREFLIGHT_FABRIC_DEFAULTS !== 'false',
    preflightHealthChecks: healthChecksSetting(e.PREFLIGHT_HEALTH_CHECKS),
    preflightSshWaitMinMs: e.PREFLIGHT_SSH_WAIT_MIN_MS,
    overlapStaging: e.PIPELINE_OVERLAP !== 'false',
  };
}

/** The sweep's schedule and limits, and the prices it bills with. */
function opsConfig(e: z.infer<typeof envSchema>, priceTable: PriceTable, problems: string[]): AppConfig['ops'] {
  return {
    sweepSchedule: e.SWEEP_SCHEDULE || DEFAULT_SWEEP_SCHEDULE,
    stallLimitMs: e.SWEEP_STALL_LIMIT_SECONDS * 1000,
    graceMs: e.SWEEP_GRACE_SECONDS * 1000,
    stagingRetentionMs: e.STAGING_RETENTION_HOURS * 3_600_000,
    jobsRetentionMs: e.JOBS_RETENTION_DAYS > 0 ? e.JOBS_RETENTION_DAYS * 24 * 3_600_000 : undefined,
    priceTable,
    retailPrices: parseRetailPrices(e, problems),
  };
}

/** Admission: the queues, the core quota and the limits (0: none). */
function admissionConfig(e: z.infer<typeof envSchema>, queues: AdmissionConfig['queues'], coreQuota: AdmissionConfig['coreQuota']): AppConfig['admission'] {
  const limit = (n: number) => (n > 0 ? n : undefined);
  return {
    queues,
    coreQuota,
    maxPools: limit(e.ADMISSION_MAX_POOLS),
    maxNodes: limit(e.ADMISSION_MAX_NODES),
    ownerMaxNodes: limit(e.ADMISSION_OWNER_MAX_NODES),
    ownerMaxCores: limit(e.ADMISSION_OWNER_MAX_CORES),
    backfillLimit: e.ADMISSION_BACKFILL_LIMIT,
    pollMs: e.ADMISSION_POLL_SECONDS * 1000,
  };
}

/** The account facts: whether pools are checked against them and how long they are kept. */
function factsConfig(e: z.infer<typeof envSchema>): AppConfig['facts'] {
  return {
    check: e.FACTS_CHECK !== 'false',
    ...(e.BATCH_LOCATION ? { location: e.BATCH_LOCATION } : {}),
    quotaTtlMs: e.FACTS_QUOTA_TTL_MINUTES * 60_000,
    catalogTtlMs: e.FACTS_CATALOG_TTL_MINUTES * 60_000,
    coreQuotaConfigured: (e.ADMISSION_CORE_QUOTA ?? '').trim() !== '',
  };
}

/** The checks across settings (initial delays within their caps, the account key's encoding) and the tables that must parse: price table, queues, core quota. */
function parseLimits(
  e: z.infer<typeof envSchema>,
  problems: string[],
): { priceTable?: PriceTable; queues?: AdmissionConfig['queues']; coreQuota?: AdmissionConfig['coreQuota'] } {
  if (e.POLL_INITIAL_MS > e.POLL_MAX_MS) {
    problems.push(`POLL_INITIAL_MS (${e.POLL_INITIAL_MS}) must not exceed POLL_MAX_MS (${e.POLL_MAX_MS})`);
  }
  if (e.POLL_INITIAL_MS > e.POLL_LOOK_MAX_MS) {
    problems.push(`POLL_INITIAL_MS (${e.POLL_INITIAL_MS}) must not exceed POLL_LOOK_MAX_MS (${e.POLL_LOOK_MAX_MS})`);
  }
  if (e.BATCH_RETRY_INITIAL_MS > e.BATCH_RETRY_MAX_MS) {
    problems.push(`BATCH_RETRY_INITIAL_MS (${e.BATCH_RETRY_INITIAL_MS}) must not exceed BATCH_RETRY_MAX_MS (${e.BATCH_RETRY_MAX_MS})`);
  }
  let priceTable: PriceTable | undefined;
  try {
    priceTable = parsePriceTable(e.PRICE_TABLE_JSON);
  } catch (err) {
    problems.push((err as Error).message);
  }
  let queues: AdmissionConfig['queues'] | undefined;
  let coreQuota: AdmissionConfig['coreQuota'] | undefined;
  try {
    queues = parseQueues(e.ADMISSION_QUEUES);
  } catch (err) {
    problems.push((err as Error).message);
  }
  try {
    coreQuota = parseCoreQuota(e.ADMISSION_CORE_QUOTA);
  } catch (err) {
    problems.push((err as Error).message);
  }
  if (e.BATCH_ACCOUNT_KEY !== undefined && e.BATCH_ACCOUNT_KEY !== '' && !isBase64(e.BATCH_ACCOUNT_KEY)) {
    problems.push('BATCH_ACCOUNT_KEY: must be base64 (the account key as the portal or emulator shows it)');
  }

  return { priceTable, queues, coreQuota };
}

/** The rest of where jobs may read and write data: mount sources, internal hosts, shared areas, HNS accounts, outputs' SAS scope and the default outputs. */
function addDataAreas(dataAccess: DataAccessConfig, e: z.infer<typeof envSchema>, problems: string[]): void {
  dataAccess.mountSources = parseMountSources(e.DATA_MOUNT_SOURCES, problems);
  dataAccess.allowedInternalHosts = parseAllowedInternalHosts(e.ALLOWED_INTERNAL_HOSTS, problems);
  dataAccess.sharedAreas = parseSharedDataAreas(
    e.SHARED_DATA_AREAS,
    dataAccess.accounts.map((a) => a.accountName),
    problems,
  );
  dataAccess.hnsAccounts = parseHnsAccounts(
    e.DATA_ACCOUNTS_HNS,
    dataAccess.accounts.map((a) => a.accountName),
    problems,
  );
  dataAccess.outputsRequireScopedSas = e.OUTPUTS_REQUIRE_SCOPED_SAS === 'true';
  const defaultOutputs = parseDefaultOutputs(
    e.DEFAULT_OUTPUTS,
    {
      accounts: dataAccess.accounts.map((a) => a.accountName),
      containers: dataAccess.containers,
      hnsAccounts: dataAccess.hnsAccounts,
      outputsRequireScopedSas: dataAccess.outputsRequireScopedSas,
    },
    problems,
  );
  if (defaultOutputs) dataAccess.defaultOutputs = defaultOutputs;
}

/** STAGING_ACCOUNTS: a comma-separated list of account references, none empty, none twice. */
function parseStagingAccounts(setting: string, endpointSuffix: string, problems: string[]): StorageAccountRef[] {
  const stagingAccounts: StorageAccountRef[] = [];
  setting.split(',').forEach((entry, index) => {
    if (!entry.trim()) {
      problems.push(`STAGING_ACCOUNTS: entry ${index + 1} is empty`);
      return;
    }
    try {
      stagingAccounts.push(parseStorageAccountRef(entry, endpointSuffix));
    } catch (err) {
      problems.push(`STAGING_ACCOUNTS: entry ${index + 1}: ${(err as Error).message}`);
    }
  });
  const names = stagingAccounts.map((a) => a.accountName);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate) problems.push(`STAGING_ACCOUNTS: account "${duplicate}" is listed twice`);
  return stagingAccounts;
}

/**
 * The host storage, as the Functions host reads it: the connection string AzureWebJobsStorage, else an
 * identity-based connection, given by its service URIs (AzureWebJobsStorage__blobServiceUri, __queueServiceUri,
 * __tableServiceUri: the host needs blob and queue, the app and the Durable engine table; any endpoint) or by
 * AzureWebJobsStorage__accountName (public Azure endpoints at STORAGE_ENDPOINT_SUFFIX only).
 */
function parseHostStorage(e: z.infer<typeof envSchema>, endpointSuffix: string, problems: string[]): HostStorageRef | undefined {
  if (e.AzureWebJobsStorage) {
    try {
      const ref = parseStorageAccountRef(e.AzureWebJobsStorage, endpointSuffix);
      if (ref.kind === 'connectionString') return ref;
      problems.push('AzureWebJobsStorage: must be a connection string (an identity-based connection is given by the AzureWebJobsStorage__* settings)');
    } catch (err) {
      problems.push(`AzureWebJobsStorage: ${(err as Error).message}`);
    }
    return undefined;
  }
  const uris = { blob: e.AzureWebJobsStorage__blobServiceUri, queue: e.AzureWebJobsStorage__queueServiceUri, table: e.AzureWebJobsStorage__tableServiceUri };
  if (uris.blob || uris.queue || uris.table) {
    const found: Partial<Record<'blob' | 'queue' | 'table', { uri: string; account: string }>> = {};
    for (const service of ['blob', 'queue', 'table'] as const) {
      const name = `AzureWebJobsStorage__${service}ServiceUri`;
      const value = uris[service];
      if (!value) {
        problems.push(`${name} is required with the other AzureWebJobsStorage__*ServiceUri settings (the host needs blob and queue, the app table)`);
        continue;
      }
      try {
        found[service] = { uri: serviceUri(value), account: accountNameOfServiceUri(value, service) };
      } catch (err) {
        problems.push(`${name}: ${(err as Error).message}`);
      }
    }
    const { blob, queue, table } = found;
    if (!blob || !queue || !table) return undefined;
    if (queue.account !== blob.account || table.account !== blob.account) {
      problems.push(
        `AzureWebJobsStorage__*ServiceUri name different accounts (${blob.account}, ${queue.account}, ${table.account}); the host storage is one account`,
      );
      return undefined;
    }
    return { kind: 'managedIdentity', accountName: blob.account, blobEndpoint: blob.uri, queueEndpoint: queue.uri, tableEndpoint: table.uri };
  }
  if (e.AzureWebJobsStorage__accountName) {
    try {
      const ref = parseStorageAccountRef(e.AzureWebJobsStorage__accountName, endpointSuffix);
      if (ref.kind === 'managedIdentity' && ref.queueEndpoint && ref.tableEndpoint && ref.blobEndpoint.startsWith(`https://${ref.accountName}.`)) {
        return { ...ref, queueEndpoint: ref.queueEndpoint, tableEndpoint: ref.tableEndpoint };
      }
      problems.push(
        'AzureWebJobsStorage__accountName: must be a storage account name (an identity-based connection; use the __*ServiceUri settings for other endpoints)',
      );
    } catch (err) {
      problems.push(`AzureWebJobsStorage__accountName: ${(err as Error).message}`);
    }
    return undefined;
  }
  problems.push(
    'AzureWebJobsStorage is required (or, with managed identity, AzureWebJobsStorage__accountName or the AzureWebJobsStorage__blobServiceUri, __queueServiceUri and __tableServiceUri settings)',
  );
  return undefined;
}

/**
 * DATA_ACCOUNTS (account names or connection strings, like STAGING_ACCOUNTS) and DATA_CONTAINERS
 * ("account/container" or "account/prefix*"). The app's own accounts may never be listed: a job could otherwise read
 * the host's state or another job's staged shards.
 */
function parseDataAccess(
  accountsText: string | undefined,
  containersText: string | undefined,
  endpointSuffix: string,
  ownAccounts: (string | undefined)[],
  problems: string[],
): DataAccessConfig {
  const accounts: StorageAccountRef[] = [];
  (accountsText ?? '').split(',').forEach((entry, index) => {
    if (!entry.trim()) return;
    try {
      const ref = parseStorageAccountRef(entry, endpointSuffix);
      if (ownAccounts.includes(ref.accountName))
        problems.push(`DATA_ACCOUNTS: entry ${index + 1}: "${ref.accountName}" is the app's own host or staging storage; jobs must never reach it`);
      else accounts.push(ref);
    } catch (err) {
      problems.push(`DATA_ACCOUNTS: entry ${index + 1}: ${(err as Error).message}`);
    }
  });
  if (!containersText) return { accounts, mountSources: [], sharedAreas: [] };
  const containers: { account: string; container: string }[] = [];
  containersText.split(',').forEach((entry, index) => {
    const m = /^([a-z0-9]{3,24})\/([a-z0-9-]{1,63}\*?)$/.exec(entry.trim());
    if (!m) problems.push(`DATA_CONTAINERS: entry ${index + 1} must be "account/container" or "account/prefix*", got "${entry.trim()}"`);
    else if (!accounts.some((a) => a.accountName === m[1])) problems.push(`DATA_CONTAINERS: entry ${index + 1}: account "${m[1]}" is not in DATA_ACCOUNTS`);
    else containers.push({ account: m[1], container: m[2] });
  });
  return { accounts, containers, mountSources: [], sharedAreas: [] };
}

const MOUNT_SOURCE_ENTRY = /^(?:[a-z0-9][a-z0-9.-]{0,252}:\/(?!\/)[A-Za-z0-9._/-]{0,1023}|\/\/[a-z0-9][a-z0-9.-]{0,252}\/[A-Za-z0-9._/-]{1,1024})\*?$/;

/** DATA_MOUNT_SOURCES: "host:/path" (NFS) and "//host/share" (SMB) entries, each exact or a prefix ending in "*". */
function parseMountSources(text: string | undefined, problems: string[]): string[] {
  const out: string[] = [];
  (text ?? '').split(',').forEach((entry, index) => {
    const v = entry.trim();
    if (!v) return;
    if (!MOUNT_SOURCE_ENTRY.test(v))
      problems.push(`DATA_MOUNT_SOURCES: entry ${index + 1} must be "host:/path" (NFS) or "//host/share" (SMB), optionally ending in "*", got "${v}"`);
    else out.push(v);
  });
  return out;
}

/** ALLOWED_INTERNAL_HOSTS: "host" or "host:port" entries (IPv6 in brackets), comma-separated. */
function parseAllowedInternalHosts(text: string | undefined, problems: string[]): string[] {
  const out: string[] = [];
  (text ?? '').split(',').forEach((entry, index) => {
    const v = entry.trim().toLowerCase();
    if (!v) return;
    if (!/^(?:\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]{0,252}))(?::\d{1,5})?$/.test(v))
      problems.push(`ALLOWED_INTERNAL_HOSTS: entry ${index + 1} must be "host" or "host:port", got "${v}"`);
    else out.push(v);
  });
  return out;
}

/** The prefix of the app settings that hold mount secrets: MOUNT_SECRET_<name>. */
export const MOUNT_SECRET_PREFIX = 'MOUNT_SECRET_';

/** Every MOUNT_SECRET_<name> setting with a value, keyed by <name>. */
function parseMountSecrets(env: Record<string, string | undefined>, problems: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (!key.startsWith(MOUNT_SECRET_PREFIX) || value === undefined || value === '') continue;
    const name = key.slice(MOUNT_SECRET_PREFIX.length);
    if (!/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(name))
      problems.push(`${key}: the name after MOUNT_SECRET_ must be letters, digits and "_" (at most 64), starting with a letter`);
    else out[name] = value;
  }
  return out;
}

function isBase64(value: string): boolean {
  return /^[A-Za-z0-9+/]+={0,2}$/.test(value) && value.length % 4 === 0;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value as Record<string, unknown>)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** RETAIL_PRICES_URL ("off" turns the API off), PRICES_REGION (else BATCH_LOCATION, else the Batch account URL's region), PRICES_MAX_AGE_HOURS. */
function parseRetailPrices(
  e: { RETAIL_PRICES_URL?: string; PRICES_REGION?: string; PRICES_MAX_AGE_HOURS: number; BATCH_ACCOUNT_URL: string; BATCH_LOCATION?: string },
  problems: string[],
): RetailPricesConfig {
  const maxAgeMs = e.PRICES_MAX_AGE_HOURS * 3_600_000;
  const raw = e.RETAIL_PRICES_URL || RETAIL_PRICES_URL;
  if (raw === 'off') return { maxAgeMs, off: 'RETAIL_PRICES_URL is off' };
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    problems.push(`RETAIL_PRICES_URL: must be an http(s) URL or "off", got "${raw}"`);
    return { maxAgeMs, off: 'RETAIL_PRICES_URL is invalid' };
  }
  // The public API is https; plain http only for a stand-in on this machine.
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname))) {
    problems.push(`RETAIL_PRICES_URL: must be https (http only on loopback), got "${raw}"`);
  }
  const region = e.PRICES_REGION || e.BATCH_LOCATION || regionOfBatchAccountUrl(e.BATCH_ACCOUNT_URL);
  if (!region) return { maxAgeMs, url: url.toString(), off: 'no region: set PRICES_REGION (the Batch account URL names none)' };
  return { maxAgeMs, url: url.toString(), region };
}
