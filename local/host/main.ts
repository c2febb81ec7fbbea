/**
 * CLI for the local Functions host, the `func start` of the embedded stack:
 *
 *   node --import tsx local/host/main.ts --app <dir> [--port 7071] [--storage <connection string>]
 *
 * Without --storage it starts its own Azurite, keeping data in <app>/.local/azurite (git-ignored).
 * Prints the banner, logs as JSON lines (pino) to stdout, and stops cleanly on SIGINT / SIGTERM.
 */
import { Command } from 'commander';
import * as path from 'node:path';
import { startAzurite, type AzuriteHandle } from '../azurite';
import { startFunctionsHost, type FunctionsHostHandle } from './index';
import { prettyDestination } from './logging';
import { localHttpPort } from '../settings/localSettings';

export interface CliOptions {
  app: string;
  port: number;
  host: string;
  storage?: string;
  azuriteLocation?: string;
  logLevel?: string;
  /** Human-readable log lines instead of JSON (default: when stdout is a terminal). */
  pretty: boolean;
}

export function parseCliArgs(argv: string[]): CliOptions {
  const program = new Command()
    .name('local-functions-host')
    .description('Run an Azure Functions v4 Node app on the embedded local host')
    .option('--app <dir>', 'function app folder (package.json main + host.json)', process.cwd())
    .option('--port <n>', 'HTTP port, 0 = any free port (default: local.settings.json Host.LocalHttpPort, else 7071)')
    .option('--host <addr>', 'listen address', '127.0.0.1')
    .option('--storage <connectionString>', 'AzureWebJobsStorage; default: start Azurite')
    .option('--azurite-location <dir>', 'Azurite data folder when Azurite is started here (default <app>/.local/azurite)')
    .option('--log-level <level>', 'pino log level (default: host.json logging.logLevel.default)')
    .option('--pretty', 'human-readable log lines (default when stdout is a terminal)')
    .option('--json', 'JSON log lines (default when stdout is not a terminal)')
    .exitOverride();
  program.parse(argv, { from: 'user' });
  const o = program.opts<{
    app: string;
    port?: string;
    host: string;
    storage?: string;
    azuriteLocation?: string;
    logLevel?: string;
    pretty?: boolean;
    json?: boolean;
  }>();
  const app = path.resolve(o.app);
  const port = o.port === undefined ? (localHttpPort(app) ?? 7071) : Number(o.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be an integer in [0, 65535], got ${o.port}`);
  const pretty = o.pretty ? true : o.json ? false : process.stdout.isTTY === true;
  return { app, port, host: o.host, storage: o.storage, azuriteLocation: o.azuriteLocation, logLevel: o.logLevel, pretty };
}

export interface RunningStack {
  host: FunctionsHostHandle;
  azurite?: AzuriteHandle;
  stop(): Promise<void>;
}

export async function startFromCli(opts: CliOptions): Promise<RunningStack> {
  let azurite: AzuriteHandle | undefined;
  let storage = opts.storage;
  if (!storage) {
    azurite = await startAzurite({ location: opts.azuriteLocation ?? path.join(opts.app, '.local', 'azurite') });
    storage = azurite.connectionString();
  }
  try {
    const host = await startFunctionsHost({
      appDir: opts.app,
      port: opts.port,
      host: opts.host,
      storageConnectionString: storage,
      logLevel: opts.logLevel,
      logDestination: opts.pretty ? prettyDestination(process.stdout.isTTY === true) : undefined,
    });
    return {
      host,
      azurite,
      stop: async () => {
        await host.stop();
        await azurite?.stop();
      },
    };
  } catch (err) {
    await azurite?.stop();
    throw err;
  }
}

async function main(): Promise<void> {
  const opts = parseCliArgs(process.argv.slice(2));
  const stack = await startFromCli(opts);
  process.stdout.write(`${stack.host.banner()}\n`);
  if (stack.azurite) process.stdout.write(`\nAzurite: blob ${stack.azurite.blobEndpoint()} (data in ${stack.azurite.location})\n`);
  process.stdout.write('\nPress Ctrl+C to stop.\n');
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      process.stderr.write(`${signal} again: exiting without a clean stop\n`);
      process.exit(1);
    }
    stopping = true;
    process.stdout.write(`\n${signal}: stopping the host\n`);
    stack.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`Error while stopping: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`local host failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
