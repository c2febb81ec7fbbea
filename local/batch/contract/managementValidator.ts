/**
 * A contract validator for Batch management-plane (Resource Manager) exchanges, built from the official Swagger
 * document BatchManagement-2023-11-01.json and the ARM common types it points into (see
 * ../shared/specs/README-management.md). Same questions as validator.ts for the data plane: which operation, does
 * the request fit it, does the response fit it.
 *
 * The management spec composes models with `allOf` (Pool = ProxyResource + properties) and refers into other files,
 * so it is compiled with JSON Schema 2019-09: every referenced file becomes one schema document, and strictness is
 * `unevaluatedProperties: false` on each model that is not itself a base of another (a base checked alone would
 * refuse the properties its extension adds). `privatelinks.json` is not in the design folder: its one model is left
 * open (pools never use it).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import Ajv2019 from 'ajv/dist/2019';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type Ajv from 'ajv';
import { CACHEABLE_CODE, cachingCompiler } from './compiledValidators';
import { registerBatchFormats } from './formats';
import { managementDocument } from './sdkContract';
import { compilePathTemplate, matchPathTemplate, type PathTemplate } from './pathTemplates';
import { coerceParameterValue, parameterSchema, type JsonSchema, type SwaggerParameter } from './swaggerToJsonSchema';
import type { ContractExchange } from './validator';

export const MANAGEMENT_SPEC_FILE = 'BatchManagement-2023-11-01.json';
export const MANAGEMENT_API_VERSION = '2023-11-01';

const COMMON_PREFIX = '../../../../../common-types/';
/** The referenced files (under common-types/), by the id their converted document gets (ids without "/": ajv reads those as relative URIs). */
const DOCUMENTS: Record<string, string | undefined> = {
  'arm-v3-types': 'resource-management/v3/types.json',
  'arm-v4-managedidentity': 'resource-management/v4/managedidentity.json',
  'arm-v4-privatelinks': undefined,
};
const PRIVATELINKS = 'resource-management/v4/privatelinks.json';
const MAIN_ID = 'batch-management';
const DOC_KEYWORDS = new Set(['title', 'description', 'default', 'externalDocs', 'example', 'readOnly', 'discriminator']);

interface Operation {
  operationId: string;
  method: string;
  template: PathTemplate;
  parameters: SwaggerParameter[];
  responses: Record<string, { schema?: JsonSchema; headers?: Record<string, { type?: string; format?: string }> }>;
}

export interface ManagementValidator {
  matchOperation(method: string, path: string): string | undefined;
  validateRequest(exchange: ContractExchange): string[];
  validateResponse(exchange: ContractExchange): string[];
  /** Schema errors of a request body for the operation (empty when it conforms or takes no body). */
  requestBodyErrors(operationId: string, body: unknown): ErrorObject[];
  operationIds(): string[];
}

/** ../shared/specs beside the repository: reference data for contract tests only. */
export function defaultManagementSpecDir(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'host.json'))) return resolve(dir, '..', 'shared', 'specs');
    if (dirname(dir) === dir) return resolve(__dirname, '..', '..', '..', '..', 'shared', 'specs');
  }
}

/** `$ref` of any document → the ajv reference of its converted form. */
function convertRef(ref: string, currentDoc: string): string {
  const [file, pointer = ''] = ref.split('#');
  let doc = currentDoc;
  if (file) {
    const rel = file.startsWith(COMMON_PREFIX) ? file.slice(COMMON_PREFIX.length) : file.replace(/^(\.\.\/)+/, '').replace(/^\.\//, '');
    const known = Object.entries(DOCUMENTS).find(([, f]) => (f ?? PRIVATELINKS).split('/').slice(-2).join('/') === rel.split('/').slice(-2).join('/'));
    if (!known) throw new Error(`unknown referenced file ${file}`);
    doc = known[0];
  }
  return `${doc}#${pointer}`;
}

function convert(schema: JsonSchema, doc: string): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key.startsWith('x-ms-') || DOC_KEYWORDS.has(key) || key === 'x-nullable') continue;
    if (key === '$ref') out.$ref = convertRef(String(value), doc);
    else if (key === 'properties')
      out.properties = Object.fromEntries(Object.entries(value as Record<string, JsonSchema>).map(([k, v]) => [k, convert(v, doc)]));
    else if (key === 'items') out.items = convert(value as JsonSchema, doc);
    else if (key === 'additionalProperties') out.additionalProperties = typeof value === 'boolean' ? value : convert(value as JsonSchema, doc);
    else if (key === 'allOf') out.allOf = (value as JsonSchema[]).map((v) => convert(v, doc));
    else out[key] = value;
  }
  return out;
}

