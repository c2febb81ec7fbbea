/**
 * The embedded local stack in one process: the emulated services (Azurite, the Azure Batch emulator with node
 * tools, an OCI registry holding the demo image, the local identity service standing in for the Entra ID tenant;
 * see supervisor/services.ts) and the local Functions host with the Durable engine running the unchanged function app. Only configuration (the environment below) differs
 * from Azure. Tests and the demo use this; `npm start` runs the same parts with the host in its own process
 * under a supervisor (supervisor/index.ts), so the app can crash or restart while the services keep running.
 */
import { DATA_ACCOUNT, STAGING_ACCOUNTS, type AzuriteHandle, type StorageArrival } from './azurite';
import type { BatchEmulatorHandle, BatchEmulatorOptions } from './batch';
import { DEFAULT_LOCATION } from './batch/arm/server';
import { APP_IDENTITY } from './identity/managedIdentities';
import type { OperatorAccess } from './operatorAccess';
import type { RegistryHandle } from './registry';
import { startFunctionsHost, type FunctionsHostHandle, type InvocationRecord } from './host';
import { createDurableExtension, type DurableExtension, type DurableOptions } from './durable';
import type { IdentityService } from './identity';
import { createLocalEasyAuth } from './identity/easyAuth';
import { defaultKeysFile, loadOrCreateKeys, type HostKeys } from './host/keys';
import { startServices, type Services } from './supervisor/services';
import { localIdentityWiring } from './supervisor/identityWiring';
import { localPriceSettings } from './prices';
import { localWebhookSettings, type WebhookReceiver } from './webhooks';
import { exampleNetworkSettings, type ExampleHeadnode } from './exampleNetwork';
import type { LicenceServer } from './licenceServer';
import { findRepoRoot } from './compiledEntry';

/** The repository root, whether this file runs from sources (tsx, jest) or from dist/. */
export const REPO_ROOT = findRepoRoot(__dirname);

export interface StackOptions {
  /**
   * Folder for persistent data: Azurite's stores, the Batch account (persisted) and its node sandboxes, the
   * registry's images, the ports taken at the first start. Default: fresh temp dirs removed on stop.
   */
  dataDir?: string;
  /** Functions host port (default 7071; 0 for an ephemeral port). */
  port?: number;
  /** The function app folder (default: this repository, compiled to dist/). */
  appDir?: string;
  /** Registry concurrent pull limit (default 10, the limit real registries start throttling at in the seeds). */
  registryMaxConcurrentPulls?: number;
  registryBandwidthBytesPerSec?: number;
  /** Batch emulator options (timing, faults; `persist` defaults to true with a dataDir). */
  batch?: Partial<BatchEmulatorOptions>;
  /**
   * Run a second emulated Batch account with these options (e.g. its `quota`), and give the deployment both
   * (BATCH_ACCOUNTS; docs/local-stack.md "Two Batch accounts"). Default: one account, as before.
   */
  secondBatch?: Partial<BatchEmulatorOptions>;
  /** Extra app settings. */
  env?: Record<string, string>;
  /** Vaults of the local Key Vault (secrets, readers; default readers: the pool identity). Default: the demo vault. */
  keyVault?: Record<string, { secrets: Record<string, string>; readers?: string[] }>;
  /**
   * The AzureWebJobsStorage the function app sees, built once Azurite's ports are known (e.g. with its
   * TableEndpoint behind a fault-injecting proxy). The host's own storage (the Durable engine's) stays on
   * Azurite. A connection string: needs `sharedKeys`.
   */
  appStorage?: (azurite: AzuriteHandle) => string | Promise<string>;
  /**
   * Opt in to shared keys: Azurite over http with its account keys, connection strings and BATCH_ACCOUNT_KEY in the
   * app settings. Default false: keyless, the same identity-based settings as in Azure (see localAppSettings).
   */
  sharedKeys?: boolean;
  /** Whether to build and serve the demo image (default true). */
  demoImage?: boolean;
  logLevel?: string;
  /** Where the host's structured log goes (default stdout). */
  logDestination?: import('./host').FunctionsHostOptions['logDestination'];
  /** Size of the demo image's filler layer (bytes). */
  demoImageFillerBytes?: number;
  /** The local user the dashboard signs in as (/.auth/login/aad); default the tenant's default user, `dev`. */
  dashboardUser?: string;
  /**
   * Run the deployment with a pool identity (docs/local-batch.md): pools come from the management plane with the
   * id-pool-local identity, and the app reaches Resource Manager as id-app-local through its managed identity endpoint.
   */
  poolIdentity?: boolean;
  /** The registry private (tokens required) or open (default). */
  registryAccess?: 'open' | 'private';
  /** Each request arriving at Azurite, as it arrives (local/testing/callCounter.ts counts them). */
  onStorageRequest?: (request: StorageArrival) => void;
  /** Each function execution of the host as it ends (local/testing/callCounter.ts counts them per job). */
  onInvocation?: (record: InvocationRecord) => void;
  /** Durable engine options beyond host.json (e.g. maxConcurrentWhileHostBusy; benchmarks compare settings). */
  durable?: DurableOptions;
  /**
   * Serve the examples' virtual network as `npm start` does (local/exampleNetwork.ts): the head node's NFS server
   * 10.20.0.4 in subnet "compute", the NetApp Files, Azure Files NFS and Lustre stand-ins 10.20.0.5-7, and
   * DATA_MOUNT_SOURCES allowing them. Default false.
   */
  exampleNetwork?: boolean;
}

