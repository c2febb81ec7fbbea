/**
 * The main job (README's first command): starts the local stack, stages a generated data set, submits a real
 * MPI job over the public HTTP API as an Entra ID application (an access token from the local issuer, obtained
 * with @azure/identity's ClientSecretCredential, as automation would in Azure), shows live progress per stage, checks the MPI result against the totals
 * known when the data was generated, checks that cleanup left no pool, job or staged data behind, and stops.
 *
 * The stack runs keyless, as in Azure: the app gets its managed identity's tokens from the local App Service
 * identity endpoint, Azurite takes tokens and user delegation SAS only, Batch takes tokens only; the demo's own
 * uploads and checks act as the tenant's operator user with tokens too (`--shared-keys`: the keyed opt-in).
 *
 *   node dist/local/demo.js [--size-mb 300] [--spec examples/demo/native-openmpi.yaml] [--keep] [--shared-keys]
 */
import { readFileSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { Command } from 'commander';
import { startStack, REPO_ROOT, type Stack } from './stack';
import type { ExpectedResult } from '../examples/data/dataset';
import { ClientSecretCredential } from '@azure/identity';
import { checkCleanup, checkResult, submitSpec, uploadDemoInputs, watchJob, withCredential, type Caller } from './jobRunner';
import { AUTOMATION_CLIENT_ID, AUTOMATION_CLIENT_SECRET } from './identity';
import { trustingLocalIssuer } from './identity/trust';

const t0 = Date.now();
const stamp = () => `[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s]`;
const say = (msg: string) => console.log(`${stamp()} ${msg}`);

/** Submits one spec, watches it to the end, and returns what is wrong (empty when the job succeeded and left nothing). */
async function runOne(stack: Stack, caller: Caller, specFile: string, expected: ExpectedResult, timeoutMs: number, hostLog: string): Promise<string[]> {
  // Example specs name the registry as localhost:5000; the local one listens on an ephemeral port.
  const specText = readFileSync(specFile, 'utf8').replace(/localhost:5000\//g, `${stack.registry.host}/`);
  const id = await submitSpec(stack, specText, caller);
  say(`submitted ${path.relative(REPO_ROOT, specFile)} as job ${id} (POST /api/jobs → 202); watching GET /api/jobs/${id}`);
  const view = await watchJob(stack, id, timeoutMs, say, caller);
  const problems: string[] = [];
  if (view.state !== 'Succeeded') problems.push(`job ended ${view.state}: ${view.error?.message ?? ''}`);
  else problems.push(...checkResult(view, expected, say));
  problems.push(...(await checkCleanup(stack, view)));

  console.log('\nStage timings:');
  for (const [stage, t] of Object.entries(view.result?.timings ?? {})) {
    const secs = t.endedAt ? ((Date.parse(t.endedAt) - Date.parse(t.startedAt)) / 1000).toFixed(1) : '?';
    console.log(`  ${stage.padEnd(14)} ${secs.padStart(7)} s`);
  }
  if (view.result?.nodeMinutes !== undefined) console.log(`  node-minutes   ${view.result.nodeMinutes}`);
  const logs = view.result?.logs ?? [];
  console.log(`\nLogs: MPI master stdout ${logs[0]?.stdout ?? 'n/a'}${logs.length > 1 ? ` (+${logs.length - 1} subtasks)` : ''}`);
  console.log(`      control plane ${path.relative(process.cwd(), hostLog)}\n`);
  if (!problems.length) say(`job ${id} Succeeded; result verified; nothing left behind`);
  return problems;
}

async function main(): Promise<number> {
  const program = new Command()
    .name('demo')
    .description('Run the demo MPI job through the whole pipeline on the local stack')
    .option('--size-mb <n>', 'size of the generated input data set in MB', '300')
    .option('--spec <file...>', 'job spec(s) to submit, one after the other', [
      path.join(REPO_ROOT, 'examples', 'demo', 'native-openmpi.yaml'),
      path.join(REPO_ROOT, 'examples', 'demo', 'docker-openmpi.yaml'),
    ])
    .option('--timeout-s <n>', 'give up after this many seconds', '900')
    .option('--keep', 'keep the stack running afterwards (Ctrl-C to stop)', false)
    .option('--shared-keys', 'opt in to shared keys (Azurite connection strings, BATCH_ACCOUNT_KEY) instead of managed identity', false)
    .parse();
  const opts = program.opts<{ sizeMb: string; spec: string[]; timeoutS: string; keep: boolean; sharedKeys: boolean }>();

  const logDir = path.join(REPO_ROOT, '.local', 'demo');
  mkdirSync(logDir, { recursive: true });
  const hostLog = path.join(logDir, `host-${new Date().toISOString().replace(/[:.]/g, '-')}.log`);
  say('starting the local stack: Azurite (5 accounts), Batch emulator, OCI registry, Functions host + Durable engine');
  const stack = await startStack({ port: 0, logDestination: hostLog, sharedKeys: opts.sharedKeys });
  let exitCode = 1;
  try {
    say(`function app up at ${stack.baseUrl} with ${stack.host.functions().length} functions (host log: ${path.relative(process.cwd(), hostLog)})`);
    say(
      stack.keyless
        ? `keyless: the app uses its managed identity ${stack.settings.AZURE_CLIENT_ID} (App Service identity endpoint); Azurite (https) and Batch accept tokens only`
        : 'shared keys (--shared-keys): Azurite connection strings and the Batch account key in the app settings',
    );
    const expected = await uploadDemoInputs(stack, Number(opts.sizeMb), say);
    // The demo is an application of the tenant with the Jobs.Submit app role: its own jobs, nobody else's.
    const credential = new ClientSecretCredential(stack.identity.tenantId, AUTOMATION_CLIENT_ID, AUTOMATION_CLIENT_SECRET, {
      authorityHost: stack.identity.authorityHost,
      disableInstanceDiscovery: true,
      ...trustingLocalIssuer(stack.identity.caCert),
    });
    const caller = withCredential(credential, stack.identity.scope);
    await caller();
    say(`signed in as the automation application (client ${AUTOMATION_CLIENT_ID}) with ClientSecretCredential at the local issuer ${stack.identity.issuer}`);

    const failures: string[] = [];
    for (const specFile of opts.spec) {
      const problems = await runOne(stack, caller, specFile, expected, Number(opts.timeoutS) * 1000, hostLog);
      failures.push(...problems.map((p) => `${path.basename(specFile)}: ${p}`));
    }
    if (failures.length) {
      for (const p of failures) say(`FAILED: ${p}`);
    } else {
      say(`all ${opts.spec.length} job(s) Succeeded; results verified; pools, Batch jobs and staged shards cleaned up`);
      exitCode = 0;
    }
    if (opts.keep) {
      say(
        `stack kept at ${stack.baseUrl} (operator key ${stack.host.keys.functionKey}; dashboard ${stack.baseUrl}/api/dashboard, sign in as dev); Ctrl-C to stop`,
      );
      await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
    }
  } finally {
    await stack.stop();
  }
  return exitCode;
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`${stamp()} demo failed: ${err.stack ?? err.message}`);
    process.exit(1);
  },
);
