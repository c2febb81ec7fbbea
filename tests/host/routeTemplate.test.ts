import { compileRouteTemplate } from '../../local/host/http/routeTemplate';
import { RouteTable } from '../../local/host/http/routeTable';
import type { RegisteredFunction } from '../../local/host/extension';
import { globToRegExp } from '../../local/host/entryPoints';

describe('route templates', () => {
  it('matches parameters, optional parameters, defaults and catch-alls', () => {
    expect(compileRouteTemplate('jobs/{id}').match('/jobs/abc')).toEqual({ id: 'abc' });
    expect(compileRouteTemplate('jobs/{id}').match('/jobs')).toBeUndefined();
    expect(compileRouteTemplate('jobs/{id?}').match('/jobs')).toEqual({});
    expect(compileRouteTemplate('jobs/{id?}').match('/JOBS/7/')).toEqual({ id: '7' });
    expect(compileRouteTemplate('jobs/{page=1}').match('/jobs')).toEqual({ page: '1' });
    expect(compileRouteTemplate('files/{*rest}').match('/files/a/b/c.txt')).toEqual({ rest: 'a/b/c.txt' });
    expect(compileRouteTemplate('files/{name}.{ext}').match('/files/report.pdf')).toEqual({ name: 'report', ext: 'pdf' });
    expect(compileRouteTemplate('n/{v}').match('/n/a%20b')).toEqual({ v: 'a b' });
  });

  it('applies inline constraints', () => {
    const r = compileRouteTemplate('items/{id:int:min(1)}/{tag:alpha:length(2,4)?}');
    expect(r.match('/items/5')).toEqual({ id: '5' });
    expect(r.match('/items/5/abc')).toEqual({ id: '5', tag: 'abc' });
    expect(r.match('/items/0')).toBeUndefined();
    expect(r.match('/items/x')).toBeUndefined();
    expect(r.match('/items/5/a')).toBeUndefined();
    expect(compileRouteTemplate('g/{id:guid}').match('/g/0f8fad5b-d9cb-469f-a165-70867728950e')).toBeDefined();
    expect(compileRouteTemplate('g/{id:guid}').match('/g/nope')).toBeUndefined();
    expect(compileRouteTemplate('r/{code:regex(^j\\d+$)}').match('/r/j12')).toEqual({ code: 'j12' });
    expect(() => compileRouteTemplate('x/{id:nosuch}')).toThrow(/unknown constraint "nosuch"/);
  });

  it('prefers literal routes over parameters and reports allowed methods', () => {
    const fn = (name: string, route: string, methods: string[]): RegisteredFunction => {
      const trigger = { name: 'req', type: 'httpTrigger', direction: 'in' as const, route, methods, authLevel: 'anonymous' };
      return { name, trigger, bindings: { req: trigger } };
    };
    const table = new RouteTable([fn('byId', 'jobs/{id}', ['GET']), fn('openapi', 'jobs/openapi', ['GET']), fn('create', 'jobs', ['POST'])], 'api');
    const hit = table.resolve('/api/jobs/openapi', 'GET');
    expect(hit.kind === 'match' && hit.route.fn.name).toBe('openapi');
    const byId = table.resolve('/api/jobs/42', 'GET');
    expect(byId.kind === 'match' && byId.params).toEqual({ id: '42' });
    expect(table.resolve('/api/jobs', 'GET')).toEqual({ kind: 'methodNotAllowed', allowed: ['POST'] });
    expect(table.resolve('/other/jobs', 'POST')).toEqual({ kind: 'notFound' });
    expect(new RouteTable([fn('root', 'jobs', ['GET'])], '').resolve('/jobs', 'GET').kind).toBe('match');
  });
});

describe('entry-point globs', () => {
  it('matches like package.json main patterns', () => {
    expect(globToRegExp('dist/functions/*.js').test('dist/functions/health.js')).toBe(true);
    expect(globToRegExp('dist/functions/*.js').test('dist/functions/sub/x.js')).toBe(false);
    expect(globToRegExp('dist/**/*.js').test('dist/a/b/c.js')).toBe(true);
    expect(globToRegExp('dist/**/*.js').test('dist/c.js')).toBe(true);
    expect(globToRegExp('src/{a,b}.ts').test('src/b.ts')).toBe(true);
    expect(globToRegExp('src/{a,b}.ts').test('src/c.ts')).toBe(false);
  });
});
