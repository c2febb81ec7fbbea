/**
 * Batch Shipyard configuration → job specs and a mapping report. Pure: takes the files' text, returns the specs (as
 * objects and as commented YAML), every setting's fate, the credentials found (by path) and problems. The CLI
 * (cli/commands/importShipyard.ts) reads and writes the files.
 */
import { parseJobSpec, type SpecError } from '../../../shared/core/spec';
import { MappingContext, type SpecDraft } from './context';
import { mapCredentials } from './credentials';
import { emitSpecYaml } from './emit';
import { mapConfig, reportUnusedVolumes } from './globalResources';
import { mapJobsFile, planTasks } from './jobs';
import { mapPool } from './pool';
import { mapRegistries } from './registry';
import { ReportBuilder, summarize, type MappingEntry, type ReportSummary } from './report';
import { SecretIndex, findSecrets, redactSource, type SecretFinding } from './secrets';
import { decodeShipyardYaml, type ShipyardFileRole, type ShipyardSource, type SourceProblem } from './source';
import { isObj } from './context';
import { imageFlags } from './imageFlags';
import { wireScratch } from './scratchWiring';
import { specVerdict, verdictLine, type SpecVerdict } from './verdict';
import { DEFAULT_OUTPUTS_CONTAINER, applyDefaultOutputs, type OutputsDestination } from './defaultOutputs';
import { resolveStorageAlias } from './storage';

export interface ShipyardFileInput {
  /** How the user named the file (shown in the report and the spec headers). */
  name: string;
  text: string;
}

export interface ShipyardInput {
  pool: ShipyardFileInput;
  jobs: ShipyardFileInput;
  config?: ShipyardFileInput;
  credentials?: ShipyardFileInput;
}

export interface ImportedSpec {
  /** Output file name, e.g. "mpibench-openmpi-ib.yaml". */
  file: string;
  /** Where it came from: "jobs.yaml job_specifications[0].tasks[0]". */
  origin: string;
  /** The spec as built (the job spec's input form). */
  spec: Record<string, unknown>;
  yaml: string;
  /** parseJobSpec's verdict on the YAML text: empty when it is a valid spec. */
  errors: SpecError[];
  /** Whether it runs as its author ran it (the top line of its header and report). */
  verdict: SpecVerdict;
}

export interface FileProblem extends SourceProblem {
  file: string;
}

export interface ImportResult {
  /** Unreadable input: YAML errors with their lines, a file that is not the Shipyard file it should be. */
  problems: FileProblem[];
  specs: ImportedSpec[];
  entries: MappingEntry[];
  secrets: SecretFinding[];
  summary: ReportSummary;
  /**
   * 'exact': every setting mapped exactly and every spec valid; 'partial': something approximated or unsupported;
   * 'error': unreadable files, no spec at all, or a spec that is not valid yet.
   */
  outcome: 'exact' | 'partial' | 'error';
}

export interface ImportOptions {
  /** Where the specs' default outputs go (`--outputs account/container`); else Shipyard's storage account alias. */
  outputs?: { account: string; container: string };
}

