/** The mapping report as text for a terminal: one table per file, then the totals. Pure. */
import type { ImportResult } from './importShipyard';
import { MAPPING_STATUSES, type MappingEntry } from './report';
import { verdictLine } from './verdict';

export function formatReport(result: ImportResult): string {
  const out: string[] = [];
  // The top lines: whether each spec runs as its author ran it.
  for (const s of result.specs) out.push(`VERDICT ${s.file}: ${verdictLine(s.verdict)}`);
  if (result.specs.length) out.push('');
  const files = [...new Set(result.entries.map((e) => e.file))];
  for (const file of files) {
    const rows = result.entries.filter((e) => e.file === file);
    out.push(`${file}: ${counts(rows)}`);
    out.push(...table([['STATUS', 'LINE', 'SHIPYARD SETTING', 'JOB SPEC', 'HOW / WHY'], ...rows.map(row)]).map((l) => `  ${l}`));
    out.push('');
  }
  if (result.secrets.length) {
    out.push(`Credentials found (never copied; the values are not shown): ${result.secrets.length}`);
    for (const s of result.secrets) out.push(`  ${s.file}${s.line !== undefined ? `:${s.line}` : ''}  ${s.path}  (${s.kind})`);
    out.push('');
  }
  out.push(`${result.entries.length} setting(s): ${counts(result.entries)}`);
  return `${out.join('\n')}\n`;
}

function row(e: MappingEntry): string[] {
  const status = `${e.status}${e.unknownKey ? ' (unknown key)' : ''}${e.secret ? ' (credential)' : ''}`;
  const target = e.target ? `${e.target}${e.specs && e.specs.length > 1 ? ` [${e.specs.length} specs]` : ''}` : '—';
  return [status, e.line !== undefined ? String(e.line) : '', e.path, target, e.note];
}

function counts(entries: readonly MappingEntry[]): string {
  return MAPPING_STATUSES.map((s) => `${entries.filter((e) => e.status === s).length} ${s}`).join(', ');
}

/** Columns padded to their widest cell, except the last (free text). */
function table(rows: string[][]): string[] {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map((r) =>
    r
      .map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c])))
      .join('  ')
      .trimEnd(),
  );
}
