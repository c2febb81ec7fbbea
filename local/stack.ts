/**
 * The embedded local stack: Azurite (several accounts), the Azure Batch emulator with node tools, an OCI
 * registry holding the demo image, the local identity service (the Entra ID tenant's stand-in), and the local
 * Functions host with the Durable engine running the unchanged function app. Only configuration (the
 * environment below) differs from Azure.
 */
import * as path from 'node:path';
import { mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { startAzurite, DATA_ACCOUNT, STAGING_ACCOUNTS, type AzuriteHandle } from './azurite';
import { startBatchEmulator, type BatchEmulatorHandle, type BatchEmulatorOptions } from './batch';
import { startRegistry, type RegistryHandle } from './registry';
import { buildDemoImage } from '../examples/images/buildDemoImage';
import { startFunctionsHost, type FunctionsHostHandle } from './host';
import { createDurableExtension } from './durable';
import { startIdentityService, type IdentityService } from './identity';
import { createLocalEasyAuth } from './identity/easyAuth';
import { defaultKeysFile, loadOrCreateKeys, type HostKeys } from './host/keys';

/** The repository root, whether this file runs from sources (tsx, jest) or from dist/. */
export const REPO_ROOT = findRepoRoot(__dirname);

function findRepoRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'host.json')) && existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no host.json above ${from}`);
  }
}

export interface StackOptions {
  /** Folder for persistent data (Azurite, Batch node sandboxes). Default: fresh temp dirs removed on stop. */
  dataDir?: string;
  /** Functions host port (default 7071; 0 for an ephemeral port). */
  port?: number;
  /** The function app folder (default: this repository, compiled to dist/). */
  appDir?: string;
  /** Registry concurrent pull limit (default 10, the limit real registries start throttling at in the seeds). */
  registryMaxConcurrentPulls?: number;
  registryBandwidthBytesPerSec?: number;
  /** Batch emulator options (timing, faults). */
  batch?: Partial<BatchEmulatorOptions>;
  /** Extra app settings. */
  env?: Record<string, string>;
  /**
   * The AzureWebJobsStorage the function app sees, built once Azurite's ports are known (e.g. with its
   * TableEndpoint behind a fault-injecting proxy). The host's own storage (the Durable engine's) stays on
   * Azurite. Default: Azurite's connection string.
   */
  appStorage?: (azurite: AzuriteHandle) => string | Promise<string>;
  /** Whether to build and serve the demo image (default true). */
  demoImage?: boolean;
  logLevel?: string;
  /** Where the host's structured log goes (default stdout). */
  logDestination?: import('./host').FunctionsHostOptions['logDestination'];
  /** Size of the demo image's filler layer (bytes). */
  demoImageFillerBytes?: number;
  /** The local user the dashboard signs in as (/.auth/login/aad); default the tenant's default user, `dev`. */
  dashboardUser?: string;
}

export interface Stack {
  azurite: AzuriteHandle;
  batch: BatchEmulatorHandle;
  registry: RegistryHandle;
  host: FunctionsHostHandle;
  /** The local Entra ID stand-in: issuer, token endpoint, users (docs/security.md). */
  identity: IdentityService;
  /** The app settings the function app was started with. */
  settings: Record<string, string>;
  baseUrl: string;
  stop(): Promise<void>;
}

/** App settings for the local stack: the same names as in Azure, pointing at local services. */
export function localAppSettings(azurite: AzuriteHandle, batch: BatchEmulatorHandle): Record<string, string> {
  return {
    FUNCTIONS_WORKER_RUNTIME: 'node',
    AzureWebJobsStorage: azurite.connectionString(),
    BATCH_ACCOUNT_URL: batch.url,
    BATCH_ACCOUNT_NAME: batch.accountName,
    BATCH_ACCOUNT_KEY: batch.accountKey,
    STAGING_ACCOUNTS: STAGING_ACCOUNTS.map((a) => azurite.connectionString(a.name)).join(','),
    // Users' data lives in its own account: jobs can never name the host storage or the staging accounts.
    DATA_ACCOUNTS: azurite.connectionString(DATA_ACCOUNT.name),
    POLL_INITIAL_MS: '500',
    POLL_MAX_MS: '2000',
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

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const stopOnError: (() => Promise<void>)[] = [];
  const sub = async (name: string) => {
    if (!opts.dataDir) return undefined;
    const dir = path.join(opts.dataDir, name);
    await mkdir(dir, { recursive: true });
    return dir;
  };
  try {
    const identity = await startIdentityService({ dataDir: await sub('identity') });
    stopOnError.push(() => identity.stop());
    const azurite = await startAzurite({ location: await sub('azurite') });
    stopOnError.push(() => azurite.stop());
    const registry = await startRegistry({
      maxConcurrentPulls: opts.registryMaxConcurrentPulls ?? 10,
      bandwidthBytesPerSec: opts.registryBandwidthBytesPerSec,
      images: opts.demoImage === false ? [] : [await buildDemoImage({ fillerBytes: opts.demoImageFillerBytes })],
    });
    stopOnError.push(() => registry.stop());
    const batch = await startBatchEmulator({
      dataDir: await sub('batch'),
      nodePath: [path.join(REPO_ROOT, 'local', 'batch', 'nodetools', 'bin')],
      ...opts.batch,
    });
    stopOnError.push(() => batch.stop());
    const appDir = opts.appDir ?? REPO_ROOT;
    const keys = loadOrCreateKeys(defaultKeysFile(appDir));
    const settings: Record<string, string> = {
      ...localAppSettings(azurite, batch), LOCAL_REGISTRY: registry.host, ...localAuthSettings(identity, keys), ...opts.env,
    };
    if (opts.appStorage) settings.AzureWebJobsStorage = await opts.appStorage(azurite);
    const host = await startFunctionsHost({
      appDir,
      port: opts.port ?? 7071,
      storageConnectionString: azurite.connectionString(),
      keys,
      extensions: [createDurableExtension(), createLocalEasyAuth(identity, { user: opts.dashboardUser })],
      env: settings,
      logLevel: opts.logLevel,
      logDestination: opts.logDestination,
    });
    return {
      azurite,
      batch,
      registry,
      host,
      identity,
      settings,
      baseUrl: host.baseUrl,
      async stop() {
        await host.stop();
        await batch.stop();
        await registry.stop();
        await azurite.stop();
        await identity.stop();
      },
    };
  } catch (err) {
    for (const stop of stopOnError.reverse()) await stop().catch(() => undefined);
    throw err;
  }
}
