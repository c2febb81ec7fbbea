/**
 * The supervised local stack (`npm start`): infrastructure apart from the app, as in Azure.
 *
 *   supervisor process ── Batch emulator, OCI registry (in process)
 *        ├── Azurite (child process, own process group)
 *        └── Functions host + Durable engine (child process, own process group; ./hostWorker.ts)
 *
 * The host worker can crash (SIGKILL) or be restarted on its own (SIGHUP to the supervisor, like restarting the
 * Function App): it comes back on the same port against the same services, which kept running. When it dies
 * unexpectedly the supervisor starts it again, as the Functions runtime restarts a crashed language worker, after
 * a short delay that grows while it keeps crashing. A stop (SIGINT, SIGTERM) stops the host first, then the Batch
 * emulator (saving its account), the registry, then Azurite (saving its stores), and exits. Every service keeps
 * its state and its ports under the data folder. See docs/local-stack.md.
 */
import * as path from 'node:path';
import { mkdirSync } from 'node:fs';
import type { DurableOptions } from '../durable';
import { localAppSettings, localAuthSettings, localBatchAccountsSettings, localEventSettings, localIdentitySettings, localRegistrySettings } from '../stack';
import { exampleNetworkSettings } from '../exampleNetwork';
import { localPriceSettings } from '../prices';
import { defaultKeysFile, loadOrCreateKeys } from '../host/keys';
import { HostWorkerProcess } from './hostProcess';
import type { ConsoleLog } from './hostWorker';
import { choosePorts, portInUse, readPorts, recordPorts } from './ports';
import { claimDataDir, processRef, removeRuntime, writeRuntime, type RuntimeRecord } from './runtime';
import { startServices, type Services } from './services';

export interface SupervisorOptions {
  /** Folder every service keeps its data and recorded ports in. */
  dataDir: string;
  /** The function app folder (package.json main + host.json); the app loads compiled from dist/. */
  appDir: string;
  /** The repository root (node tools, tsx). */
  repoRoot: string;
  /** Functions host port: non-zero wins; else the recorded one; else 0 (any free) or 7071 when absent. */
  port?: number;
  /** Host log file (appended across restarts); default stdout. */
  logFile?: string;
  /** With a log file: what of the host's log also shows on the terminal (see HostWorkerConfig.consoleLog). */
  consoleLog?: ConsoleLog;
  /** Each job event the stack's webhook receiver accepts (npm start prints one line per job transition). */
  onJobEvent?: (event: Record<string, unknown>) => void;
  logLevel?: string;
  durable?: DurableOptions;
  /** Opt in to shared keys (see ServicesOptions.sharedKeys); default keyless. */
  sharedKeys?: boolean;
  /** Supervisor messages (default console.log with a `[stack]` prefix). */
  say?: (line: string) => void;
  /** Deploy with a pool identity (pools from the management plane; see local/stack.ts localIdentitySettings). */
  poolIdentity?: boolean;
  /** The registry private or open (default). */
  registryAccess?: 'open' | 'private';
  /** Run a second emulated Batch account and place jobs over both (`npm start -- --two-batch-accounts`). */
  twoBatchAccounts?: boolean;
  /** Serve the examples' virtual network (local/exampleNetwork.ts; `npm start` does unless --no-example-network). */
  exampleNetwork?: boolean;
}

export interface SupervisedStack {
  services: Services;
  dataDir: string;
  /** The running host worker (changes when it restarts). */
  host(): HostWorkerProcess | undefined;
  baseUrl: string;
  functionKey: string;
  /** The Durable management API's system key (code= on /runtime/webhooks/durabletask/...), once the host made it. */
  durableSystemKey: string | undefined;
  /** Stops the host worker cleanly and starts a new one (the SIGHUP action). */
  restartHost(): Promise<void>;
  /** The full clean stop (the SIGINT/SIGTERM action). */
  stop(): Promise<void>;
}

const FIRST_RESTART_DELAY_MS = 500;
const MAX_RESTART_DELAY_MS = 30_000;
/** A worker that ran this long is healthy again: its next crash restarts it after the first delay. */
const HEALTHY_AFTER_MS = 60_000;

