/** hpcjob validate <spec>: offline, with the API's own parser, so the field paths are the ones the API answers. */
import { parseJobSpec } from '../../shared/core/spec';
import { imageCheckErrors } from '../../shared/core/images/imageCheckErrors';
import { printJson, type CommandContext } from '../context';
import { CliError, ExitCode } from '../errors';
import { readSpecFile } from '../specFile';

export function validateCommand(ctx: CommandContext, file: string): number {
  const spec = readSpecFile(file);
  const parsedSpec = parseJobSpec(spec.text, spec.contentType);
  // Offline, the node image checks use the built-in catalog (a deployment's custom images are checked at submission).
  const imageErrors = parsedSpec.ok ? imageCheckErrors(parsedSpec.spec) : [];
  const parsed = imageErrors.length ? { ok: false as const, errors: imageErrors } : parsedSpec;
  if (!parsed.ok) {
    if (ctx.json) printJson(ctx, { valid: false, errors: parsed.errors });
    throw new CliError(`${file} is not a valid job spec: ${parsed.errors.length} problem(s)`, ExitCode.Usage, parsed.errors);
  }
  if (ctx.json) printJson(ctx, { valid: true, spec: parsed.spec });
  else {
    const s = parsed.spec;
    ctx.out(`${file} is valid: job "${s.name}", ${s.pool.nodes} node(s) of ${s.pool.vmSize}, ${s.mpi.runtime} × ${s.mpi.processesPerNode} per node\n`);
  }
  return ExitCode.Ok;
}
