#!/usr/bin/env node
/**
 * hpcjob: the command-line client of the HPC MPI job API. Each command lives in cli/commands; this file only
 * declares the command line and turns errors into one line on stderr plus the documented exit code.
 *
 * Start-up cost: this file imports only commander, the errors and their format. Each action loads its command's
 * module, and the context with the API client, with `await import()` when it runs: `--help`, `--version` and a
 * command's `--help` load no command, and no command loads what only others need (the Azure SDKs, cli-progress, the
 * Shipyard importer, the offline explain). tsc compiles each import() to a `require` at that point; esbuild
 * (cli/build.ts) wraps the imported modules in lazy initialisers, so the bundle defers them too. docs/cli.md, "Start-up
 * cost"; tests/cli/lazyLoad.test.ts.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import type { CommandContext } from './context';
import { CliError, ExitCode } from './errors';
import { formatFieldErrors } from './format';
import type { ImportShipyardOptions } from './commands/importShipyard';

interface GlobalFlags {
  endpoint?: string;
  key?: string;
  profile?: string;
  json?: boolean;
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a whole number ≥ 1');
  return n;
}

const intervalOption = () => new Option('--interval <ms>', 'poll interval in milliseconds').default(1000).argParser(positiveInt);

/** Runs a command's action with the CLI's context and turns its result into the exit code. */
type Runner = (action: (ctx: CommandContext) => Promise<number> | number) => Promise<void>;

export function buildProgram(run: Runner): Command {
  const program = new Command('hpcjob')
    .description('Submit, watch and inspect MPI jobs on the HPC control plane.')
    .version(cliVersion())
    .option('--endpoint <url>', 'API base URL, e.g. https://myapp.azurewebsites.net (env HPCJOB_ENDPOINT)')
    .option('--key <key>', 'operator key, instead of signing in (env HPCJOB_KEY)')
    .option('--profile <file>', 'profile file with {"endpoint", "tenantId", "clientId", "scope", "key"} (default ~/.config/hpcjob/config.json)')
    .option('--json', 'machine-readable JSON on stdout')
    .showHelpAfterError()
    .exitOverride();

  addSessionCommands(program, run);
  addJobCommands(program, run);
  addToolCommands(program, run);
  return program;
}

/** Signing in and out, and who the API sees. */
function addSessionCommands(program: Command, run: Runner): void {
  program
    .command('login')
    .description('sign in with Microsoft Entra ID (device code flow); the token is kept for later commands')
    .action(() => run(async (ctx) => (await import('./commands/identity')).loginCommand(ctx)));

  program
    .command('logout')
    .description('forget the token saved by login')
    .action(() => run(async (ctx) => (await import('./commands/identity')).logoutCommand(ctx)));

  program
    .command('whoami')
    .description('who the API takes you for: id (the owner of your jobs), roles, what you may do')
    .action(() => run(async (ctx) => (await import('./commands/identity')).whoamiCommand(ctx)));
}

