/**
 * The emulated Azure services of the local stack: Azurite (several accounts), the Batch emulator with the node
 * tools, and the OCI registry holding the demo image. With a data folder each keeps its state there and asks
 * for the ports it had before (see ports.ts):
 *
 *   <data>/azurite/    Azurite's stores (saved when it stops; see docs/local-stack.md for what a SIGKILL loses)
 *   <data>/batch/      the Batch account (state.json) and the node sandboxes
 *   <data>/registry/   the OCI image layout the registry serves (the demo image is written into it at start)
 *   <data>/identity/   the local identity service's TLS certificate and signing key (kept: saved sign-ins survive a restart)
 *   <data>/webhooks/   the webhook receiver's secret and every delivery it got (deliveries.jsonl)
 *   <data>/ports.json  the ports taken at the first start
 *
 * Beside them, a stand-in of the Azure Retail Prices API (local/prices: stand-in prices, nothing to keep).
 *
 * Without one, everything lives in temp folders removed on stop and every port is ephemeral (tests).
 *
 * Keyless by default, as in Azure: Azurite serves https with the identity service's certificate and accepts only
 * the local tenant's tokens and user delegation SAS (local/azurite/keylessGate.cjs), the Batch account allows
 * Microsoft Entra ID only, and this process trusts the certificate (local/identity/processTrust.ts). `sharedKeys`
 * is the opt-in to the old shape: Azurite over http with its account keys, the Batch account's shared key allowed.
 */
import * as path from 'node:path';
import { mkdir } from 'node:fs/promises';
import { startAzurite, type AzuriteHandle, type StartAzuriteOptions as AzuriteOptions } from '../azurite';
import { startBatchEmulator, type BatchEmulatorHandle, type BatchEmulatorOptions } from '../batch';
import { startRegistry, type RegistryHandle } from '../registry';
import { startWebhookReceiver, type WebhookReceiver } from '../webhooks';
import { startRetailPricesStandIn, type RetailPricesStandIn } from '../prices';
import { OPERATOR_USER, createEntraTokenVerifier, startIdentityService, type IdentityService } from '../identity';
import { DEMO_SECRET, DEMO_SECRET_VALUE, DEMO_VAULT, DEMO_VAULT_SEED, seedWithReaders, startKeyVault, type KeyVaultHandle } from '../keyvault';
import { trustCertificateInProcess } from '../identity/processTrust';
import { operatorAccess, type OperatorAccess } from '../operatorAccess';
import { localIdentityWiring } from './identityWiring';
import { buildDemoImage } from '../../examples/images/buildDemoImage';
import { choosePorts, portInUse, readPorts, recordPorts, type StackPorts } from './ports';
import { startReleaseServers } from '../releaseServer';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import { exampleNetwork, type ExampleHeadnode } from '../exampleNetwork';
import { startLicenceServer, type LicenceServer } from '../licenceServer';

/** The second emulated Batch account's name (ServicesOptions.secondBatch). */
export const SECOND_BATCH_ACCOUNT = 'localbatch2';

