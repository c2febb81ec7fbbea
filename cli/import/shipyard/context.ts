/**
 * What every mapper shares: the report, the credentials found, and the drafts of the specs being written. A mapper
 * says what became of each Shipyard setting through `entry`; when the setting lands in a spec field, the same call
 * leaves a comment on that field naming where it came from.
 */
import { ReportBuilder, joinKey, type EntryInput, type MappingStatus } from './report';
import type { SecretIndex } from './secrets';
import type { ShipyardFileRole, ShipyardSource } from './source';

export type Obj = Record<string, unknown>;
export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A job spec being built from one Shipyard task, with the comments its YAML will carry. */
export interface SpecDraft {
  /** Output file name, e.g. "mpibench-openmpi-ib.yaml"; also the spec's name in the report. */
  file: string;
  /** Where it came from in jobs.yaml. */
  jobPath: string;
  taskPath: string;
  spec: Obj;
  /** Spec field path ("pool.vmSize", "mpi.options[2]") → comment lines. */
  comments: Map<string, string[]>;
  /** Lines for the file header: settings of this job that are not carried over, TODOs. */
  header: string[];
}

export function newDraft(file: string, jobPath: string, taskPath: string): SpecDraft {
  return { file, jobPath, taskPath, spec: {}, comments: new Map(), header: [] };
}

/** Sets a value at a spec path, creating the objects on the way. */
export function setIn(target: Obj, path: readonly string[], value: unknown): void {
  let cur = target;
  for (const seg of path.slice(0, -1)) {
    if (!isObj(cur[seg])) cur[seg] = {};
    cur = cur[seg] as Obj;
  }
  cur[path[path.length - 1]] = value;
}

export function getIn(target: Obj, path: readonly string[]): unknown {
  let cur: unknown = target;
  for (const seg of path) {
    if (!isObj(cur)) return undefined;
    cur = cur[seg];
  }
  return cur;
}

export interface EntryOptions {
  /** The spec field the comment goes on (default: the entry's target when it is a single field path). */
  commentAt?: string;
  /** No comment in the spec (the entry still goes into the report). */
  noComment?: boolean;
}

export class MappingContext {
  constructor(
    readonly report: ReportBuilder,
    readonly secrets: SecretIndex,
    readonly sources: Partial<Record<ShipyardFileRole, ShipyardSource>>,
  ) {}

  /** The file's base name, as comments in the specs cite it ("pool.yaml"). */
  fileName(role: ShipyardFileRole): string {
    const name = this.sources[role]?.name ?? `${role}.yaml`;
    return name.slice(Math.max(name.lastIndexOf('/'), name.lastIndexOf('\\')) + 1);
  }

  /**
   * Records what became of a setting. With drafts, the entry names them, and the setting's origin is left as a
   * comment on its target field (mapped, approximated) or in the header (unsupported).
   */
  entry(role: ShipyardFileRole, entry: EntryInput, forDrafts?: readonly SpecDraft[], options: EntryOptions = {}): void {
    const drafts = forDrafts ?? [];
    // A setting meant for a spec field, when no spec was generated (the job had no task to import), went nowhere.
    const input: EntryInput =
      forDrafts && drafts.length === 0 && entry.target && entry.status !== 'unsupported'
        ? { path: entry.path, status: 'unsupported', note: `no job spec was generated to carry it (${entry.note})`, ...(entry.secret ? { secret: true } : {}) }
        : entry;
    if (drafts.length === 0) this.report.add(role, input);
    for (const d of drafts) this.report.add(role, { ...input, spec: d.file });
    if (options.noComment) return;
    const origin = `${this.fileName(role)}: ${input.path}`;
    for (const d of drafts) {
      if (input.status === 'unsupported') {
        d.header.push(`NOT CARRIED OVER ${origin}: ${input.note}`);
        continue;
      }
      const at = options.commentAt ?? (input.target && /^[A-Za-z0-9_.[\]-]+$/.test(input.target) ? input.target : undefined);
      const line = input.status === 'mapped' ? `from ${origin}${input.note ? ` (${input.note})` : ''}` : `from ${origin}, approximated: ${input.note}`;
      if (at) addComment(d, at, line);
      // A setting with no field: the header says what became of it, unless it simply needs nothing here.
      else if (input.status === 'approximated') d.header.push(`APPROXIMATED ${origin}: ${input.note}`);
    }
  }

  mapped(role: ShipyardFileRole, path: string, target: string | undefined, note: string, drafts?: readonly SpecDraft[], options?: EntryOptions): void {
    this.entry(role, { path, status: 'mapped', ...(target ? { target } : {}), note }, drafts, options);
  }

  approximated(role: ShipyardFileRole, path: string, target: string | undefined, note: string, drafts?: readonly SpecDraft[], options?: EntryOptions): void {
    this.entry(role, { path, status: 'approximated', ...(target ? { target } : {}), note }, drafts, options);
  }

  unsupported(role: ShipyardFileRole, path: string, note: string, drafts?: readonly SpecDraft[]): void {
    this.entry(role, { path, status: 'unsupported', note }, drafts);
  }

  /** A credential: reported by path, its value never read into anything. */
  secret(role: ShipyardFileRole, path: string, status: MappingStatus, note: string, drafts?: readonly SpecDraft[], target?: string): void {
    this.entry(role, { path, status, note, secret: true, ...(target ? { target } : {}) }, drafts, target ? { commentAt: target } : {});
  }

  /**
   * Walks one Shipyard mapping: known keys go to their handler, keys Shipyard has but we do not carry are reported
   * unsupported with their reason, anything else is an unknown key.
   */
  visit(
    role: ShipyardFileRole,
    path: string,
    value: unknown,
    handlers: Record<string, (v: unknown, p: string) => void>,
    unsupported: Record<string, string> = {},
    drafts?: readonly SpecDraft[],
  ): void {
    if (!isObj(value)) {
      if (value !== null && value !== undefined)
        this.unsupported(role, path, `must be a mapping of settings, got ${describe(value)}: nothing here was read`, drafts);
      return;
    }
    for (const [k, v] of Object.entries(value)) {
      const p = joinKey(path, k);
      if (Object.prototype.hasOwnProperty.call(handlers, k)) handlers[k](v, p);
      else if (Object.prototype.hasOwnProperty.call(unsupported, k)) this.unsupported(role, p, unsupported[k], drafts);
      else
        this.entry(
          role,
          { path: p, status: 'unsupported', unknownKey: true, note: 'not a Batch Shipyard 3.9 setting here (a typo, or a key of another version): ignored' },
          drafts,
        );
    }
  }
}

export function addComment(d: SpecDraft, at: string, line: string): void {
  const lines = d.comments.get(at) ?? [];
  if (!lines.includes(line)) lines.push(line);
  d.comments.set(at, lines);
}

export function describe(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return typeof value;
}
