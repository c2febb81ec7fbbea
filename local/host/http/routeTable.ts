/** The host's HTTP route table: which function answers a path and method, with route prefix and auth level. */
import type { RegisteredFunction } from '../extension';
import { normalizeAuthLevel, type AuthLevel } from '../keys';
import { comparePrecedence, compileRouteTemplate, type CompiledRoute } from './routeTemplate';

export interface HttpRoute {
  fn: RegisteredFunction;
  /** Route without prefix, as declared (or the function name). */
  route: string;
  /** Upper-case methods; empty means every method. */
  methods: string[];
  authLevel: AuthLevel;
  compiled: CompiledRoute;
}

export type RouteResolution =
  { kind: 'match'; route: HttpRoute; params: Record<string, string> } | { kind: 'methodNotAllowed'; allowed: string[] } | { kind: 'notFound' };

export class RouteTable {
  readonly routes: HttpRoute[];

  constructor(
    functions: RegisteredFunction[],
    readonly routePrefix: string,
  ) {
    this.routes = functions
      .filter((fn) => fn.trigger.type.toLowerCase() === 'httptrigger')
      .map((fn) => {
        const declared = typeof fn.trigger.route === 'string' && fn.trigger.route !== '' ? fn.trigger.route : fn.name;
        const methods = Array.isArray(fn.trigger.methods) ? (fn.trigger.methods as string[]).map((m) => m.toUpperCase()) : [];
        let compiled: CompiledRoute;
        try {
          compiled = compileRouteTemplate(declared);
        } catch (err) {
          throw new Error(`Function "${fn.name}": ${(err as Error).message}`);
        }
        return { fn, route: declared.replace(/^\/+/, ''), methods, authLevel: normalizeAuthLevel(fn.trigger.authLevel, fn.name), compiled };
      })
      .sort((a, b) => comparePrecedence(a.compiled, b.compiled));
  }

  /** Path of a route as served, e.g. `/api/jobs/{id}`. */
  publicPath(route: HttpRoute): string {
    return '/' + [this.routePrefix, route.route].filter((s) => s !== '').join('/');
  }

  resolve(pathname: string, method: string): RouteResolution {
    let rest: string;
    if (this.routePrefix === '') {
      rest = pathname;
    } else {
      const prefix = `/${this.routePrefix}`;
      const lower = pathname.toLowerCase();
      if (lower !== prefix.toLowerCase() && !lower.startsWith(prefix.toLowerCase() + '/')) return { kind: 'notFound' };
      rest = pathname.slice(prefix.length);
    }
    const allowed = new Set<string>();
    for (const route of this.routes) {
      const params = route.compiled.match(rest);
      if (!params) continue;
      if (route.methods.length === 0 || route.methods.includes(method.toUpperCase())) return { kind: 'match', route, params };
      route.methods.forEach((m) => allowed.add(m));
    }
    return allowed.size > 0 ? { kind: 'methodNotAllowed', allowed: [...allowed] } : { kind: 'notFound' };
  }
}
