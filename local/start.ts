/**
 * `npm start`: the local stack for interactive use, on http://127.0.0.1:7071 by default, every service's data and
 * ports kept in .local/stack so jobs, orchestrations, pools and images survive a restart. The emulated services
 * run under a supervisor, apart from the Functions host (see local/supervisor/index.ts and docs/local-stack.md).
 *
 *   Ctrl-C / SIGTERM   stop everything cleanly (host first, then Batch, registry and Azurite, each saving its state)
 *   SIGHUP             restart only the Functions host (e.g. after `npm run build`)
 *
 * Keyless by default, as in Azure (tokens only; see docs/local-stack.md); `--shared-keys` opts in to Azurite's and
 * the Batch emulator's keys.
 */
import * as path from 'node:path';
import { Command, Option } from 'commander';
import { REPO_ROOT } from './stack';
import { startSupervisedStack, type SupervisedStack } from './supervisor';
import { APP_IDENTITY, CLI_CLIENT_ID } from './identity';
import { jobLinePrinter } from './supervisor/jobLines';
import { hostLogLevels } from './supervisor/logLevels';
import { seedExamples } from './seedExamples';
import { DATA_ACCOUNT } from './azurite';

async function main(): Promise<void> {
  const opts = new Command()
    .name('start')
    .option('--port <n>', 'Functions host port (default: the one recorded in the data folder, else 7071; 0 = any free port, then kept)')
    .option('--data <dir>', 'folder for persistent data', path.join(REPO_ROOT, '.local', 'stack'))
    .option('--log <file>', "the Functions host's full JSON log (appended; default: <data>/logs/host.log)")
    .option('--log-level <level>', 'what of the host log the console shows besides job lines: debug, info, warn (default warn); the file has at least info')
    .addOption(
      new Option(
        '--log-console <mode>',
        'the console: jobs (the banner, one line per job transition, host warnings) or json (the full JSON log too, as before)',
      )
        .choices(['jobs', 'json'])
        .default('jobs'),
    )
    .option(
      '--shared-keys',
      'opt in to shared keys: Azurite over http with its account keys, connection strings and BATCH_ACCOUNT_KEY in the app settings (default: keyless, managed identity as in Azure)',
    )
    .option('--two-batch-accounts', 'run a second emulated Batch account (localbatch2) and place jobs over both (BATCH_ACCOUNTS; docs/local-stack.md)')
    .option('--pool-identity', 'deploy with a pool identity: pools from the management plane with id-pool-local (docs/local-batch.md)')
    .option('--no-seed-examples', 'do not put what the examples read (software, cases, inputs/demo/) into the data account')
    .option(
      '--no-example-network',
      "do not serve the examples' network: the head node NFS server 10.20.0.4, the NetApp Files, Azure Files NFS and Lustre stand-ins 10.20.0.5-7 and the licence server 10.0.0.4:27000 in subnet compute, the pools' default subnet (docs/local-stack.md)",
    )
    .option('--private-registry', 'make the registry private: pulls need the pool identity or the registry credential (docs/local-registry.md)')
    .parse()
    .opts<{
      port?: string;
      data: string;
      log?: string;
      logLevel?: string;
      logConsole: 'jobs' | 'json';
      sharedKeys?: boolean;
      poolIdentity?: boolean;
      twoBatchAccounts?: boolean;
      privateRegistry?: boolean;
      seedExamples: boolean;
      exampleNetwork: boolean;
    }>();
  const logFile = opts.log ? path.resolve(opts.log) : path.join(path.resolve(opts.data), 'logs', 'host.log');
  const levels = hostLogLevels(opts.logLevel, opts.logConsole);
  const say = (line: string): void => console.log(`[stack] ${line}`);
  // Signal handlers come first: a Ctrl-C during start-up stops the stack as soon as it is up, cleanly.
  // npm forwards the terminal's SIGINT to us as well, so one Ctrl-C can arrive twice: a stop in progress goes on.
  let stack: SupervisedStack | undefined = undefined;
  let stopRequested: NodeJS.Signals | undefined;
  const stop = (): void => {
    (stack as SupervisedStack).stop().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(`[stack] error while stopping: ${(err as Error).stack ?? String(err)}`);
        process.exit(1);
      },
    );
  };
  const onStop = (signal: NodeJS.Signals): void => {
    if (stopRequested) {
      say(`${signal}: already stopping, saving every service's state`);
      return;
    }
    stopRequested = signal;
    say(`${signal}: stopping${stack ? '' : ' once started'}`);
    if (stack) stop();
  };
  process.on('SIGINT', onStop);
  process.on('SIGTERM', onStop);
  process.on('SIGHUP', () => {
    if (!stack || stopRequested) return;
    say('SIGHUP: restarting the Functions host');
    void stack.restartHost();
  });

  stack = await startSupervisedStack({
    dataDir: opts.data,
    appDir: REPO_ROOT,
    repoRoot: REPO_ROOT,
    port: opts.port === undefined ? undefined : Number(opts.port),
    poolIdentity: opts.poolIdentity === true,
    twoBatchAccounts: opts.twoBatchAccounts === true,
    registryAccess: opts.privateRegistry ? 'private' : 'open',
    exampleNetwork: opts.exampleNetwork,
    logFile,
    logLevel: levels.file,
    consoleLog: levels.console,
    // One line per job transition, from the job events the stack's webhook receiver gets (docs/events.md).
    onJobEvent: jobLinePrinter((line) => console.log(line)),
    sharedKeys: opts.sharedKeys,
    say,
  });
  const { azurite, batch, registry, identity, webhooks } = stack.services;
  if (opts.seedExamples) {
    // The examples run as written (docs/workloads.md): what they read is put where they name it, once.
    try {
      const seeded = await seedExamples(stack.services.operator.blobService(DATA_ACCOUNT.name), REPO_ROOT);
      say(
        seeded.uploaded.length
          ? `examples' data seeded in ${DATA_ACCOUNT.name}: ${seeded.uploaded.join(', ')}`
          : `examples' data already in ${DATA_ACCOUNT.name} (${seeded.unchanged} blobs unchanged)`,
      );
    } catch (err) {
      say(`examples' data not seeded (the examples that read it will fail): ${(err as Error).message}`);
    }
  }
  console.log(stack.host()?.ready.banner ?? '');
  console.log(`\nBatch emulator   ${batch.url}  (account ${batch.accountName})`);
  console.log(`OCI registry     ${registry.url}  (demo image ${registry.host}/hpc/mpi-demo:1.0)`);
  console.log(
    `Azurite          ${azurite.blobEndpoint()}  (accounts: ${azurite.accounts.map((a) => a.name).join(', ')}; ${stack.services.keyless ? 'keyless: tokens and user delegation SAS only' : 'shared keys (--shared-keys)'})`,
  );
  console.log(
    `Identity         ${identity.issuer}  (local Entra ID tenant; users dev, reader, admin; the app's identity ${APP_IDENTITY.name} through ${identity.appServiceIdentity.endpoint})`,
  );
  console.log(`Webhook receiver ${webhooks.url}  (job events; GET ${new URL(webhooks.url).origin}/deliveries lists them)`);
  console.log(`Retail Prices    ${stack.services.prices.url}  (stand-in of prices.azure.com: stand-in prices, region eastus)`);
  if (stack.services.headnode)
    console.log(
      `Head node NFS    10.20.0.4:/export/apps, /export/data in subnet compute  (served from ${path.dirname(stack.services.headnode.apps)}; --no-example-network)`,
    );
  if (stack.services.headnode)
    console.log(
      'Managed file sys NetApp Files 10.20.0.5:/hpcapps, Azure Files NFS data1.file.core.windows.net:/data1/cases (10.20.0.6), Lustre 10.20.0.7@tcp:/lustrefs',
    );
  if (stack.services.keyless)
    console.log(`Certificate      ${identity.caFile}  (Azurite and the issuer speak https with it: NODE_EXTRA_CA_CERTS for your own Node tools)`);
  console.log(`Operator key     ${stack.functionKey}  (x-functions-key header: an admin; the host's function key)`);
  console.log(
    `Durable API key  ${stack.durableSystemKey ?? '(none)'}  (code= for ${stack.baseUrl}/runtime/webhooks/durabletask/...; keys in .local/function-keys.json)`,
  );
  console.log(`Dashboard        ${stack.baseUrl}/api/dashboard  (Sign in: the local user dev)`);
  console.log('\nCLI sign-in (hpcjob login, device code; docs/cli.md):');
  console.log(`  export HPCJOB_ENDPOINT=${stack.baseUrl} HPCJOB_TENANT_ID=${identity.tenantId} HPCJOB_CLIENT_ID=${CLI_CLIENT_ID}`);
  console.log(`  export HPCJOB_SCOPE=${identity.scope} HPCJOB_AUTHORITY_HOST=${identity.authorityHost} NODE_EXTRA_CA_CERTS=${identity.caFile}`);
  console.log(`Test token       curl -s -X POST ${identity.httpUrl}/local/token -d '{"user":"dev"}'`);
  console.log(`Data             ${stack.dataDir}  (ports in ports.json, running processes in supervisor.json)`);
  console.log(
    `Host log         ${logFile}  (full JSON log; the console shows job transitions and host entries from ${levels.console.level}; --log-level, --log-console json)`,
  );
  console.log(`\nCtrl-C to stop; kill -HUP ${process.pid} restarts only the Functions host.`);
  say(`ready (supervisor pid ${process.pid}, host pid ${stack.host()?.pid})`);
  if (stopRequested) stop();
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