export async function startSupervisedStack(opts: SupervisorOptions): Promise<SupervisedStack> {
  const say = opts.say ?? ((line: string) => console.log(`[stack] ${line}`));
  const dataDir = path.resolve(opts.dataDir);
  mkdirSync(dataDir, { recursive: true });
  await claimDataDir(dataDir, say);

  const services = await startServices({
    dataDir,
    repoRoot: opts.repoRoot,
    sharedKeys: opts.sharedKeys,
    registryAccess: opts.registryAccess,
    onJobEvent: opts.onJobEvent,
    ...(opts.twoBatchAccounts ? { secondBatch: {} } : {}),
    exampleNetwork: opts.exampleNetwork,
  });
  const { azurite, batch, registry, identity, webhooks } = services;
  const keysFile = defaultKeysFile(opts.appDir);
  const hostPort = choosePorts({ host: opts.port }, readPorts(dataDir)).host ?? 7071;
  const settings: Record<string, string> = {
    ...localAppSettings(azurite, batch),
    ...localRegistrySettings(registry.host),
    ...localAuthSettings(identity, loadOrCreateKeys(keysFile)),
    ...localEventSettings(webhooks, hostPort),
    ...localIdentitySettings(services, opts.poolIdentity === true),
    ...localPriceSettings(services.prices),
    ...localBatchAccountsSettings(services),
    ...(opts.exampleNetwork ? exampleNetworkSettings() : {}),
  };
  const startedAt = new Date().toISOString();

  let current: HostWorkerProcess | undefined;
  let starts = 0;
  let stopping: Promise<void> | undefined;
  let restartTimer: NodeJS.Timeout | undefined;
  let restartDelay = FIRST_RESTART_DELAY_MS;
  let port = hostPort;

  const record = (w: HostWorkerProcess): RuntimeRecord => ({
    supervisor: processRef(process.pid),
    dataDir,
    startedAt,
    baseUrl: w.ready.baseUrl,
    functionKey: w.ready.functionKey,
    host: { ...processRef(w.pid), startedAt: new Date(w.startedAt).toISOString(), starts },
    azurite: { ...processRef(azurite.pid), blob: azurite.blobEndpoint(), queue: azurite.queueEndpoint(), table: azurite.tableEndpoint() },
    batch: { url: batch.url, accountName: batch.accountName },
    registry: { url: registry.url, host: registry.host },
    webhooks: { url: webhooks.url },
    keyless: services.keyless,
    identity: { httpUrl: identity.httpUrl, issuer: identity.issuer, caFile: identity.caFile },
  });

  let starting: Promise<HostWorkerProcess> | undefined;
  const startWorker = (): Promise<HostWorkerProcess> => {
    const start = launchWorker();
    starting = start;
    void start
      .catch(() => undefined)
      .finally(() => {
        if (starting === start) starting = undefined;
      });
    return start;
  };

  const launchWorker = async (): Promise<HostWorkerProcess> => {
    const w = await HostWorkerProcess.start(
      {
        appDir: opts.appDir,
        port,
        settings,
        logLevel: opts.logLevel,
        logFile: opts.logFile,
        consoleLog: opts.consoleLog,
        durable: opts.durable,
        storage: services.keyless ? undefined : azurite.connectionString(),
        identityEndpoint: identity.appServiceIdentity,
        caFile: services.keyless ? identity.caFile : undefined,
        identityHttpUrl: identity.httpUrl,
      },
      opts.repoRoot,
    ).catch((err: unknown) => {
      throw portInUse(err, 'host', port, dataDir);
    });
    starts++;
    current = w;
    port = Number(new URL(w.ready.baseUrl).port);
    recordPorts(dataDir, { host: port });
    writeRuntime(dataDir, record(w));
    void w.exited.then((exit) => {
      if (stopping || current !== w || w.stopRequested) return;
      current = undefined;
      const ranMs = Date.now() - w.startedAt;
      if (ranMs >= HEALTHY_AFTER_MS) restartDelay = FIRST_RESTART_DELAY_MS;
      say(
        `the Functions host (pid ${w.pid}) died (${exit.signal ?? `exit code ${exit.code}`}); restarting it in ${restartDelay / 1000} s against the same services`,
      );
      scheduleRestart();
    });
    return w;
  };

  const scheduleRestart = (): void => {
    const delay = restartDelay;
    restartDelay = Math.min(restartDelay * 2, MAX_RESTART_DELAY_MS);
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      if (stopping) return;
      startWorker().then(
        (w) => say(`the Functions host is back (pid ${w.pid}) at ${w.ready.baseUrl}`),
        (err: Error) => {
          say(`the Functions host could not start: ${err.message}; trying again in ${restartDelay / 1000} s`);
          scheduleRestart();
        },
      );
    }, delay);
  };

  let first: HostWorkerProcess;
  try {
    first = await startWorker();
  } catch (err) {
    await services.stop().catch(() => undefined);
    throw err;
  }

  const stack: SupervisedStack = {
    services,
    dataDir,
    host: () => current,
    baseUrl: first.ready.baseUrl,
    functionKey: first.ready.functionKey,
    // The host makes the Durable extension's system key on first start and keeps it in the keys file.
    get durableSystemKey() {
      return loadOrCreateKeys(keysFile).systemKeys?.durabletask_extension;
    },
    async restartHost() {
      if (stopping) return;
      if (restartTimer) {
        clearTimeout(restartTimer);
        restartTimer = undefined;
      }
      await starting?.catch(() => undefined);
      const old = current;
      current = undefined;
      if (old) await old.stop();
      restartDelay = FIRST_RESTART_DELAY_MS;
      try {
        const w = await startWorker();
        say(`the Functions host was restarted (pid ${w.pid}) at ${w.ready.baseUrl}`);
      } catch (err) {
        say(`the Functions host could not start: ${(err as Error).message}; trying again in ${restartDelay / 1000} s`);
        scheduleRestart();
      }
    },
    stop() {
      stopping ??= (async () => {
        if (restartTimer) clearTimeout(restartTimer);
        // A host that is starting (a restart under way) is stopped too, once it is up or has failed.
        await starting?.catch(() => undefined);
        const w = current;
        if (w) {
          say(`stopping the Functions host (pid ${w.pid})`);
          await w.stop();
        }
        say('stopping the Batch emulator (saving its account), the registry and Azurite (saving its stores)');
        await services.stop();
        removeRuntime(dataDir);
        say('stopped; everything is saved under ' + dataDir);
      })();
      return stopping;
    },
  };
  return stack;
}