export interface Stack {
  azurite: AzuriteHandle;
  batch: BatchEmulatorHandle;
  /** The second emulated Batch account (StackOptions.secondBatch). */
  batch2?: BatchEmulatorHandle;
  registry: RegistryHandle;
  host: FunctionsHostHandle;
  /** The host's Durable engine (its counters and settings, for tests and benchmarks). */
  durable: DurableExtension;
  /** The local Entra ID stand-in: issuer, token endpoint, users (docs/security.md). */
  identity: IdentityService;
  /** The webhook receiver registered for job events (local/webhooks). */
  webhooks: WebhookReceiver;
  /** The services as the operator reaches them directly (the tenant's `admin` user's tokens, or the keys). */
  operator: OperatorAccess;
  /** Keyless (the default) or with shared keys (the opt-in). */
  keyless: boolean;
  /** The app settings the function app was started with. */
  settings: Record<string, string>;
  /** The head node's export directories (StackOptions.exampleNetwork). */
  headnode?: ExampleHeadnode;
  /** The examples' licence server at 10.0.0.4:27000 (StackOptions.exampleNetwork; local/licenceServer.ts). */
  licenceServer?: LicenceServer;
  baseUrl: string;
  stop(): Promise<void>;
}

/**
 * The local data account's shared read-only areas: example software and SIF images, example cases, the demo's inputs.
 * Its container `shared` (the WRF example's blobfuse scratch) is shared read-write.
 */
export const LOCAL_SHARED_AREAS: readonly string[] = ['software/', 'images/', 'cases/', 'inputs/demo/'];

/**
 * App settings for the local stack: the same names as in Azure, pointing at local services. Keyless (the default):
 * the identity-based settings infra/main.bicep gives the app, with Azurite's path-style endpoints as service URIs
 * (AzureWebJobsStorage__*ServiceUri, STAGING_ACCOUNTS and DATA_ACCOUNTS as blob service URIs, since `__accountName`
 * means https://<name>.<service>.core.windows.net) and the user-assigned identity's client id; no key anywhere. The
 * platform's IDENTITY_ENDPOINT/IDENTITY_HEADER are not app settings: the host sets them (`identityEndpoint`). With
 * an Azurite that takes shared keys (the opt-in): Azurite connection strings and the emulator's key.
 */
