/** The OpenAPI document: generated from the zod schemas, complete, internally consistent, and true to the code. */
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import YAML from 'yaml';
import { buildOpenApiDocument } from '../../shared/adapters/openapi';
import { parseJobSpec, specHash } from '../../shared/core/spec';
import { toJobView, type JobRecord } from '../../shared/adapters/state';

type Json = Record<string, unknown>;
const doc = buildOpenApiDocument({ baseUrl: 'http://127.0.0.1:7071/' });
const examplesDir = path.join(__dirname, '../../examples/jobs');

function ajvFor(document: Json) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(document, 'openapi');
  return (name: string) => ajv.getSchema(`openapi#/components/schemas/${name}`)!;
}

test('the document is plain JSON: serializes and parses back unchanged', () => {
  expect(JSON.parse(JSON.stringify(doc))).toEqual(doc);
  expect(doc.openapi).toBe('3.1.0');
  expect(doc.servers).toEqual([{ url: 'http://127.0.0.1:7071' }]);
});

test('every route and method of the job API is described', () => {
  const paths = doc.paths as Record<string, Json>;
  const ops = Object.entries(paths).flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`));
  expect(ops.sort()).toEqual([
    'DELETE /api/jobs/{id}',
    'GET /api/health',
    'GET /api/jobs',
    'GET /api/jobs/{id}',
    'GET /api/jobs/{id}/logs',
    'GET /api/jobs/{id}/outputs',
    'GET /api/me',
    'GET /api/openapi.json',
    'GET /api/queues',
    'GET /api/usage',
    'POST /api/jobs',
    'POST /api/jobs/{id}/rerun',
    'POST /api/uploads',
  ]);
  const post = paths['/api/jobs'].post as Json;
  expect(Object.keys(post.responses as Json).sort()).toEqual(['200', '202', '400', '401', '403', '409', '413', '415', '503']);
  expect(Object.keys((post.requestBody as { content: Json }).content)).toEqual(['application/json', 'application/yaml']);
  expect((post.parameters as { name: string; in: string }[]).map((p) => `${p.in}:${p.name}`)).toEqual(['header:Idempotency-Key', 'query:dryRun']);
  expect(JSON.stringify((post.responses as Json)['200'])).toContain('#/components/schemas/ExplainDocument');
  const list = paths['/api/jobs'].get as { parameters: { name: string }[] };
  expect(list.parameters.map((p) => p.name)).toEqual(['state', 'tag', 'createdFrom', 'createdTo', 'top', 'continuationToken']);
  expect((paths['/api/jobs/{id}'].delete as Json).security).toEqual(post.security);
  expect(doc.components).toMatchObject({
    securitySchemes: {
      entraId: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      operatorKey: { type: 'apiKey', in: 'header', name: 'x-functions-key' },
      operatorKeyQuery: { type: 'apiKey', in: 'query', name: 'code' },
    },
  });
});

test('every job operation declares its security: the app roles that grant it, or an operator key; health and the document are open', () => {
  const paths = doc.paths as Record<string, Record<string, { security?: unknown[] }>>;
  const roles = (p: string, m: string) => (paths[p][m].security as { entraId?: string[] }[]).find((s) => s.entraId)?.entraId;
  expect(roles('/api/jobs', 'post')).toEqual(['Jobs.Submit', 'Jobs.Admin']);
  expect(roles('/api/jobs/{id}', 'delete')).toEqual(['Jobs.Submit', 'Jobs.Admin']);
  for (const [p, m] of [
    ['/api/jobs', 'get'],
    ['/api/jobs/{id}', 'get'],
    ['/api/jobs/{id}/logs', 'get'],
    ['/api/usage', 'get'],
    ['/api/me', 'get'],
  ]) {
    expect({ op: `${m} ${p}`, roles: roles(p, m) }).toEqual({ op: `${m} ${p}`, roles: ['Jobs.Read', 'Jobs.Submit', 'Jobs.Admin'] });
    expect(paths[p][m].security).toEqual(expect.arrayContaining([{ operatorKey: [] }, { operatorKeyQuery: [] }]));
  }
  expect(paths['/api/health'].get.security).toEqual([]);
  expect(paths['/api/openapi.json'].get.security).toEqual([]);
});

test('every $ref points at a schema that exists', () => {
  const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
  expect(refs.length).toBeGreaterThan(5);
  const schemas = (doc.components as { schemas: Json }).schemas;
  for (const r of refs) {
    const target = r.slice(8, -1);
    expect(target.startsWith('#/components/schemas/')).toBe(true);
    expect(schemas[target.slice('#/components/schemas/'.length)]).toBeDefined();
  }
});

test('the request schema accepts every example spec and the 400/409 schemas match what the code produces', () => {
  const schema = ajvFor(doc);
  const validateSpec = schema('JobSpec');
  const files = readdirSync(examplesDir).filter((f) => /\.(ya?ml|json)$/.test(f));
  expect(files.length).toBeGreaterThanOrEqual(2);
  for (const f of files) {
    const raw = YAML.parse(readFileSync(path.join(examplesDir, f), 'utf8'));
    expect({ file: f, valid: validateSpec(raw), errors: validateSpec.errors }).toMatchObject({ file: f, valid: true });
  }
  // The schema is generated, not hand-written: a field the zod schema refuses is refused here too.
  expect(validateSpec({ name: 'x', pool: { vmSize: 'Standard_D2s_v3', nodes: 101 }, mpi: { runtime: 'openmpi', command: 'a' } })).toBe(false);
  expect(validateSpec({ name: 'x', pool: { nodes: 1 }, mpi: { runtime: 'openmpi', command: 'a' }, extra: 1 })).toBe(false);

  const bad = parseJobSpec('name: "a b"\npool: {nodes: 0}\n');
  expect(bad.ok).toBe(false);
  const validate400 = schema('ValidationErrorResponse');
  expect(validate400(bad.ok ? {} : { errors: bad.errors })).toBe(true);
});

test('a job view built by toJobView matches the JobView and SubmitJobResponse schemas', () => {
  const schema = ajvFor(doc);
  const parsed = parseJobSpec(readFileSync(path.join(examplesDir, 'docker-intelmpi-hb.yaml'), 'utf8'), 'application/yaml');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const record: JobRecord = {
    id: 'job-1',
    name: parsed.spec.name,
    owner: 'alice',
    tags: parsed.spec.tags,
    specHash: specHash(parsed.spec),
    spec: parsed.spec,
    state: 'Running',
    stage: 'mpirun started',
    progress: { ranks: 480 },
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:10:00.000Z',
    batchPoolId: 'pool-job-1',
    batchJobId: 'job-1',
    eventSeq: 5,
    error: { code: 'X', message: 'y' },
  };
  const view = toJobView(record, { baseUrl: 'http://127.0.0.1:7071', includeSpec: true });
  expect(view.links.self).toBe('http://127.0.0.1:7071/api/jobs/job-1');
  const validateView = schema('JobView');
  expect({ valid: validateView(view), errors: validateView.errors }).toMatchObject({ valid: true });
  expect(validateView({ ...view, state: 'Exploded' })).toBe(false);
  const validateSubmit = schema('SubmitJobResponse');
  expect(validateSubmit({ job: view, statusUrl: view.links.self, cancelUrl: view.links.cancel })).toBe(true);
});
