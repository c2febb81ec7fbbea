/**
 * One route table (shared/adapters/openapi/routes.ts) for what functions/ serves and what the OpenAPI document describes:
 * every registered HTTP function is declared there and documented, every documented operation is registered.
 */
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { buildOpenApiDocument } from '../../shared/adapters/openapi';
import { ROUTES, securityOf } from '../../shared/adapters/openapi/routes';

const http = jest.fn();
jest.mock('@azure/functions', () => ({ app: { http: (...args: unknown[]) => http(...args) } }));

const FUNCTIONS = path.join(__dirname, '..', '..', 'functions');
const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : e.name.endsWith('.ts') ? [p] : [];
  });

/** The names functions/ registers, read from its source (loading every trigger would start the whole app). */
function registeredNames(): string[] {
  const names: string[] = [];
  for (const file of sources(FUNCTIONS)) {
    const text = readFileSync(file, 'utf8');
    if (path.relative(FUNCTIONS, file) !== path.join('lib', 'route.ts')) {
      expect({ file, direct: /\bapp\.http\(/.test(text) }).toEqual({ file, direct: false });
    }
    for (const m of text.matchAll(/\bregisterRoute\(\s*'(\w+)'/g)) names.push(m[1]);
  }
  return names.sort();
}

function documentedOperations(): string[] {
  const paths = buildOpenApiDocument().paths as Record<string, Record<string, unknown>>;
  return Object.entries(paths)
    .flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`))
    .sort();
}

test('every route functions/ registers is declared once in the table, and every declared route is registered', () => {
  const registered = registeredNames();
  expect(new Set(registered).size).toBe(registered.length);
  expect(registered).toEqual(ROUTES.map((r) => r.name).sort());
  const keys = ROUTES.map((r) => `${r.method} ${r.route}`);
  expect(new Set(keys).size).toBe(keys.length);
});

test('the document describes exactly the declared API routes (the dashboard page is the one served route outside it)', () => {
  const declared = ROUTES.filter((r) => r.operationId !== null)
    .map((r) => `${r.method} /api/${r.route}`)
    .sort();
  expect(documentedOperations()).toEqual(declared);
  expect(ROUTES.filter((r) => r.operationId === null).map((r) => r.name)).toEqual(['dashboard']);
  const ids = ROUTES.flatMap((r) => (r.operationId === null ? [] : [r.operationId]));
  expect(new Set(ids).size).toBe(ids.length);
});

test("each documented operation carries the table's operationId, summary and security", () => {
  const paths = buildOpenApiDocument().paths as Record<string, Record<string, { operationId: string; summary: string; security: unknown }>>;
  for (const r of ROUTES) {
    if (r.operationId === null) continue;
    const op = paths[`/api/${r.route}`][r.method.toLowerCase()];
    expect({ name: r.name, operationId: op.operationId, summary: op.summary, security: op.security }).toEqual({
      name: r.name,
      operationId: r.operationId,
      summary: r.summary,
      security: securityOf(r.auth),
    });
  }
});

test('registerRoute registers with the method and route of the table, anonymous at the host (handlers authenticate)', async () => {
  const { registerRoute } = await import('../../functions/lib/route');
  const handler = jest.fn();
  registerRoute('cancelJob', { handler });
  expect(http).toHaveBeenCalledWith('cancelJob', { handler, route: 'jobs/{id}', methods: ['DELETE'], authLevel: 'anonymous' });
});
