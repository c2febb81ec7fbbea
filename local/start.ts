/**
 * `npm start`: the local stack for interactive use, on http://127.0.0.1:7071 by default, data kept in .local/stack
 * so jobs and orchestrations survive a restart. Ctrl-C stops everything.
 */
import * as path from 'node:path';
import { Command } from 'commander';
import { startStack, REPO_ROOT } from './stack';
import { CLI_CLIENT_ID } from './identity';

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
  console.log(`Identity         ${stack.identity.issuer}  (local Entra ID tenant; users dev, reader, admin)`);
  console.log(`Operator key     ${stack.host.keys.functionKey}  (x-functions-key header: an admin; the host's function key)`);
  console.log(`Dashboard        ${stack.baseUrl}/api/dashboard  (Sign in: the local user dev)`);
  console.log('\nCLI sign-in (hpcjob login, device code; docs/cli.md):');
  console.log(`  export HPCJOB_ENDPOINT=${stack.baseUrl} HPCJOB_TENANT_ID=${stack.identity.tenantId} HPCJOB_CLIENT_ID=${CLI_CLIENT_ID}`);
  console.log(`  export HPCJOB_SCOPE=${stack.identity.scope} HPCJOB_AUTHORITY_HOST=${stack.identity.authorityHost} NODE_EXTRA_CA_CERTS=${stack.identity.caFile}`);
  console.log(`Test token       curl -s -X POST ${stack.identity.httpUrl}/local/token -d '{"user":"dev"}'`);
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