/**
 * The local registry's settings: where it is (LOCAL_REGISTRY) and that jobs may name it although it listens on
 * 127.0.0.1 (ALLOWED_INTERNAL_HOSTS, that host and port only: every other loopback address stays refused).
 */
export function localRegistrySettings(registryHost: string): Record<string, string> {
  // The examples name the registry localhost:5000 (as Docker's docs do): intake rewrites it to this one.
  return { LOCAL_REGISTRY: registryHost, ALLOWED_INTERNAL_HOSTS: registryHost, REGISTRY_ALIASES: `localhost:5000=${registryHost}` };
}

export function localAppSettings(azurite: AzuriteHandle, batch: BatchEmulatorHandle): Record<string, string> {
  const common = {
    FUNCTIONS_WORKER_RUNTIME: 'node',
    BATCH_ACCOUNT_URL: batch.url,
    BATCH_ACCOUNT_NAME: batch.accountName,
    // Polling for a stack whose Batch answers in milliseconds (the emulator allocates and boots in 300 ms). A durable
    // timer fires in whole seconds (a control-queue message's visibility delay, local/durable/store.ts, as in Azure),
    // so a wait is at least 1 s: 500 ms doubling to a 1 s cap polls every second, and the looks at node tasks and
    // checks are capped at 2 s (with the default 30 s cap, a preflight or staging wait of 20 s could be seen up to
    // 15 s late; with a 2 s cap Batch still sees one request per look, whatever the nodes). Azure keeps its defaults.
    POLL_INITIAL_MS: '500',
    POLL_MAX_MS: '1000',
    POLL_LOOK_MAX_MS: '2000',
    // The emulated nodes' "fabric" is a loopback on one shared machine: the preflight ping-pong is measured and
    // recorded, but not held to the InfiniBand thresholds of the VM size a job names (a spec's own thresholds apply).
    PREFLIGHT_FABRIC_DEFAULTS: 'false',
    // The node health checks the emulator models (local/batch/model/hardware.ts: InfiniBand ports, ib_write_bw loopback,
    // STREAM) and the site's own check; CPU count and memory are the machine's, syslog's link flaps the machine's, and
    // there are no GPUs: those are not judged here (docs/local-batch.md "Modelled node hardware").
    PREFLIGHT_HEALTH_CHECKS: 'ib,ibbw,stream,site',
    // What the demo and the examples read (local/jobRunner.ts seeds it): shared read-only with every caller; each
    // user's own data and every job's outputs live in users/<ownerKey>/ (docs/security.md, "Data areas").
    // Every job keeps the full stdout/stderr of every task (issue 27 item 5), in its owner's area of the data
    // account's results container unless the spec opts out (cleanup.keepLogs: false).
    DEFAULT_OUTPUTS: `${DATA_ACCOUNT.name}/results`,
    SHARED_DATA_AREAS: [...LOCAL_SHARED_AREAS.map((c) => `${DATA_ACCOUNT.name}/${c}|read|*`), `${DATA_ACCOUNT.name}/shared/|write|*`].join(','),
  };
  if (!azurite.keyless) {
    return {
      ...common,
      AzureWebJobsStorage: azurite.connectionString(),
      BATCH_ACCOUNT_KEY: batch.accountKey,
      STAGING_ACCOUNTS: STAGING_ACCOUNTS.map((a) => azurite.connectionString(a.name)).join(','),
      // Users' data lives in its own account: jobs can never name the host storage or the staging accounts.
      DATA_ACCOUNTS: azurite.connectionString(DATA_ACCOUNT.name),
    };
  }
  return {
    ...common,
    AzureWebJobsStorage__blobServiceUri: azurite.blobEndpoint(),
    AzureWebJobsStorage__queueServiceUri: azurite.queueEndpoint(),
    AzureWebJobsStorage__tableServiceUri: azurite.tableEndpoint(),
    AzureWebJobsStorage__credential: 'managedidentity',
    AzureWebJobsStorage__clientId: APP_IDENTITY.clientId,
    AZURE_CLIENT_ID: APP_IDENTITY.clientId,
    STAGING_ACCOUNTS: STAGING_ACCOUNTS.map((a) => azurite.blobEndpoint(a.name)).join(','),
    DATA_ACCOUNTS: azurite.blobEndpoint(DATA_ACCOUNT.name),
  };
}

