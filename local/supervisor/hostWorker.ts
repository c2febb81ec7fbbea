/**
 * The Functions host and its Durable engine as a process of their own: what the supervisor (./index.ts) starts,
 * and starts again when it dies, as the Functions runtime restarts a crashed language worker. Storage, Batch and
 * the registry live in other processes, so this one can be SIGKILLed at any moment without losing anything that
 * was acknowledged.
 *
 * IPC protocol: the supervisor sends `{ type: 'start', config }`; the worker answers `{ type: 'ready', ... }`
 * once it serves HTTP, or `{ type: 'failed', message }` and exits 1. SIGTERM or SIGINT stops the host cleanly
 * (HTTP drained, trigger listeners and the Durable engine stopped) and exits 0; so does the IPC channel closing
 * (the supervisor died).
 */
import { startFunctionsHost, type FunctionsHostHandle } from '../host';
import { createDurableExtension, type DurableOptions } from '../durable';
import { createLocalEasyAuth, remoteEasyAuthIdentity } from '../identity/easyAuth';
import pino from 'pino';
import { prettyDestination, type LogDestination } from '../host/logging';

export interface HostWorkerConfig {
  appDir: string;
  port: number;
  /**
   * The host's own storage (AzureWebJobsStorage of the Durable engine and the triggers) as a connection string
   * (shared keys); absent on a keyless stack, where the host reads the identity-based settings like the app.
   */
  storage?: string;
  /** The App Service managed identity endpoint the host sets for itself and the app (IDENTITY_ENDPOINT/_HEADER). */
  identityEndpoint?: { endpoint: string; header: string };
  /** The stack's certificate (PEM file): the worker starts with NODE_EXTRA_CA_CERTS set to it (https Azurite). */
  caFile?: string;
  /** App settings. */
  settings: Record<string, string>;
  logLevel?: string;
  /** Where the host's log goes (appended); default stdout. */
  logFile?: string;
  /**
   * With a log file: what of the log also shows on the terminal (stdout), from which level: readable one-line
   * entries (`pretty`, npm start's default from warn) or the JSON lines themselves (`json`). Absent: nothing.
   */
  consoleLog?: ConsoleLog;
  durable?: DurableOptions;
  /** The local identity service's loopback http origin: App Service Authentication's sign-in for the dashboard. */
  identityHttpUrl?: string;
}

export interface ConsoleLog {
  level: string;
  format: 'pretty' | 'json';
}

function logDestination(config: HostWorkerConfig): LogDestination | undefined {
  if (!config.logFile || !config.consoleLog) return config.logFile;
  const { level, format } = config.consoleLog;
  const stream = format === 'pretty' ? prettyDestination(process.stdout.isTTY === true) : pino.destination({ dest: 1, sync: true });
  return { file: config.logFile, console: { level, stream } };
}

export type WorkerMessage = { type: 'ready'; pid: number; baseUrl: string; banner: string; functionKey: string } | { type: 'failed'; message: string };

export type SupervisorMessage = { type: 'start'; config: HostWorkerConfig };

/** Resolves once the message is handed to the channel (so an exit right after does not drop it). */
function send(msg: WorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) resolve();
    else process.send(msg, () => resolve());
  });
}

async function run(config: HostWorkerConfig): Promise<void> {
  let host: FunctionsHostHandle | undefined = undefined;
  let stopping: Promise<void> | undefined;
  const stop = (why: string): void => {
    stopping ??= (async () => {
      host?.log.info({ why }, 'Functions host worker stopping');
      await host?.stop();
      process.exit(0);
    })().catch((err: unknown) => {
      process.stderr.write(`Functions host worker: error while stopping: ${(err as Error).stack ?? String(err)}\n`);
      process.exit(1);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('disconnect', () => stop('the supervisor is gone'));
  host = await startFunctionsHost({
    appDir: config.appDir,
    port: config.port,
    storageConnectionString: config.storage,
    identityEndpoint: config.identityEndpoint,
    extensions: [
      createDurableExtension(config.durable),
      ...(config.identityHttpUrl ? [createLocalEasyAuth(remoteEasyAuthIdentity(config.identityHttpUrl))] : []),
    ],
    env: config.settings,
    logLevel: config.logLevel,
    logDestination: logDestination(config),
  });
  if (stopping) return;
  await send({ type: 'ready', pid: process.pid, baseUrl: host.baseUrl, banner: host.banner(), functionKey: host.keys.functionKey });
}

if (require.main === module) {
  // Output may outlive its reader (the supervisor died): a write to a closed pipe must not crash a clean stop.
  process.stdout.on('error', () => undefined);
  process.stderr.on('error', () => undefined);
  if (!process.send) {
    process.stderr.write('hostWorker.ts is started by the stack supervisor (local/supervisor), with an IPC channel\n');
    process.exit(2);
  }
  process.once('message', (msg: SupervisorMessage) => {
    run(msg.config).catch(async (err: unknown) => {
      const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
      process.stderr.write(`Functions host worker failed to start: ${message}\n`);
      await send({ type: 'failed', message });
      process.exit(1);
    });
  });
}
