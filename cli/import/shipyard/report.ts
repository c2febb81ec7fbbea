/**
 * The mapping report: one entry per Shipyard setting found in the files, saying what became of it. Nothing is dropped
 * silently: after the mappers ran, every leaf of every file must be covered by an entry (its own path or an ancestor's);
 * a leaf nobody claimed is reported as an unknown key.
 */
import type { ShipyardFileRole, ShipyardSource } from './source';

export type MappingStatus = 'mapped' | 'approximated' | 'unsupported';
export const MAPPING_STATUSES: readonly MappingStatus[] = ['mapped', 'approximated', 'unsupported'];

export interface MappingEntry {
  role: ShipyardFileRole;
  /** The file as the user named it. */
  file: string;
  /** Shipyard path: "job_specifications[0].tasks[0].multi_instance.mpi.runtime". */
  path: string;
  line?: number;
  status: MappingStatus;
  /** Job spec field(s) the setting became, e.g. "pool.vmSize"; absent when nothing carries it. */
  target?: string;
  /** The generated spec files this entry concerns (settings of a job); absent for settings every spec shares. */
  specs?: string[];
  /** How it was mapped or approximated, or why it is unsupported. Never a secret's value. */
  note: string;
  /** The setting holds a credential: reported by path only, its value never shown or written. */
  secret?: boolean;
  /** Not a Batch Shipyard setting at all (a typo, or from a newer or forked version). */
  unknownKey?: boolean;
}

export interface ReportSummary {
  mapped: number;
  approximated: number;
  unsupported: number;
}

export type EntryInput = Omit<MappingEntry, 'role' | 'file' | 'line' | 'specs'> & { spec?: string };

/** Collects entries per file; the same setting reported again for another spec merges into one entry. */
export class ReportBuilder {
  private readonly entries = new Map<string, MappingEntry>();

  constructor(private readonly sources: readonly ShipyardSource[]) {}

  add(role: ShipyardFileRole, input: EntryInput): void {
    const source = this.sources.find((s) => s.role === role);
    if (!source) throw new Error(`no ${role} file to report ${input.path} against`);
    const { spec, ...rest } = input;
    const key = JSON.stringify([role, rest.path, rest.status, rest.target ?? '', rest.note]);
    const existing = this.entries.get(key);
    if (existing) {
      if (spec && existing.specs && !existing.specs.includes(spec)) existing.specs.push(spec);
      return;
    }
    const line = lineFor(source, rest.path);
    this.entries.set(key, { role, file: source.name, ...rest, ...(line !== undefined ? { line } : {}), ...(spec ? { specs: [spec] } : {}) });
  }

  /**
   * Every leaf no entry covers becomes an "unknown key" entry, so a setting the mappers did not expect (a typo, a key
   * of a newer Shipyard) is reported instead of vanishing.
   */
  coverRest(): void {
    for (const source of this.sources) {
      const covered = [...this.entries.values()].filter((e) => e.role === source.role).map((e) => e.path);
      for (const leaf of leafPaths(source.value)) {
        if (leaf === '') continue;
        if (covered.some((c) => c === leaf || leaf.startsWith(`${c}.`) || leaf.startsWith(`${c}[`))) continue;
        this.add(source.role, {
          path: leaf,
          status: 'unsupported',
          unknownKey: true,
          note: 'not a setting this importer knows: not a Batch Shipyard 3.9 key here (a typo, or a key of another version)',
        });
        covered.push(leaf);
      }
    }
  }

  list(): MappingEntry[] {
    const order = new Map(this.sources.map((s, i) => [s.role, i]));
    return [...this.entries.values()].sort(
      (a, b) => (order.get(a.role) ?? 0) - (order.get(b.role) ?? 0) || (a.line ?? Infinity) - (b.line ?? Infinity) || a.path.localeCompare(b.path),
    );
  }
}

export function summarize(entries: readonly MappingEntry[]): ReportSummary {
  const s: ReportSummary = { mapped: 0, approximated: 0, unsupported: 0 };
  for (const e of entries) s[e.status]++;
  return s;
}

/** The line of a path, or of its nearest ancestor the source knows. */
function lineFor(source: ShipyardSource, path: string): number | undefined {
  let p = path;
  for (;;) {
    const line = source.lineOf(p);
    if (line !== undefined || p === '') return line;
    p = parentPath(p);
  }
}

export function parentPath(path: string): string {
  const cut = Math.max(path.lastIndexOf('.'), path.lastIndexOf('['));
  return cut <= 0 ? '' : path.slice(0, cut);
}

/** Paths of every scalar, null and empty collection in a decoded document, formatted like formatPath. */
export function leafPaths(value: unknown, prefix = ''): string[] {
  if (Array.isArray(value)) {
    if (value.length === 0) return [prefix];
    return value.flatMap((v, i) => leafPaths(v, `${prefix}[${i}]`));
  }
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 0) return [prefix];
    return keys.flatMap((k) => leafPaths((value as Record<string, unknown>)[k], joinKey(prefix, k)));
  }
  return [prefix];
}

const IDENTIFIER_RE = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `prefix.key`, or `prefix["odd key"]` for keys that are not identifiers (same rule as formatPath). */
export function joinKey(prefix: string, key: string): string {
  if (IDENTIFIER_RE.test(key)) return prefix === '' ? key : `${prefix}.${key}`;
  return `${prefix}[${JSON.stringify(key)}]`;
}

export const joinIndex = (prefix: string, i: number) => `${prefix}[${i}]`;
