/**
 * Child-process entry for crash tests (spawned by tests/helpers/childHost.ts): runs the local Functions host +
 * Durable engine over an app until killed, so a test can SIGKILL the control plane while Azurite (and the Batch
 * emulator) keep running.
 *   [HOST_SETTINGS='<json app settings>'] [HOST_KEYS='<json {functionKey, masterKey}>'] \
 *   [HOST_IDENTITY_ENDPOINT='<json {endpoint, header}>'] \
 *   node --import tsx tests/helpers/hostProcess.ts <appDir> <storageConnectionString | -> [port]
 * `-`: the host's storage comes from the settings (a keyless stack's identity-based AzureWebJobsStorage__*).
 * Prints "READY <baseUrl>" on stdout once serving; every log line after it is pino JSON on stdout.
 */
import { startFunctionsHost } from '../../local/host';
import { createDurableExtension } from '../../local/durable';

async function main(): Promise<void> {
  const [appDir, connectionString, port] = process.argv.slice(2);
  if (!appDir || !connectionString) throw new Error('usage: hostProcess.ts <appDir> <storageConnectionString | -> [port]');
  const host = await startFunctionsHost({
    appDir,
    port: Number(port ?? 0),
    storageConnectionString: connectionString === '-' ? undefined : connectionString,
    identityEndpoint: process.env.HOST_IDENTITY_ENDPOINT ? (JSON.parse(process.env.HOST_IDENTITY_ENDPOINT) as { endpoint: string; header: string }) : undefined,
    keys: process.env.HOST_KEYS ? JSON.parse(process.env.HOST_KEYS) : { functionKey: 'k', masterKey: 'm' },
    env: process.env.HOST_SETTINGS ? (JSON.parse(process.env.HOST_SETTINGS) as Record<string, string>) : undefined,
    logLevel: 'info',
    logDestination: 1,
    // Short leases so messages and work items held by a killed host are redelivered within seconds.
    queueHoldSeconds: 10,
    // The idle polling cap: 1 s (host.json says 5 s), so a restarted host takes up what a killed one held within a
    // second of its return; at 200 ms an idle host polled its two queues ten times a second for nothing (e2e/chaos +
    // e2e/crash under jest -i: 48.9 -> 46.8 CPU-s).
    extensions: [createDurableExtension({ maxPollingIntervalMs: 1000, controlVisibilitySeconds: 5, workItemVisibilitySeconds: 10 })],
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