export function importShipyard(input: ShipyardInput, options: ImportOptions = {}): ImportResult {
  const problems: FileProblem[] = [];
  const sources: Partial<Record<ShipyardFileRole, ShipyardSource>> = {};
  for (const role of ['config', 'pool', 'jobs', 'credentials'] as const) {
    const file = input[role];
    if (!file) continue;
    const decoded = decodeShipyardYaml(role, file.name, file.text);
    if (!decoded.ok) problems.push(...decoded.problems.map((p) => ({ file: file.name, ...p })));
    else sources[role] = decoded.source;
  }
  const shape: [ShipyardFileRole, string, (v: unknown) => boolean, string][] = [
    ['pool', 'pool_specification', isObj, 'a mapping'],
    ['jobs', 'job_specifications', Array.isArray, 'a list'],
    ['config', 'global_resources', (v) => v === undefined || isObj(v), 'a mapping'],
    ['credentials', 'credentials', isObj, 'a mapping'],
  ];
  for (const [role, key, ok, what] of shape) {
    const s = sources[role];
    if (!s) continue;
    const value = isObj(s.value) ? s.value[key] : undefined;
    if (!ok(value)) {
      problems.push({ file: s.name, message: `not a Shipyard ${role} file: it needs a top-level "${key}" that is ${what}` });
      delete sources[role];
    }
  }
  if (problems.length) return { problems, specs: [], entries: [], secrets: [], summary: { mapped: 0, approximated: 0, unsupported: 0 }, outcome: 'error' };

  const secrets = findSecrets(Object.values(sources) as ShipyardSource[]);
  // From here on the mappers read the files with every credential redacted: none can leak, whatever field holds it.
  for (const role of Object.keys(sources) as ShipyardFileRole[]) sources[role] = redactSource(sources[role] as ShipyardSource, secrets);
  const list = Object.values(sources) as ShipyardSource[];
  const ctx = new MappingContext(new ReportBuilder(list), new SecretIndex(secrets), sources);

  const { plans, jobsWithoutSpecs } = planTasks(ctx);
  const drafts = plans.map((p) => p.draft);
  const config = mapConfig(ctx, drafts);
  const pool = mapPool(ctx, drafts);
  mapJobsFile(ctx, plans, jobsWithoutSpecs, pool, config);
  for (const d of drafts) d.header.push(...wireScratch(d).map((c) => `CHANGED: ${c}`));
  const outputsTo = options.outputs ? { ...options.outputs, given: true } : shipyardAccount(ctx);
  mapRegistries(ctx, drafts, config);
  reportUnusedVolumes(ctx, config);
  mapCredentials(ctx);
  // A credential no mapper reported as one (inside a block reported as a whole, or in a field that is not meant to
  // hold one, whose redacted value a mapper carried) still gets its own line, by path only.
  const listed = ctx.report.list();
  const reported = new Set(listed.filter((e) => e.secret).map((e) => `${e.role}\u0000${e.path}`));
  for (const f of secrets) {
    if (reported.has(`${f.role}\u0000${f.path}`)) continue;
    const carried = listed.find((e) => e.role === f.role && e.path === f.path && e.target && e.status !== 'unsupported');
    if (carried) {
      ctx.secret(
        f.role,
        f.path,
        'approximated',
        `a ${f.kind} in the value: removed from what ${carried.target} carries (never written anywhere); give it to the job another way (a secret reference, the pool's identity)`,
        drafts.filter((d) => carried.specs?.includes(d.file)),
        carried.target,
      );
      for (const d of drafts)
        if (carried.specs?.includes(d.file))
          d.header.push(
            `TODO: ${carried.target} had a ${f.kind} in the Shipyard file (${ctx.fileName(f.role)}: ${f.path}); it was removed: supply it another way`,
          );
    } else ctx.secret(f.role, f.path, 'unsupported', `a ${f.kind}: not carried (never written anywhere)`);
  }
  ctx.report.coverRest();
  // After output_data is mapped: only a job without one gets the default.
  for (const d of drafts) d.header.push(...applyDefaultOutputs(d, outputsTo));

  const specs = drafts.map((d) => finish(d, ctx));
  const entries = ctx.report.list();
  for (const s of specs) s.verdict = specVerdict(s.file, drafts.find((d) => d.file === s.file)?.header ?? [], entries);
  for (const s of specs) s.yaml = s.yaml.replace(/^/, `# VERDICT: ${verdictLine(s.verdict)}\n`);
  const summary = summarize(entries);
  // Nothing to write, or a spec the API would refuse: the import did not produce something usable.
  const invalid = specs.length === 0 || specs.some((s) => s.errors.length > 0);
  const outcome = invalid ? 'error' : summary.approximated + summary.unsupported > 0 ? 'partial' : 'exact';
  return { problems, specs, entries, secrets, summary, outcome };
}

/** Shipyard's own storage account (config.yaml batch_shipyard.storage_account_settings), as a default outputs place. */
function shipyardAccount(ctx: MappingContext): OutputsDestination | undefined {
  const config = ctx.sources.config?.value;
  const alias = isObj(config) && isObj(config.batch_shipyard) ? config.batch_shipyard.storage_account_settings : undefined;
  const account = resolveStorageAlias(alias, ctx.sources.credentials?.value).account;
  return account ? { account, container: DEFAULT_OUTPUTS_CONTAINER, given: false } : undefined;
}

function finish(d: SpecDraft, ctx: MappingContext): ImportedSpec {
  for (const [path, text] of strings(d.spec, '')) {
    if (/<[^<>\s][^<>]*>/.test(text))
      d.header.push(`TODO: ${path} still holds a placeholder of the Shipyard recipe (${/<[^<>]+>/.exec(text)?.[0]}): fill it in`);
  }
  const name = (role: ShipyardFileRole) => ctx.sources[role]?.name;
  const origin = `${name('jobs')} ${d.taskPath}, ${name('pool')}${ctx.sources.config ? `, ${name('config')}` : ''}${ctx.sources.credentials ? `, ${name('credentials')}` : ''}`;
  const emit = () =>
    emitSpecYaml(d, { origin, reportHint: 'Check every TODO and NOT CARRIED OVER line; `hpcjob import shipyard` prints the whole mapping report.' });
  let yaml = emit();
  let parsed = parseJobSpec(yaml, 'application/yaml');
  // What the node image really holds (the image catalog): names and paths of CentOS-HPC, runtimes, library:// remotes.
  if (parsed.ok) {
    const flags = imageFlags(parsed.spec);
    for (const f of flags)
      ctx.report.add('jobs', {
        path: `${d.taskPath}${f.shipyardPath}`,
        status: 'unsupported',
        ...(f.target ? { target: f.target } : {}),
        note: f.note,
        spec: d.file,
      });
    if (flags.length) {
      d.header.unshift(...flags.map((f) => `CANNOT RUN AS IS: ${f.note}`));
      yaml = emit();
      parsed = parseJobSpec(yaml, 'application/yaml');
    }
  }
  return { file: d.file, origin, spec: d.spec, yaml, errors: parsed.ok ? [] : parsed.errors, verdict: { kind: 'runs as written', items: [] } };
}

/** Every string value in a spec with its path (for placeholder checks). */
function strings(value: unknown, path: string): [string, string][] {
  if (typeof value === 'string') return [[path, value]];
  if (Array.isArray(value)) return value.flatMap((v, i) => strings(v, `${path}[${i}]`));
  if (isObj(value)) return Object.entries(value).flatMap(([k, v]) => strings(v, path ? `${path}.${k}` : k));
  return [];
}
