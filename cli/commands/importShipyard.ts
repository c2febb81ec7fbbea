/**
 * hpcjob import shipyard: Batch Shipyard configuration files → commented job specs in --out, and the mapping report
 * (a table, or JSON with --json) on stdout. The mapping itself is pure (cli/import/shipyard); this file reads and
 * writes the files. Exit 0 when every setting mapped exactly, 5 when something was approximated or unsupported,
 * 2 on errors (missing or unreadable files, YAML errors, a generated spec that is not valid yet).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { printJson, type CommandContext } from '../context';
import { CliError, ExitCode } from '../errors';
import { formatFieldErrors } from '../format';
import { importShipyard, type ShipyardFileInput } from '../import/shipyard/importShipyard';
import { formatReport } from '../import/shipyard/reportTable';
import { parseOutputsOption } from '../import/shipyard/defaultOutputs';

export interface ImportShipyardOptions {
  pool: string;
  jobs: string;
  config?: string;
  credentials?: string;
  out: string;
  force?: boolean;
  /** "account/container" for the specs' default outputs. */
  outputs?: string;
}

function readInput(kind: string, file: string): ShipyardFileInput {
  try {
    return { name: file, text: readFileSync(file, 'utf8') };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError(
      `cannot read the Shipyard ${kind} file ${file}: ${code === 'ENOENT' ? 'no such file' : (code ?? (err as Error).message)}`,
      ExitCode.Usage,
    );
  }
}

export function importShipyardCommand(ctx: CommandContext, opts: ImportShipyardOptions): number {
  const outputs = opts.outputs === undefined ? undefined : parseOutputsOption(opts.outputs);
  if (outputs && 'error' in outputs) throw new CliError(`--outputs ${outputs.error}`, ExitCode.Usage);
  const result = importShipyard(
    {
      pool: readInput('pool', opts.pool),
      jobs: readInput('jobs', opts.jobs),
      ...(opts.config ? { config: readInput('config', opts.config) } : {}),
      ...(opts.credentials ? { credentials: readInput('credentials', opts.credentials) } : {}),
    },
    outputs ? { outputs: { account: outputs.account, container: outputs.container } } : {},
  );
  const files = {
    pool: opts.pool,
    jobs: opts.jobs,
    ...(opts.config ? { config: opts.config } : {}),
    ...(opts.credentials ? { credentials: opts.credentials } : {}),
  };

  if (result.problems.length) {
    if (ctx.json) printJson(ctx, { outcome: 'error', exitCode: ExitCode.Usage, files, problems: result.problems });
    throw new CliError(
      `cannot import: ${result.problems.length} problem(s) in the Shipyard files`,
      ExitCode.Usage,
      result.problems.map((p) => ({
        path: p.file,
        message: p.message,
        ...(p.line !== undefined ? { line: p.line } : {}),
        ...(p.column !== undefined ? { column: p.column } : {}),
      })),
    );
  }

  // Nothing is overwritten unless asked: refuse before writing anything.
  const targets = result.specs.map((s) => ({ spec: s, file: path.join(opts.out, s.file) }));
  const existing = targets.filter((t) => existsSync(t.file));
  if (existing.length && !opts.force) {
    throw new CliError(`would overwrite ${existing.map((t) => t.file).join(', ')}: pass --force, or another --out`, ExitCode.Usage);
  }
  if (targets.length) mkdirSync(opts.out, { recursive: true });
  for (const t of targets) writeFileSync(t.file, t.spec.yaml);

  const exitCode = result.outcome === 'exact' ? ExitCode.Ok : result.outcome === 'partial' ? ExitCode.ImportIncomplete : ExitCode.Usage;
  if (ctx.json) {
    printJson(ctx, {
      outcome: result.outcome,
      exitCode,
      files,
      summary: result.summary,
      specs: targets.map((t) => ({ file: t.file, origin: t.spec.origin, valid: t.spec.errors.length === 0, errors: t.spec.errors })),
      entries: result.entries,
      secrets: result.secrets,
    });
  } else {
    ctx.out(formatReport(result));
    if (!targets.length) ctx.out('no job spec written: no task of the jobs file could become an MPI job (see the entries above)\n');
    for (const t of targets) {
      ctx.out(`wrote ${t.file}${t.spec.errors.length ? ` — not a valid job spec yet: ${t.spec.errors.length} problem(s)` : ''}\n`);
      for (const line of formatFieldErrors(t.spec.errors)) ctx.out(`${line}\n`);
    }
  }
  if (result.outcome === 'partial')
    ctx.err(
      `hpcjob: imported with ${result.summary.approximated} approximated and ${result.summary.unsupported} unsupported setting(s): read the report and the TODOs in the specs (exit ${ExitCode.ImportIncomplete})\n`,
    );
  if (result.outcome === 'error') {
    ctx.err(
      targets.length
        ? 'hpcjob: a generated spec is not valid yet: fix the fields listed, then hpcjob validate it\n'
        : 'hpcjob: nothing imported: no task of the jobs file could become a job spec\n',
    );
  }
  return exitCode;
}