/**
 * App settings of the app's own authentication on the local stack: tokens of the local issuer (metadata read over
 * loopback http, see local/identity), and the host's function key as the operator key, so `--key`, the dashboard's
 * key field and scripts holding the function key keep working as the operator.
 */
export function localAuthSettings(identity: IdentityService, keys: HostKeys): Record<string, string> {
  return {
    AUTH_ISSUER: identity.issuer,
    AUTH_AUDIENCES: identity.audiences.join(','),
    AUTH_METADATA_URL: identity.metadataUrl,
    OPERATOR_API_KEYS: keys.functionKey,
  };
}

/**
 * App settings of a deployment with a pool identity on the local stack: where the Batch account sits in Resource
 * Manager (the emulator's management endpoint), the pool identity, and the app's own identity (AZURE_CLIENT_ID), whose
 * Resource Manager tokens come from the managed identity endpoint the host gives the app (IDENTITY_ENDPOINT), as for
 * Storage and Batch. With a private registry, its credential as a registry secret setting.
 */
export function localIdentitySettings(
  services: Pick<Services, 'identity' | 'batch' | 'registry' | 'registryCredential' | 'keyVault'>,
  poolIdentity: boolean,
): Record<string, string> {
  const wiring = localIdentityWiring(services.identity);
  // Nodes reach the local Key Vault's vaults as http://127.0.0.1:<port>/<vault> (local/keyvault).
  const settings: Record<string, string> = { KEY_VAULT_URL_TEMPLATE: services.keyVault.urlTemplate };
  if (poolIdentity) {
    if (!services.batch.armUrl) throw new Error('the Batch emulator serves no management plane');
    Object.assign(settings, {
      BATCH_SUBSCRIPTION_ID: wiring.arm.subscriptionId,
      BATCH_RESOURCE_GROUP: wiring.arm.resourceGroup,
      POOL_IDENTITY_RESOURCE_ID: wiring.pool.resourceId,
      POOL_IDENTITY_CLIENT_ID: wiring.pool.clientId,
      ARM_ENDPOINT: services.batch.armUrl,
      // The emulated account's region: the VM sizes validation checks are the ones it lists there (docs/azure-facts.md).
      BATCH_LOCATION: DEFAULT_LOCATION,
      // Also with shared keys (whose settings name no identity): DefaultAzureCredential picks the app's identity by it.
      AZURE_CLIENT_ID: wiring.app.clientId,
    });
  }
  if (services.registryCredential) {
    // In Azure this setting would be a Key Vault reference; locally it holds the registry's development credential.
    settings.REGISTRY_CREDENTIALS = `${services.registry.host}=LOCAL_REGISTRY_PASSWORD`;
    settings.LOCAL_REGISTRY_PASSWORD = services.registryCredential.password;
    settings.LOCAL_REGISTRY_USERNAME = services.registryCredential.username;
  }
  return settings;
}

/**
 * The deployment's Batch accounts when the stack runs two (BATCH_ACCOUNTS): the home account first, then the second
 * with its own management endpoint (each emulated account serves its own; in Azure both sit behind
 * management.azure.com) and, with shared keys, the same development key under BATCH_ACCOUNT_KEY. Nothing with one.
 */
export function localBatchAccountsSettings(services: Pick<Services, 'batch' | 'batch2' | 'keyless'>): Record<string, string> {
  const { batch, batch2 } = services;
  if (!batch2) return {};
  return {
    BATCH_ACCOUNTS: JSON.stringify([
      { name: batch.accountName, url: batch.url },
      {
        name: batch2.accountName,
        url: batch2.url,
        location: DEFAULT_LOCATION,
        ...(batch2.armUrl ? { armEndpoint: batch2.armUrl } : {}),
        ...(services.keyless ? {} : { keySetting: 'BATCH_ACCOUNT_KEY' }),
      },
    ]),
  };
}

