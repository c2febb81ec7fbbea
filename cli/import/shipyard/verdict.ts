/**
 * One spec's verdict, the top line of its report and of its file: `runs as written` (every setting mapped exactly,
 * nothing changed), `runs with changes` (the approximated and unsupported settings and the importer's CHANGED lines,
 * listed), or `cannot run` (the reasons: the CANNOT RUN AS IS lines: what no current size or the default image can
 * do as the recipe wrote it). Pure.
 */
import type { MappingEntry } from './report';

export const VERDICTS = ['runs as written', 'runs with changes', 'cannot run'] as const;
export type VerdictKind = (typeof VERDICTS)[number];

export interface SpecVerdict {
  kind: VerdictKind;
  /** cannot run: the reasons; runs with changes: the changes (Shipyard path: note, then CHANGED lines). */
  items: string[];
}

const CANNOT = 'CANNOT RUN AS IS: ';
const CHANGED = 'CHANGED: ';

export function specVerdict(file: string, header: readonly string[], entries: readonly MappingEntry[]): SpecVerdict {
  const cannot = header.filter((h) => h.startsWith(CANNOT)).map((h) => h.slice(CANNOT.length));
  if (cannot.length) return { kind: 'cannot run', items: cannot };
  const changes = [
    ...entries.filter((e) => e.status !== 'mapped' && (!e.specs || e.specs.includes(file))).map((e) => `${e.file} ${e.path} (${e.status}): ${e.note}`),
    ...header.filter((h) => h.startsWith(CHANGED)).map((h) => h.slice(CHANGED.length)),
  ];
  return changes.length ? { kind: 'runs with changes', items: changes } : { kind: 'runs as written', items: [] };
}

/** The verdict as one line: "cannot run (first reason; +2 more)", "runs with changes (5 listed)", "runs as written". */
export function verdictLine(v: SpecVerdict): string {
  if (v.kind === 'runs as written') return v.kind;
  if (v.kind === 'runs with changes') return `runs with changes (${v.items.length} listed)`;
  const first = firstSentence(v.items[0]);
  return `cannot run (${first}${v.items.length > 1 ? `; +${v.items.length - 1} more` : ''})`;
}

function firstSentence(text: string): string {
  const m = /^(.{20,240}?)(\. |: (?=[A-Z])|$)/.exec(text);
  if (m) return m[1];
  return `${text.slice(0, 240)}…`;
}
