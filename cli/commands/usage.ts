/** hpcjob usage: node-minutes and estimated cost per day and per tag (GET /api/usage). */
import { printJson, type CommandContext } from '../context';
import { ExitCode } from '../errors';
import type { UsageBucket, UsageReport } from '../../shared/core/ops/usage';

/** As GET /api/usage answers it; parts may be missing (the text falls back to the JSON). */
type Report = Partial<UsageReport>;

function row(name: string, b: UsageBucket, currency: string): string {
  const cost = `${b.estimatedCost.toFixed(2)} ${currency}${b.unpriced ? ` (+${b.unpriced} unpriced)` : ''}`;
  return `  ${name.padEnd(24)} ${String(b.jobs).padStart(5)} jobs ${b.nodeMinutes.toFixed(2).padStart(12)} node-min  ${cost}`;
}

export async function usageCommand(ctx: CommandContext, query: URLSearchParams): Promise<number> {
  const report = (await ctx.api().usage(query)) as Report;
  if (ctx.json) {
    printJson(ctx, report);
    return ExitCode.Ok;
  }
  const currency = report.currency ?? '';
  const lines: string[] = [];
  if (report.total) lines.push('total', row('all jobs', report.total, currency));
  const section = (title: string, buckets: Record<string, UsageBucket> | undefined) => {
    const entries = Object.entries(buckets ?? {}).sort(([a], [b]) => a.localeCompare(b));
    if (entries.length) lines.push(title, ...entries.map(([k, b]) => row(k, b, currency)));
  };
  section('per day', report.perDay);
  section('per tag', report.perTag);
  ctx.out(`${lines.length ? lines.join('\n') : JSON.stringify(report, null, 2)}\n`);
  return ExitCode.Ok;
}