export interface ServicesOptions {
  /** Folder for persistent data. Default: temp folders removed on stop, ephemeral ports. */
  dataDir?: string;
  /** Ports to ask for (0 or absent: the recorded one, else any free one); `host` is not used here. */
  ports?: Partial<StackPorts>;
  /** Registry concurrent pull limit (default 10, the limit real registries start throttling at in the seeds). */
  registryMaxConcurrentPulls?: number;
  registryBandwidthBytesPerSec?: number;
  /** Batch emulator options (timing, faults). With a data folder `persist` defaults to true. */
  batch?: Partial<BatchEmulatorOptions>;
  /**
   * A second emulated Batch account (placement over several accounts, docs/local-stack.md): its own emulator with
   * its own name, data plane, management plane and quota; these options over the first's wiring. Default: none.
   */
  secondBatch?: Partial<BatchEmulatorOptions>;
  /** Whether to build and serve the demo image (default true). */
  demoImage?: boolean;
  /** Size of the demo image's filler layer (bytes). */
  demoImageFillerBytes?: number;
  /** The repository root (for the node tools on the emulated nodes' PATH). */
  repoRoot: string;
  /**
   * Opt in to shared keys: Azurite over http accepting its account keys, the Batch account's shared key allowed
   * (default false: keyless, tokens only, as in Azure).
   */
  sharedKeys?: boolean;
  /**
   * The registry as a private one (ACR's token service: pulls need the pool identity or the registry credential) or
   * open (anyone pulls; default, so specs without container.registry keep working). See docs/local-registry.md.
   */
  registryAccess?: 'open' | 'private';
  /** Each request arriving at Azurite (StartAzuriteOptions.onRequest): for counting storage calls. */
  onStorageRequest?: AzuriteOptions['onRequest'];
  /** Each job event the webhook receiver accepts (a valid, signed CloudEvent), as it arrives. */
  onJobEvent?: (event: Record<string, unknown>) => void;
  /**
   * Vaults of the local Key Vault (local/keyvault): secrets, and who may read them (default: the pool identity).
   * Default: the demo vault "hpclocal" with one secret "demo-license-key".
   */
  keyVault?: Record<string, { secrets: Record<string, string>; readers?: string[] }>;
  /**
   * Serve the examples' virtual network (local/exampleNetwork.ts): the head node's NFS server 10.20.0.4 in subnet
   * "compute", its exports in `<data>/headnode/` (a temp folder without a data folder). Default false.
   */
  exampleNetwork?: boolean;
}

export interface Services {
  azurite: AzuriteHandle;
  batch: BatchEmulatorHandle;
  /** The second emulated Batch account, when asked for (ServicesOptions.secondBatch). */
  batch2?: BatchEmulatorHandle;
  registry: RegistryHandle;
  /** The local Entra ID tenant's stand-in (issuer, token endpoint, App Service Authentication's user tokens). */
  identity: IdentityService;
  /** The registry's pull credential (user name, password) when it is private: what REGISTRY_CREDENTIALS names. */
  registryCredential?: { username: string; password: string };
  /** The receiver the stack registers as the webhook for job events (docs/events.md). */
  webhooks: WebhookReceiver;
  /** The Azure Retail Prices API's stand-in (node prices for the cost record and the dry run). */
  prices: RetailPricesStandIn;
  /** The local Key Vault's secrets endpoint (KEY_VAULT_URL_TEMPLATE points at it). */
  keyVault: KeyVaultHandle;
  /** The head node's export directories, when the examples' network is served (ServicesOptions.exampleNetwork). */
  headnode?: ExampleHeadnode;
  /** The examples' licence server (10.0.0.4:27000 in their subnet), when their network is served. */
  licenceServer?: LicenceServer;
  /** Keyless (the default) or with shared keys (the opt-in). */
  keyless: boolean;
  /** The services as the operator reaches them directly (tokens of the tenant's `admin`, or the keys). */
  operator: OperatorAccess;
  /** The ports the services got (host: what was asked for, filled in by whoever starts the host). */
  ports: Omit<StackPorts, 'host'>;
  /** Stops the Batch emulator (saving its account), the registry, then Azurite (saving its stores). */
  stop(): Promise<void>;
}

