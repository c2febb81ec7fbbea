import { accountRoutes } from './account';
import { fileRoutes } from './files';
import type { Handler } from './http';
import { jobRoutes } from './jobs';
import { nodeUserRoutes } from './nodeUsers';
import { poolRoutes } from './pools';
import { taskRoutes } from './tasks';

interface Route {
  method: string;
  parts: string[];
  handler: Handler;
}

const routes: Route[] = [...poolRoutes, ...nodeUserRoutes, ...jobRoutes, ...taskRoutes, ...fileRoutes, ...accountRoutes].map(([method, pattern, handler]) => ({
  method,
  parts: pattern.split('/'),
  handler,
}));

/** The emulated routes (method and path pattern), e.g. to check each is an operation of the spec. */
export function emulatedRoutes(): { method: string; pattern: string }[] {
  return routes.map((r) => ({ method: r.method, pattern: r.parts.join('/') }));
}

export type RouteMatch = { handler: Handler; params: Record<string, string> } | { methodNotAllowed: true } | undefined;

/** Matches decoded path segments; `{x}` is one segment, `{*x}` the rest of the path. */
export function route(method: string, segments: string[]): RouteMatch {
  let pathMatched = false;
  for (const r of routes) {
    const params = matchParts(r.parts, segments);
    if (!params) continue;
    if (r.method === method) return { handler: r.handler, params };
    pathMatched = true;
  }
  return pathMatched ? { methodNotAllowed: true } : undefined;
}

function matchParts(parts: string[], segments: string[]): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    if (p.startsWith('{*')) {
      if (i >= segments.length) return undefined;
      params[p.slice(2, -1)] = segments.slice(i).join('/');
      return params;
    }
    if (i >= segments.length) return undefined;
    if (p.startsWith('{')) params[p.slice(1, -1)] = segments[i];
    else if (p !== segments[i].toLowerCase()) return undefined;
  }
  return parts.length === segments.length ? params : undefined;
}
