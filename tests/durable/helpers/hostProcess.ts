/**
 * Child-process entry for crash tests: runs the local host + Durable engine over an app until killed.
 *   node --import tsx tests/durable/helpers/hostProcess.ts <appDir> <storageConnectionString>
 * Prints "READY <baseUrl>" on stdout once serving; every log line after it is pino JSON on stdout.
 */
import { startFunctionsHost } from '../../../local/host';
import { createDurableExtension } from '../../../local/durable';

async function main(): Promise<void> {
  const [appDir, connectionString] = process.argv.slice(2);
  if (!appDir || !connectionString) throw new Error('usage: hostProcess.ts <appDir> <storageConnectionString>');
  const host = await startFunctionsHost({
    appDir,
    port: 0,
    storageConnectionString: connectionString,
    keys: { functionKey: 'k', masterKey: 'm' },
    logLevel: 'info',
    logDestination: 1,
    extensions: [createDurableExtension({ maxPollingIntervalMs: 200, controlVisibilitySeconds: 5, workItemVisibilitySeconds: 10 })],
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