export async function startServices(opts: ServicesOptions): Promise<Services> {
  const dataDir = opts.dataDir;
  const want = dataDir ? choosePorts(opts.ports ?? {}, readPorts(dataDir)) : (opts.ports ?? {});
  const sub = async (name: string): Promise<string | undefined> => {
    if (!dataDir) return undefined;
    const dir = path.join(dataDir, name);
    await mkdir(dir, { recursive: true });
    return dir;
  };
  const started: { stop(): Promise<void> }[] = [];
  const keyless = !opts.sharedKeys;
  try {
    const identity = await startIdentityService({ dataDir: await sub('identity'), httpsPort: want.identity, httpPort: want.identityHttp }).catch(
      (err: unknown) => {
        throw (['identity', 'identityHttp'] as const).reduce((e, s) => portInUse(e, s, want[s], dataDir), err as Error);
      },
    );
    started.push(identity);
    // This process talks https to Azurite (the Batch emulator's resource files, an in-process app, the operator).
    const release = keyless ? trustCertificateInProcess(identity.caCert) : () => undefined;
    started.push({ stop: async () => release() });
    const azurite = await startAzurite({
      location: await sub('azurite'),
      ports: { blob: want.blob, queue: want.queue, table: want.table },
      onRequest: opts.onStorageRequest,
      keyless: keyless ? { certFile: identity.caFile, keyFile: identity.keyFile, tenantId: identity.tenantId, jwks: identity.jwks() } : undefined,
    }).catch((err: unknown) => {
      throw (['blob', 'queue', 'table'] as const).reduce((e, s) => portInUse(e, s, want[s], dataDir), err as Error);
    });
    started.push(azurite);

    const wiring = localIdentityWiring(identity);
    const registryCredential = opts.registryAccess === 'private' ? wiring.registryCredential() : undefined;
    const registryDir = await sub('registry');
    const images = opts.demoImage === false ? [] : [await buildDemoImage({ fillerBytes: opts.demoImageFillerBytes, layoutDir: registryDir })];
    const registry = await startRegistry({
      port: want.registry,
      maxConcurrentPulls: opts.registryMaxConcurrentPulls ?? 10,
      bandwidthBytesPerSec: opts.registryBandwidthBytesPerSec,
      // With a data folder the registry serves its layout (the demo image was just written into it; the build is
      // reproducible, so the digests a node resolved before a restart are still there).
      images: registryDir ? [{ layoutDir: registryDir }] : images,
      ...(registryCredential ? { auth: wiring.registryAuth(registryCredential) } : {}),
    }).catch((err: unknown) => {
      throw portInUse(err, 'registry', want.registry, dataDir);
    });
    started.push(registry);

    // The public release servers the examples download from (wrf-release.example.org), stood in for with the stack's
    // certificate; the nodes resolve those hosts to them (hostAliases) and trust the certificate.
    const releases = await startReleaseServers(opts.repoRoot, { cert: identity.caCert, key: readFileSync(identity.keyFile, 'utf8') });
    started.push(releases);
    // The examples' head node: kept in the data folder, or in a temp folder removed on stop.
    const headnodeTemp = opts.exampleNetwork && !dataDir ? mkdtempSync(path.join(os.tmpdir(), 'headnode-')) : undefined;
    if (headnodeTemp) started.push({ stop: async () => rmSync(headnodeTemp, { recursive: true, force: true }) });
    // The examples' licence server grants the site key the local Key Vault holds (the demo value, or a test's).
    const vaultSeed = opts.keyVault ?? DEMO_VAULT_SEED;
    const licenceServer = opts.exampleNetwork ? await startLicenceServer({ key: vaultSeed[DEMO_VAULT]?.secrets[DEMO_SECRET] ?? DEMO_SECRET_VALUE }) : undefined;
    if (licenceServer) started.push(licenceServer);
    const network = opts.exampleNetwork ? exampleNetwork(headnodeTemp ?? ((await sub('headnode')) as string), opts.repoRoot, licenceServer) : undefined;
    const batch = await startBatchEmulator({
      dataDir: await sub('batch'),
      persist: dataDir !== undefined,
      port: want.batch,
      nodePath: [path.join(opts.repoRoot, 'local', 'batch', 'nodetools', 'bin')],
      // Batch accounts accept Microsoft Entra ID; the shared key only when the stack opted in to keys.
      sharedKey: !keyless,
      aad: { tenantId: identity.tenantId, jwks: () => identity.jwks(), roles: wiring.batchDataRoles },
      identity: wiring.nodeIdentities,
      arm: { ...wiring.arm, port: want.arm },
      ...opts.batch,
      // Nodes reach this stack's https storage as Azure nodes reach Azure Storage (a CA they trust), and the release
      // servers (with the same certificate), whatever other servers a caller adds.
      trustedCertificates: [identity.caCert, ...(opts.batch?.trustedCertificates ?? [])],
      hostAliases: { ...releases.aliases, ...(opts.batch?.hostAliases ?? {}) },
      ...(network ? { networkServices: [...network.services, ...(opts.batch?.networkServices ?? [])] } : {}),
    }).catch((err: unknown) => {
      throw portInUse(err, 'batch', want.batch, dataDir);
    });
    started.push(batch);
    // The second account: the same tenant, roles and node wiring, its own name, ports (any free ones) and quota.
    const batch2 = opts.secondBatch
      ? await startBatchEmulator({
          dataDir: await sub('batch2'),
          persist: dataDir !== undefined,
          nodePath: [path.join(opts.repoRoot, 'local', 'batch', 'nodetools', 'bin')],
          sharedKey: !keyless,
          aad: { tenantId: identity.tenantId, jwks: () => identity.jwks(), roles: wiring.batchDataRoles },
          identity: wiring.nodeIdentities,
          arm: { ...wiring.arm },
          accountName: SECOND_BATCH_ACCOUNT,
          ...opts.secondBatch,
          trustedCertificates: [...(keyless ? [identity.caCert] : []), ...(opts.secondBatch.trustedCertificates ?? [])],
        })
      : undefined;
    if (batch2) started.push(batch2);

    const webhooks = await startWebhookReceiver({ port: want.webhooks, dataDir: await sub('webhooks'), onEvent: opts.onJobEvent }).catch((err: unknown) => {
      throw portInUse(err, 'webhooks', want.webhooks, dataDir);
    });
    started.push(webhooks);

    const prices = await startRetailPricesStandIn({ port: want.prices }).catch((err: unknown) => {
      throw portInUse(err, 'prices', want.prices, dataDir);
    });
    started.push(prices);
    const keyVault = await startKeyVault({
      port: want.keyVault,
      seed: seedWithReaders(vaultSeed, [wiring.pool.principalId]),
      verify: createEntraTokenVerifier({ jwks: () => identity.jwks(), tenantId: identity.tenantId }),
      tenantId: identity.tenantId,
      authority: identity.authorityHost,
    }).catch((err: unknown) => {
      throw portInUse(err, 'keyVault', want.keyVault, dataDir);
    });
    started.push(keyVault);

    const ports = {
      blob: azurite.ports.blob,
      queue: azurite.ports.queue,
      table: azurite.ports.table,
      batch: Number(new URL(batch.url).port),
      registry: Number(new URL(registry.url).port),
      webhooks: webhooks.port,
      arm: Number(new URL(batch.armUrl as string).port),
      identity: Number(new URL(identity.authorityHost).port),
      identityHttp: Number(new URL(identity.httpUrl).port),
      prices: prices.port,
      keyVault: keyVault.port,
    };
    if (dataDir) recordPorts(dataDir, ports);
    const operator = operatorAccess({ batch, storage: azurite }, keyless ? identity.userCredential(OPERATOR_USER) : undefined);
    return {
      azurite,
      batch,
      ...(batch2 ? { batch2 } : {}),
      registry,
      identity,
      ...(registryCredential ? { registryCredential } : {}),
      webhooks,
      prices,
      keyVault,
      ...(network ? { headnode: network.headnode } : {}),
      ...(licenceServer ? { licenceServer } : {}),
      keyless,
      operator,
      ports,
      async stop() {
        await keyVault.stop();
        await batch.stop();
        await batch2?.stop();
        await registry.stop();
        await azurite.stop();
        await identity.stop();
        await webhooks.stop();
        await prices.stop();
        await licenceServer?.stop();
        await releases.stop();
        if (headnodeTemp) rmSync(headnodeTemp, { recursive: true, force: true });
        release();
      },
    };
  } catch (err) {
    for (const s of started.reverse()) await s.stop().catch(() => undefined);
    throw err;
  }
}
