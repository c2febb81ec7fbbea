/**
 * Child-process entry for the pipeline crash test: only the Functions host + Durable engine run here, so the
 * test can SIGKILL them while Azurite, the Batch emulator and the registry (Azure services) keep running.
 *   HOST_SETTINGS='<json app settings>' node --import tsx tests/e2e/helpers/hostProcess.ts <port> <storageConnectionString>
 * Prints "READY <baseUrl>" on stdout once serving; the host's JSON log goes to stdout after it.
 */
import { REPO_ROOT } from '../../../local/stack';
import { startFunctionsHost } from '../../../local/host';
import { createDurableExtension } from '../../../local/durable';
import { CHILD_KEYS } from './childHost';

async function main(): Promise<void> {
  const [port, connectionString] = process.argv.slice(2);
  const settings = JSON.parse(process.env.HOST_SETTINGS ?? 'null') as Record<string, string> | null;
  if (!port || !connectionString || !settings) throw new Error('usage: HOST_SETTINGS=<json> hostProcess.ts <port> <storageConnectionString>');
  const host = await startFunctionsHost({
    appDir: REPO_ROOT,
    port: Number(port),
    storageConnectionString: connectionString,
    keys: CHILD_KEYS,
    env: settings,
    logLevel: 'info',
    logDestination: 1,
    // Short leases so messages and work items held by a killed host are redelivered within seconds.
    extensions: [createDurableExtension({ maxPollingIntervalMs: 250, controlVisibilitySeconds: 5, workItemVisibilitySeconds: 10 })],
  });
  process.stdout.write(`READY ${host.baseUrl}\n`);
  const shutdown = (): void => {
    void host.stop().then(() => process.exit(0));
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

main().catch((err: unknown) => {
  process.stderr.write(`host process failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