/** Definitions other definitions extend through allOf: they stay open, their extensions are closed. */
function baseDefinitions(docs: Record<string, { definitions: Record<string, JsonSchema> }>): Set<string> {
  const bases = new Set<string>();
  for (const [doc, d] of Object.entries(docs)) {
    for (const def of Object.values(d.definitions)) {
      for (const part of (def.allOf as JsonSchema[] | undefined) ?? []) if (typeof part.$ref === 'string') bases.add(convertRef(part.$ref, doc));
    }
  }
  return bases;
}

function documentSchema(id: string, definitions: Record<string, JsonSchema>, bases: Set<string>): JsonSchema {
  const converted: Record<string, JsonSchema> = {};
  for (const [name, def] of Object.entries(definitions)) {
    const schema = convert(def, id);
    if ((schema.properties || schema.allOf) && !bases.has(`${id}#/definitions/${name}`) && schema.additionalProperties === undefined)
      schema.unevaluatedProperties = false;
    converted[name] = schema;
  }
  return { $id: id, definitions: converted };
}

/** Inline object schemas (no $ref) are closed too, as in the data-plane converter. */
function closeInline(schema: JsonSchema): JsonSchema {
  if (schema.properties && schema.additionalProperties === undefined && schema.unevaluatedProperties === undefined) schema.unevaluatedProperties = false;
  return schema;
}

/**
 * `specDir`: a folder holding the official Swagger files (contract tests pass ../shared/specs). Without it (and
 * without BATCH_SPEC_DIR) the contract comes from the @azure/arm-batch SDK's mappers (sdkContract.ts), so the
 * emulator runs in a clone that has no ../shared beside it. `cacheDir`: where compiled validators are kept
 * (compiledValidators.ts; the default is in node_modules/.cache).
 */