/** The commands on jobs: submit, look, watch, read logs, move files, cancel, rerun. */
function addJobCommands(program: Command, run: Runner): void {
  program
    .command('submit')
    .description('submit a job spec (YAML or JSON file, - for stdin)')
    .argument('<spec>', 'spec file')
    .option('-w, --watch', 'then watch it to the end and exit with its outcome')
    .addOption(intervalOption())
    .action((spec: string, opts: { watch?: boolean; interval: number }) =>
      run(async (ctx) => (await import('./commands/submit')).submitCommand(ctx, spec, { watch: opts.watch, intervalMs: opts.interval })),
    );

  program
    .command('status')
    .description('show one job: state, progress, result')
    .argument('<id>', 'job id')
    .action((id: string) => run(async (ctx) => (await import('./commands/status')).statusCommand(ctx, id)));

  program
    .command('list')
    .description('list jobs (filtered by state and tag)')
    .option('--state <states>', 'only jobs in these states (comma-separated, e.g. Running,Failed)')
    .option('--tag <key=value>', 'only jobs with this tag (or just "key")')
    .option('--top <n>', 'at most n jobs per page', positiveInt)
    .option('--all', 'follow continuation tokens to list every page')
    .action((opts: { state?: string; tag?: string; top?: number; all?: boolean }) =>
      run(async (ctx) => (await import('./commands/status')).listCommand(ctx, opts)),
    );

  program
    .command('watch')
    .description('live per-stage progress until the job ends; exit code 0 Succeeded, 1 Failed or Cancelled')
    .argument('<id>', 'job id')
    .addOption(intervalOption())
    .action((id: string, opts: { interval: number }) =>
      run(async (ctx) => (await import('./commands/watch')).watchCommand(ctx, id, { intervalMs: opts.interval })),
    );

  program
    .command('logs')
    .description("stdout/stderr of the MPI master (default) or of one node's subtask")
    .argument('<id>', 'job id')
    .option('--node <nodeId>', 'the node whose subtask output to show')
    .addOption(new Option('--stream <stream>', 'only one stream').choices(['stdout', 'stderr']))
    .option('-f, --follow', 'keep printing new output until the job ends')
    .addOption(intervalOption())
    .action((id: string, opts: { node?: string; stream?: 'stdout' | 'stderr'; follow?: boolean; interval: number }) =>
      run(async (ctx) =>
        (await import('./commands/logs')).logsCommand(ctx, id, { node: opts.node, stream: opts.stream, follow: opts.follow, intervalMs: opts.interval }),
      ),
    );

  program
    .command('download')
    .description("fetch a job's outputs (spec outputs: files, logs) into a directory")
    .argument('<id>', 'job id')
    .option('--to <dir>', 'where to put them (default ./<id>)')
    .option('--only <prefix>', 'only files whose name starts with this, e.g. logs/ or nodes/')
    .action((id: string, opts: { to?: string; only?: string }) => run(async (ctx) => (await import('./commands/download')).downloadCommand(ctx, id, opts)));

  program
    .command('upload')
    .description('put a file or a folder into your data area (resumable: blobs with the same size and MD5 are skipped)')
    .argument('<path>', 'a file or a folder (a folder keeps its layout under its own name)')
    .option(
      '--to <container[/path]>',
      'where: a container and a path below your own area (users/... or a shared area you may write: as written); default inputs',
    )
    .option('--account <name>', "the data account (default: the deployment's first)")
    .option('--parallel <n>', 'files sent at once (each in parallel blocks)', (v) => Number(v), 4)
    .action((local: string, opts: { to?: string; account?: string; parallel: number }) =>
      run(async (ctx) => (await import('./commands/upload')).uploadCommand(ctx, local, opts)),
    );

  program
    .command('cancel')
    .description('cancel a job (cleanup still runs)')
    .argument('<id>', 'job id')
    .option('--reason <text>', 'recorded in the job timeline')
    .action((id: string, opts: { reason?: string }) => run(async (ctx) => (await import('./commands/cancel')).cancelCommand(ctx, id, opts.reason)));

  program
    .command('rerun')
    .description('start a new job from the spec of a finished job (its outputs go under the new job id)')
    .argument('<id>', 'job id of the finished job')
    .option('--idempotency-key <key>', 'each key gives another rerun; without one, repeating the command answers the same rerun')
    .option('-w, --watch', 'then watch the new job to the end and exit with its outcome')
    .addOption(intervalOption())
    .action((id: string, opts: { idempotencyKey?: string; watch?: boolean; interval: number }) =>
      run(async (ctx) =>
        (await import('./commands/rerun')).rerunCommand(ctx, id, { idempotencyKey: opts.idempotencyKey, watch: opts.watch, intervalMs: opts.interval }),
      ),
    );
}