/**
 * Job events on the local stack: the stack's webhook receiver is registered as the webhook `local`; the CloudEvents
 * source is the host's URL when its port is known before it starts (not for an ephemeral port: then it is relative).
 */
export function localEventSettings(webhooks: Pick<WebhookReceiver, 'url' | 'secret'>, hostPort: number): Record<string, string> {
  return { ...localWebhookSettings(webhooks), ...(hostPort ? { EVENTS_SOURCE_URL: `http://127.0.0.1:${hostPort}` } : {}) };
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const services = await startServices({
    registryAccess: opts.registryAccess,
    dataDir: opts.dataDir,
    registryMaxConcurrentPulls: opts.registryMaxConcurrentPulls,
    registryBandwidthBytesPerSec: opts.registryBandwidthBytesPerSec,
    batch: opts.batch,
    ...(opts.secondBatch ? { secondBatch: opts.secondBatch } : {}),
    demoImage: opts.demoImage,
    demoImageFillerBytes: opts.demoImageFillerBytes,
    repoRoot: REPO_ROOT,
    sharedKeys: opts.sharedKeys,
    onStorageRequest: opts.onStorageRequest,
    keyVault: opts.keyVault,
    exampleNetwork: opts.exampleNetwork,
  });
  const { azurite, batch, registry, identity, webhooks } = services;
  try {
    const appDir = opts.appDir ?? REPO_ROOT;
    const keys = loadOrCreateKeys(defaultKeysFile(appDir));
    const port = opts.port ?? 7071;
    const settings: Record<string, string> = {
      ...localAppSettings(azurite, batch),
      ...localRegistrySettings(registry.host),
      ...localAuthSettings(identity, keys),
      ...localEventSettings(webhooks, port),
      ...localIdentitySettings(services, opts.poolIdentity === true),
      ...localPriceSettings(services.prices),
      ...localBatchAccountsSettings(services),
      ...(opts.exampleNetwork ? exampleNetworkSettings() : {}),
      ...opts.env,
    };
    // A test's own internal hosts (a download server on 127.0.0.1) come in addition to the registry.
    if (opts.env?.ALLOWED_INTERNAL_HOSTS) settings.ALLOWED_INTERNAL_HOSTS = `${registry.host},${opts.env.ALLOWED_INTERNAL_HOSTS}`;
    if (opts.appStorage) {
      if (!opts.sharedKeys) throw new Error('startStack: appStorage is a connection string, which needs sharedKeys');
      settings.AzureWebJobsStorage = await opts.appStorage(azurite);
    }
    const durable = createDurableExtension(opts.durable);
    const host = await startFunctionsHost({
      appDir,
      port,
      // The host's own storage: Azurite's connection string with shared keys; else the app's identity-based settings.
      storageConnectionString: opts.sharedKeys ? azurite.connectionString() : undefined,
      identityEndpoint: identity.appServiceIdentity,
      keys,
      extensions: [durable, createLocalEasyAuth(identity, { user: opts.dashboardUser })],
      env: settings,
      logLevel: opts.logLevel,
      logDestination: opts.logDestination,
      onInvocation: opts.onInvocation,
    });
    return {
      azurite,
      batch,
      ...(services.batch2 ? { batch2: services.batch2 } : {}),
      registry,
      host,
      durable,
      identity,
      webhooks,
      operator: services.operator,
      keyless: services.keyless,
      settings,
      ...(services.headnode ? { headnode: services.headnode } : {}),
      ...(services.licenceServer ? { licenceServer: services.licenceServer } : {}),
      baseUrl: host.baseUrl,
      async stop() {
        await host.stop();
        await services.stop();
      },
    };
  } catch (err) {
    await services.stop().catch(() => undefined);
    throw err;
  }
}
