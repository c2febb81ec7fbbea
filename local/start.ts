/**
 * `npm start`: the local stack for interactive use, on http://127.0.0.1:7071 by default, data kept in .local/stack
 * so jobs and orchestrations survive a restart. Ctrl-C stops everything.
 */
import * as path from 'node:path';
import { Command } from 'commander';
import { startStack, REPO_ROOT } from './stack';

async function main(): Promise<void> {
  const opts = new Command()
    .name('start')
    .option('--port <n>', 'Functions host port', '7071')
    .option('--data <dir>', 'folder for persistent data', path.join(REPO_ROOT, '.local', 'stack'))
    .parse()
    .opts<{ port: string; data: string }>();
  const stack = await startStack({ port: Number(opts.port), dataDir: opts.data });
  console.log(stack.host.banner());
  console.log(`\nBatch emulator   ${stack.batch.url}  (account ${stack.batch.accountName})`);
  console.log(`OCI registry     ${stack.registry.url}  (demo image ${stack.registry.host}/hpc/mpi-demo:1.0)`);
  console.log(`Azurite          ${stack.azurite.blobEndpoint()}  (accounts: ${stack.azurite.accounts.map((a) => a.name).join(', ')})`);
  console.log(`Function key     ${stack.host.keys.functionKey}  (x-functions-key header for POST/DELETE /api/jobs)`);
  console.log(
    `Durable API key  ${stack.host.keys.systemKeys?.durabletask_extension ?? '(none)'}  (code= for ${stack.baseUrl}/runtime/webhooks/durabletask/...; keys in .local/function-keys.json)`,
  );
  console.log('\nCtrl-C to stop.');
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await stack.stop();
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
