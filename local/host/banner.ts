/** The start-up listing `func start` prints: every function with its trigger, and the URL of HTTP ones. */
import type { RegisteredFunction } from './extension';
import type { RouteTable } from './http/routeTable';
import { resolveAppSettingExpressions } from './triggers/bindingSettings';

export interface BannerContext {
  routeTable: RouteTable;
  baseUrl: string;
  claimedTriggerTypes: ReadonlySet<string>;
}

export function formatBanner(functions: RegisteredFunction[], ctx: BannerContext): string {
  const lines = [`Azure Functions local host (Node ${process.version}) listening on ${ctx.baseUrl}`, '', 'Functions:', ''];
  const sorted = [...functions].sort((a, b) => a.name.localeCompare(b.name));
  for (const fn of sorted) {
    const route = ctx.routeTable.routes.find((r) => r.fn.name === fn.name);
    if (route) {
      const methods = route.methods.length > 0 ? route.methods.join(',') : 'ALL';
      const auth = route.authLevel === 'anonymous' ? '' : ` (authLevel ${route.authLevel})`;
      lines.push(`        ${fn.name}: [${methods}] ${ctx.baseUrl}${ctx.routeTable.publicPath(route)}${auth}`);
    } else {
      lines.push(`        ${fn.name}: ${describeTrigger(fn, ctx.claimedTriggerTypes)}`);
    }
  }
  if (sorted.length === 0) lines.push('        (none registered)');
  return lines.join('\n');
}

function describeTrigger(fn: RegisteredFunction, claimed: ReadonlySet<string>): string {
  const t = fn.trigger;
  switch (t.type) {
    case 'queueTrigger':
      return `queueTrigger (queue "${resolved(t.queueName)}", connection ${String(t.connection ?? 'AzureWebJobsStorage')})`;
    case 'timerTrigger':
      return `timerTrigger (schedule "${resolved(t.schedule)}"${t.runOnStartup ? ', runOnStartup' : ''})`;
    default:
      return claimed.has(t.type) ? t.type : `${t.type} (not supported by the local host; never triggered)`;
  }
}

function resolved(value: unknown): string {
  try {
    return resolveAppSettingExpressions(String(value), 'banner');
  } catch {
    return String(value);
  }
}