/** What works on spec files and history: validate, explain, usage, import. */
function addToolCommands(program: Command, run: Runner): void {
  program
    .command('validate')
    .description('check a spec offline with the same schema and error paths as the API (exit 2 when invalid)')
    .argument('<spec>', 'spec file (YAML or JSON, - for stdin)')
    .action((spec: string) => run(async (ctx) => (await import('./commands/validate')).validateCommand(ctx, spec)));

  program
    .command('explain')
    .description('what would be sent to Batch for a spec (pool, Batch job, pulls, staging, MPI task, uploads), creating nothing')
    .argument('<spec>', 'spec file (YAML or JSON, - for stdin)')
    .option('--offline', 'explain here with the documented default settings, without asking the API (its policies are not checked)')
    .action((spec: string, opts: { offline?: boolean }) => run(async (ctx) => (await import('./commands/explain')).explainCommand(ctx, spec, opts)));

  program
    .command('usage')
    .description('node-minutes and estimated cost of finished jobs, per day and per tag')
    .option('--from <day>', 'first day (YYYY-MM-DD, UTC, day the pool was released)')
    .option('--to <day>', 'last day (YYYY-MM-DD)')
    .option('--tag <key=value>', 'only jobs with this tag (or just "key")')
    .action((opts: { from?: string; to?: string; tag?: string }) =>
      run(async (ctx) => {
        const q = new URLSearchParams();
        for (const k of ['from', 'to', 'tag'] as const) if (opts[k]) q.set(k, opts[k] as string);
        return (await import('./commands/usage')).usageCommand(ctx, q);
      }),
    );

  const importer = program.command('import').description('convert job definitions of another tool into job specs (offline)');
  importer
    .command('shipyard')
    .description(
      'Batch Shipyard pool/jobs/config files → one commented job spec per MPI job, and a mapping report of every setting (exit 5 when something was approximated or unsupported)',
    )
    .requiredOption('--pool <file>', 'Shipyard pool.yaml')
    .requiredOption('--jobs <file>', 'Shipyard jobs.yaml')
    .option('--config <file>', 'Shipyard config.yaml (images, registries, volumes)')
    .option('--credentials <file>', 'Shipyard credentials.yaml (registry users and Key Vault references; secrets in it are reported, never copied)')
    .option('--out <dir>', 'where the specs are written', '.')
    .option('--force', 'overwrite spec files that exist')
    .option(
      '--outputs <account/container>',
      "where the specs' default outputs go (the working directory's files and full logs) when a job has no output_data; default: Shipyard's storage account, container shipyard-outputs",
    )
    .action((opts: ImportShipyardOptions) => run(async (ctx) => (await import('./commands/importShipyard')).importShipyardCommand(ctx, opts)));
}

/** Set by cli/build.ts in the installable bundle, whose tree has only its own package.json. */
declare const __HPCJOB_VERSION__: string | undefined;

function cliVersion(): string {
  if (typeof __HPCJOB_VERSION__ === 'string') return __HPCJOB_VERSION__;
  try {
    // dist/cli/index.js and cli/index.ts are both two levels below the package root.
    return (require('../../package.json') as { version: string }).version;
  } catch {
    return require('../package.json').version as string;
  }
}

function printError(ctx: { err: (t: string) => void }, err: CliError): void {
  ctx.err(`hpcjob: ${err.message}\n`);
  for (const line of formatFieldErrors(err.fieldErrors)) ctx.err(`${line}\n`);
}

export async function main(argv: string[]): Promise<number> {
  let exitCode: number = ExitCode.Ok;
  const errOut = { err: (t: string) => void process.stderr.write(t) };
  const program = buildProgram(async (action) => {
    const { createContext } = await import('./context');
    const ctx = createContext(program.opts<GlobalFlags>());
    exitCode = await action(ctx);
  });
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and --version end through here too, with exit code 0.
      return err.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage;
    }
    if (err instanceof CliError) {
      printError(errOut, err);
      return err.exitCode;
    }
    errOut.err(`hpcjob: unexpected error: ${(err as Error).stack ?? String(err)}\n`);
    return ExitCode.Api;
  }
  return exitCode;
}

if (require.main === module) {
  main(process.argv).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`hpcjob: ${String(err)}\n`);
      process.exitCode = ExitCode.Api;
    },
  );
}