export function createManagementValidator(specDir = process.env.BATCH_SPEC_DIR, cacheDir?: string): ManagementValidator {
  type SpecFile = {
    definitions?: Record<string, JsonSchema>;
    parameters?: Record<string, SwaggerParameter>;
    paths?: Record<string, Record<string, { operationId: string; parameters?: SwaggerParameter[]; responses: Operation['responses'] }>>;
    info?: { version: string };
  };
  const read = (rel: string): SpecFile => {
    if (specDir) return JSON.parse(readFileSync(join(specDir, rel), 'utf8')) as SpecFile;
    // From the SDK: one self-contained document; the common-types files it would refer into are not needed.
    return rel === MANAGEMENT_SPEC_FILE ? (managementDocument() as SpecFile) : { definitions: {}, parameters: {} };
  };
  const main = read(MANAGEMENT_SPEC_FILE);
  const docs: Record<string, { definitions: Record<string, JsonSchema>; parameters: Record<string, SwaggerParameter> }> = {
    [MAIN_ID]: { definitions: main.definitions ?? {}, parameters: main.parameters ?? {} },
  };
  for (const [id, file] of Object.entries(DOCUMENTS)) {
    if (file) {
      const d = read(join('common-types', file));
      docs[id] = { definitions: d.definitions ?? {}, parameters: d.parameters ?? {} };
    } else {
      // Not copied into the design folder; nothing about pools refers to it.
      docs[id] = { definitions: { PrivateEndpointConnectionProperties: { type: 'object' } }, parameters: {} };
    }
  }
  // Refs inside the main document that name no file point into the main document.
  const normalise = (ref: string, doc: string) => convertRef(ref, doc);
  const bases = baseDefinitions(docs);
  const ajv = new Ajv2019({ allErrors: true, strict: false, code: CACHEABLE_CODE });
  registerBatchFormats(ajv as unknown as Ajv);
  ajv.addFormat('arm-id', { type: 'string', validate: (v: string) => /^\/subscriptions\/[^/]+\//i.test(v) || v.startsWith('/') });
  const compileCached = cachingCompiler({
    ajv,
    documents: Object.entries(docs).map(([id, d]) => documentSchema(id, d.definitions, bases)),
    dir: cacheDir,
  });

  const resolveParam = (p: SwaggerParameter, doc: string): SwaggerParameter => {
    if (!p.$ref) return p;
    const [target, pointer] = normalise(p.$ref, doc).split('#');
    const name = pointer.replace(/^\/parameters\//, '');
    const found = docs[target]?.parameters[name];
    if (!found) throw new Error(`unresolvable parameter ${p.$ref}`);
    return found;
  };

  const operations: Operation[] = [];
  for (const [template, methods] of Object.entries(main.paths ?? {})) {
    const compiled = compilePathTemplate(template);
    for (const [method, op] of Object.entries(methods)) {
      if (method === 'parameters') continue;
      operations.push({
        operationId: op.operationId,
        method: method.toUpperCase(),
        template: compiled,
        parameters: (op.parameters ?? []).map((p) => resolveParam(p, MAIN_ID)),
        responses: op.responses,
      });
    }
  }
  const byId = new Map(operations.map((o) => [o.operationId, o]));
  // By converted text (equal schemas share a validator) and by the spec's own object (later calls skip the conversion).
  const cache = new Map<string, ValidateFunction>();
  const bySchema = new WeakMap<JsonSchema, ValidateFunction>();
  const compile = (schema: JsonSchema): ValidateFunction => {
    let fn = bySchema.get(schema);
    if (fn) return fn;
    const converted = closeInline(convert(schema, MAIN_ID));
    const key = JSON.stringify(converted);
    fn = cache.get(key);
    if (!fn) cache.set(key, (fn = compileCached(converted)));
    bySchema.set(schema, fn);
    return fn;
  };
  const byParameter = new WeakMap<SwaggerParameter, { check: ValidateFunction; pattern?: RegExp }>();
  const parameterCheck = (p: SwaggerParameter) => {
    let c = byParameter.get(p);
    if (!c) {
      const pattern = (p as { pattern?: string }).pattern;
      byParameter.set(p, (c = { check: compile(parameterSchema(p)), pattern: pattern ? new RegExp(pattern) : undefined }));
    }
    return c;
  };

  function find(method: string, rawPath: string) {
    const path = rawPath.split('?')[0];
    let best: { op: Operation; params: Record<string, string> } | undefined;
    for (const op of operations) {
      if (op.method !== method.toUpperCase()) continue;
      const params = matchPathTemplate(op.template, path);
      if (params && (!best || op.template.specificity > best.op.template.specificity)) best = { op, params };
    }
    return best;
  }

  const bodyOf = (body: unknown): { present: boolean; value?: unknown; error?: string } => {
    if (body === undefined || body === null || body === '') return { present: false };
    if (typeof body !== 'string' && !Buffer.isBuffer(body)) return { present: true, value: body };
    try {
      return { present: true, value: JSON.parse(body.toString()) };
    } catch (e) {
      return { present: true, error: (e as Error).message };
    }
  };
  const lower = (h: ContractExchange['headers']) =>
    new Map(
      Object.entries(h ?? {})
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(', ') : String(v)]),
    );
  const queryOf = (ex: ContractExchange) => {
    const out = new Map<string, string>();
    const q = ex.query;
    if (q === undefined || typeof q === 'string') {
      const text = typeof q === 'string' ? q : ex.path.includes('?') ? ex.path.slice(ex.path.indexOf('?') + 1) : '';
      for (const [k, v] of new URLSearchParams(text.replace(/^\?/, ''))) out.set(k, v);
    } else if (q instanceof URLSearchParams) for (const [k, v] of q) out.set(k, v);
    else for (const [k, v] of Object.entries(q)) if (v !== undefined) out.set(k, Array.isArray(v) ? v.join(',') : v);
    return out;
  };
  const describe = (where: string, errors: ErrorObject[] | null | undefined) =>
    (errors ?? []).map((e) => {
      const p = e.params as Record<string, unknown>;
      if (e.keyword === 'unevaluatedProperties')
        return `${where}: ${e.instancePath || '/'} has property "${String(p.unevaluatedProperty)}" that the spec does not define`;
      if (e.keyword === 'required') return `${where}: ${e.instancePath || '/'} is missing required property "${String(p.missingProperty)}"`;
      return `${where}: ${e.instancePath || '/'} ${e.message ?? e.keyword}${e.keyword === 'enum' ? ` ${JSON.stringify(p.allowedValues)}` : ''}`;
    });

  return {
    matchOperation: (method, path) => find(method, path)?.op.operationId,
    operationIds: () => [...byId.keys()],
    requestBodyErrors(operationId, body) {
      const p = byId.get(operationId)?.parameters.find((x) => x.in === 'body');
      if (!p) return [];
      const check = compile(p.schema ?? {});
      return check(body) ? [] : [...(check.errors ?? [])];
    },
    validateRequest(ex) {
      const found = find(ex.method, ex.path);
      if (!found) return [`${ex.method} ${ex.path}: no operation of the management spec matches`];
      const { op, params } = found;
      const where = `${op.operationId} request`;
      const problems: string[] = [];
      const query = queryOf(ex);
      const headers = lower(ex.headers);
      const known = new Set<string>();
      for (const p of op.parameters) {
        if (p.in === 'body') continue;
        if (p.in === 'query') known.add(p.name);
        const raw = p.in === 'path' ? params[p.name] : p.in === 'query' ? query.get(p.name) : headers.get(p.name.toLowerCase());
        if (raw === undefined) {
          if (p.required) problems.push(`${where}: required ${p.in} parameter "${p.name}" is missing`);
          continue;
        }
        const { check, pattern } = parameterCheck(p);
        if (!check(coerceParameterValue(p.type, raw)))
          problems.push(`${where}: ${p.in} parameter "${p.name}"=${JSON.stringify(raw)} ${(check.errors ?? []).map((e) => e.message).join('; ')}`);
        if (pattern && !pattern.test(raw))
          problems.push(`${where}: ${p.in} parameter "${p.name}"=${JSON.stringify(raw)} does not match ${(p as { pattern?: string }).pattern}`);
        const len = p as { minLength?: number; maxLength?: number };
        if ((len.minLength !== undefined && raw.length < len.minLength) || (len.maxLength !== undefined && raw.length > len.maxLength))
          problems.push(`${where}: ${p.in} parameter "${p.name}" has length ${raw.length} outside ${len.minLength ?? 0}..${len.maxLength ?? '∞'}`);
      }
      if (query.get('api-version') !== undefined && query.get('api-version') !== MANAGEMENT_API_VERSION)
        problems.push(`${where}: api-version "${query.get('api-version')}" is not ${MANAGEMENT_API_VERSION}`);
      for (const name of query.keys()) if (!known.has(name)) problems.push(`${where}: query parameter "${name}" is not defined by the spec`);
      const bodyParam = op.parameters.find((p) => p.in === 'body');
      const body = bodyOf(ex.requestBody);
      if (body.error) problems.push(`${where}: body is not JSON (${body.error})`);
      else if (!bodyParam) {
        if (body.present) problems.push(`${where}: the spec defines no body for this operation, but one was sent`);
      } else if (!body.present) {
        if (bodyParam.required) problems.push(`${where}: required body "${bodyParam.name}" is missing`);
      } else {
        const check = compile(bodyParam.schema ?? {});
        if (!check(body.value)) problems.push(...describe(`${where} body`, check.errors));
      }
      return problems;
    },
    validateResponse(ex) {
      const found = find(ex.method, ex.path);
      if (!found) return [`${ex.method} ${ex.path}: no operation of the management spec matches`];
      const { op } = found;
      const status = ex.status;
      const where = `${op.operationId} response ${status}`;
      let response = op.responses[String(status)];
      if (!response) {
        if (status === undefined || status < 400 || !op.responses.default)
          return [`${where}: status ${status} is not documented (documented: ${Object.keys(op.responses).join(', ')})`];
        response = op.responses.default;
      }
      const body = bodyOf(ex.responseBody);
      if (body.error) return [`${where}: body is not JSON (${body.error})`];
      if (!response.schema) return body.present ? [`${where}: the spec defines no body for this response, but one was returned`] : [];
      if (!body.present) return [`${where}: the spec defines a body for this response, but none was returned`];
      const check = compile(response.schema);
      return check(body.value) ? [] : describe(`${where} body`, check.errors);
    },
  };
}
