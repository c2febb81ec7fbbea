/**
 * The main job (README's first command): starts the local stack, stages a generated data set, submits a real
 * MPI job over the public HTTP API, shows live progress per stage, checks the MPI result against the totals
 * known when the data was generated, checks that cleanup left no pool, job or staged data behind, and stops.
 *
 *   node dist/local/demo.js [--size-mb 300] [--spec examples/demo/native-openmpi.yaml] [--keep]
 */
import { readFileSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { Command } from 'commander';
import { startStack, REPO_ROOT } from './stack';
import { checkCleanup, checkResult, submitSpec, uploadDemoInputs, watchJob } from './jobRunner';

const t0 = Date.now();
const stamp = () => `[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s]`;
const say = (msg: string) => console.log(`${stamp()} ${msg}`);

async function main(): Promise<number> {
  const program = new Command()
    .name('demo')
    .description('Run the demo MPI job through the whole pipeline on the local stack')
    .option('--size-mb <n>', 'size of the generated input data set in MB', '300')
    .option('--spec <file>', 'job spec to submit', path.join(REPO_ROOT, 'examples', 'demo', 'native-openmpi.yaml'))
    .option('--timeout-s <n>', 'give up after this many seconds', '900')
    .option('--keep', 'keep the stack running afterwards (Ctrl-C to stop)', false)
    .parse();
  const opts = program.opts<{ sizeMb: string; spec: string; timeoutS: string; keep: boolean }>();

  const logDir = path.join(REPO_ROOT, '.local', 'demo');
  mkdirSync(logDir, { recursive: true });
  const hostLog = path.join(logDir, `host-${new Date().toISOString().replace(/[:.]/g, '-')}.log`);
  say('starting the local stack: Azurite (5 accounts), Batch emulator, OCI registry, Functions host + Durable engine');
  const stack = await startStack({ port: 0, logDestination: hostLog });
  let exitCode = 1;
  try {
    say(`function app up at ${stack.baseUrl} with ${stack.host.functions().length} functions (host log: ${path.relative(process.cwd(), hostLog)})`);
    const expected = await uploadDemoInputs(stack, Number(opts.sizeMb), say);

    const specText = readFileSync(opts.spec, 'utf8');
    const id = await submitSpec(stack, specText);
    say(`submitted job ${id} (POST /api/jobs → 202); watching GET /api/jobs/${id}`);
    const view = await watchJob(stack, id, Number(opts.timeoutS) * 1000, say);

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
    console.log('\nLogs (Batch task files):');
    for (const l of view.result?.logs ?? []) console.log(`  ${l.node}: ${l.stdout}`);
    console.log(`  control plane: ${path.relative(process.cwd(), hostLog)}`);
    console.log('');
    if (problems.length) {
      for (const p of problems) say(`FAILED: ${p}`);
    } else {
      say(`job ${id} Succeeded; result verified; pool, Batch job and staged shards cleaned up`);
      exitCode = 0;
    }
    if (opts.keep) {
      say(`stack kept at ${stack.baseUrl} (function key ${stack.host.keys.functionKey}); Ctrl-C to stop`);
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
