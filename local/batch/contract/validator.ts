/**
 * A contract validator for Batch REST exchanges, built from the official Swagger document
 * (BatchService-2022-10-01.16.0.json). It answers three questions about one request/response pair:
 * which operation is it, does the request fit that operation (path, query, headers, body), and does
 * the response fit (status code, body schema, documented header formats).
 *
 * Strict on purpose: objects refuse properties the spec does not define (see swaggerToJsonSchema.ts),
 * and unknown query parameters are refused, so both the emulator and the adapter are held to the spec.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { CACHEABLE_CODE, cachingCompiler } from './compiledValidators';
import { registerBatchFormats } from './formats';
import { dataPlaneDocument } from './sdkContract';
import { compilePathTemplate, matchPathTemplate, type PathTemplate } from './pathTemplates';
import { coerceParameterValue, convertDefinitions, convertSchema, parameterSchema, type JsonSchema, type SwaggerParameter } from './swaggerToJsonSchema';

export const SPEC_FILE = 'BatchService-2022-10-01.16.0.json';

/** One request/response pair as the emulator's onExchange hook (or any recorder) reports it. */
export interface ContractExchange {
  method: string;
  /** Path as sent, optionally with the query string (then `query` may be omitted). */
  path: string;
  query?: Record<string, string | string[] | undefined> | URLSearchParams | string;
  /** Request headers. */
  headers?: Record<string, string | string[] | number | undefined>;
  /** Request body: text, bytes or already-parsed JSON. */
  requestBody?: unknown;
  status?: number;
  responseBody?: unknown;
  responseHeaders?: Record<string, string | string[] | number | undefined>;
}

/** A query parameter as the spec declares it. */
export interface QueryParameterSpec {
  name: string;
  required: boolean;
  type?: string;
  format?: string;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
}

/** What the spec says about one operation's request, for a server that checks requests at the door. */
export interface OperationDescription {
  operationId: string;
  method: string;
  /** The spec's path template, e.g. /pools/{poolId}/resize. */
  template: string;
  query: QueryParameterSpec[];
  /** Absent when the operation takes no body. */
  body?: { name: string; required: boolean };
}

export interface ContractValidator {
  /** The spec's operationId for this method and path, or undefined when the spec has none. */
  matchOperation(method: string, path: string): string | undefined;
  /** The operation for this method and path with its query parameters and body, or undefined. */
  describeOperation(method: string, path: string): OperationDescription | undefined;
  /** Schema errors of a request body for the operation, in ajv's order (empty when it conforms or takes no body). */
  requestBodyErrors(operationId: string, body: unknown): ErrorObject[];
  /** Problems with the request; empty when it conforms. */
  validateRequest(exchange: ContractExchange): string[];
  /** Problems with the response; empty when it conforms. */
  validateResponse(exchange: ContractExchange): string[];
  /** Every operationId in the spec. */
  operationIds(): string[];
}

export interface ContractValidatorOptions {
  /**
   * Path of an official Swagger file to compile instead (contract tests use ../shared/specs/). Without it (and
   * without BATCH_SPEC_PATH) the contract comes from the @azure/batch SDK's mappers (sdkContract.ts), so the
   * emulator runs in a clone that has no ../shared beside it.
   */
  specPath?: string;
  /** Where compiled validators are kept across processes (compiledValidators.ts); the default is in node_modules/.cache. */
  cacheDir?: string;
}

interface SwaggerResponse {
  schema?: JsonSchema;
  headers?: Record<string, { type?: string; format?: string }>;
}

interface SwaggerOperation {
  operationId: string;
  parameters?: SwaggerParameter[];
  responses: Record<string, SwaggerResponse>;
}

interface Operation {
  operationId: string;
  method: string;
  template: PathTemplate;
  parameters: SwaggerParameter[];
  responses: Record<string, SwaggerResponse>;
}

interface Found {
  op: Operation;
  pathParams: Readonly<Record<string, string>>;
}

interface SwaggerDocument {
  info: { version: string };
  paths: Record<string, Record<string, SwaggerOperation>>;
  definitions: Record<string, JsonSchema>;
  parameters: Record<string, SwaggerParameter>;
}

/** Response bodies of the real service carry OData annotations the spec does not model as properties. */
const ODATA_ANNOTATION = 'odata.metadata';

/** The official Swagger file in ../shared/specs/ beside the repository: reference data for contract tests only. */
export function defaultSpecPath(): string {
  // The shared folder sits beside the repository root, whether this file runs from sources or from dist/.
  for (let dir = __dirname; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'host.json'))) return resolve(dir, '..', 'shared', 'specs', SPEC_FILE);
    if (dirname(dir) === dir) return resolve(__dirname, '..', '..', '..', '..', 'shared', 'specs', SPEC_FILE);
  }
}

export function createContractValidator(options: ContractValidatorOptions = {}): ContractValidator {
  const specPath = options.specPath ?? process.env.BATCH_SPEC_PATH;
  const doc = specPath ? (JSON.parse(readFileSync(specPath, 'utf8')) as SwaggerDocument) : (dataPlaneDocument() as SwaggerDocument);

  const ajv = new Ajv({ allErrors: true, strict: false, code: CACHEABLE_CODE });
  registerBatchFormats(ajv);
  const compile = cachingCompiler({
    ajv,
    documents: [convertDefinitions(doc.definitions, specPath !== undefined)],
    dir: options.cacheDir,
  });

  const operations = collectOperations(doc);
  const byOperationId = new Map(operations.map((op) => [op.operationId, op]));
  // Compiled validators by the text of their converted schema (equal schemas share one), and by the spec's own schema
  // object, so a request or answer after the first costs neither the conversion nor the text.
  const validatorCache = new Map<string, ValidateFunction>();
  const bySchema = new WeakMap<JsonSchema, ValidateFunction>();
  const byParameter = new WeakMap<object, ValidateFunction>();

  function compiled(schema: JsonSchema): ValidateFunction {
    const key = JSON.stringify(schema);
    let fn = validatorCache.get(key);
    if (!fn) validatorCache.set(key, (fn = compile(schema)));
    return fn;
  }

  function schemaValidator(schema: JsonSchema): ValidateFunction {
    let fn = bySchema.get(schema);
    if (!fn) bySchema.set(schema, (fn = compiled(convertSchema(schema))));
    return fn;
  }

  function paramValidator(param: { type?: string; format?: string; enum?: unknown[] }): ValidateFunction {
    let fn = byParameter.get(param);
    if (!fn) byParameter.set(param, (fn = compiled(parameterSchema(param))));
    return fn;
  }

  // A recorder asks about each exchange three times (operation, request, response): the last answer is kept.
  let last: { method: string; rawPath: string; found: Found | undefined } | undefined;

  function find(method: string, rawPath: string): Found | undefined {
    if (last?.method === method && last.rawPath === rawPath) return last.found;
    const path = rawPath.split('?')[0];
    const upper = method.toUpperCase();
    let best: Found | undefined;
    for (const op of operations) {
      if (op.method !== upper) continue;
      const params = matchPathTemplate(op.template, path);
      if (params && (!best || op.template.specificity > best.op.template.specificity)) best = { op, pathParams: params };
    }
    last = { method, rawPath, found: best };
    return best;
  }

  function validateRequest(ex: ContractExchange): string[] {
    const found = find(ex.method, ex.path);
    if (!found) return [`${ex.method.toUpperCase()} ${ex.path}: no operation in the spec matches this method and path`];
    const { op, pathParams } = found;
    const where = `${op.operationId} request`;
    const problems: string[] = [];

    const query = normaliseQuery(ex);
    const headers = lowerCaseHeaders(ex.headers);
    const known = new Set<string>();
    for (const param of op.parameters) {
      if (param.in === 'query') known.add(param.name);
      let raw: string | undefined;
      if (param.in === 'path') raw = pathParams[param.name];
      else if (param.in === 'query') raw = query.get(param.name);
      else if (param.in === 'header') raw = headers.get(param.name.toLowerCase());
      else continue;
      if (raw === undefined) {
        if (param.required) problems.push(`${where}: required ${param.in} parameter "${param.name}" is missing`);
        continue;
      }
      const value = coerceParameterValue(param.type, raw);
      const check = paramValidator(param);
      if (!check(value)) {
        problems.push(`${where}: ${param.in} parameter "${param.name}"=${JSON.stringify(raw)} ${describeErrors(check.errors)}`);
      }
    }
    const apiVersion = query.get('api-version');
    if (apiVersion !== undefined && apiVersion !== doc.info.version) {
      problems.push(`${where}: api-version "${apiVersion}" is not the spec's version "${doc.info.version}"`);
    }
    for (const name of query.keys()) {
      if (!known.has(name)) problems.push(`${where}: query parameter "${name}" is not defined by the spec`);
    }

    const bodyParam = op.parameters.find((p) => p.in === 'body');
    const body = parseBody(ex.requestBody);
    if (body.error) {
      problems.push(`${where}: body is not JSON (${body.error})`);
    } else if (!bodyParam) {
      if (body.present) problems.push(`${where}: the spec defines no body for this operation, but one was sent`);
    } else if (!body.present) {
      if (bodyParam.required) problems.push(`${where}: required body "${bodyParam.name}" is missing`);
    } else {
      const contentType = headers.get('content-type');
      if (contentType !== undefined && !/^application\/json\b/i.test(contentType)) {
        problems.push(`${where}: content-type "${contentType}" is not application/json`);
      }
      const check = schemaValidator(bodyParam.schema ?? {});
      if (!check(body.value)) problems.push(...formatSchemaErrors(`${where} body`, check.errors));
    }
    return problems;
  }

  function validateResponse(ex: ContractExchange): string[] {
    const found = find(ex.method, ex.path);
    if (!found) return [`${ex.method.toUpperCase()} ${ex.path}: no operation in the spec matches this method and path`];
    const { op } = found;
    const status = ex.status;
    if (status === undefined) return [`${op.operationId} response: no status code recorded`];
    const where = `${op.operationId} response ${status}`;
    let response = op.responses[String(status)];
    if (!response) {
      if (status < 400 || !op.responses.default) {
        const documented = Object.keys(op.responses).join(', ');
        return [`${where}: status ${status} is not documented for this operation (documented: ${documented})`];
      }
      response = op.responses.default;
    }
    const problems: string[] = [];

    const headers = lowerCaseHeaders(ex.responseHeaders);
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      const raw = headers.get(name.toLowerCase());
      if (raw === undefined) continue;
      const check = paramValidator(header);
      if (!check(coerceParameterValue(header.type, raw))) {
        problems.push(`${where}: header "${name}"=${JSON.stringify(raw)} ${describeErrors(check.errors)}`);
      }
    }

    const schema = response.schema;
    if (schema && schema.format === 'file') return problems; // binary download; nothing to check as JSON
    if (ex.method.toUpperCase() === 'HEAD') return problems;
    const body = parseBody(ex.responseBody);
    if (body.error) {
      problems.push(`${where}: body is not JSON (${body.error})`);
    } else if (!schema) {
      if (body.present) problems.push(`${where}: the spec defines no body for this response, but one was returned`);
    } else if (!body.present) {
      problems.push(`${where}: the spec defines a body for this response, but none was returned`);
    } else {
      const check = schemaValidator(schema);
      if (!check(stripODataAnnotation(body.value))) problems.push(...formatSchemaErrors(`${where} body`, check.errors));
    }
    return problems;
  }

  function describeOperation(method: string, path: string): OperationDescription | undefined {
    const found = find(method, path);
    if (!found) return undefined;
    const { op } = found;
    const bodyParam = op.parameters.find((p) => p.in === 'body');
    return {
      operationId: op.operationId,
      method: op.method,
      template: op.template.template,
      query: op.parameters
        .filter((p) => p.in === 'query')
        .map((p) => ({ name: p.name, required: p.required === true, type: p.type, format: p.format, enum: p.enum, minimum: p.minimum, maximum: p.maximum })),
      body: bodyParam ? { name: bodyParam.name, required: bodyParam.required === true } : undefined,
    };
  }

  function requestBodyErrors(operationId: string, body: unknown): ErrorObject[] {
    const bodyParam = byOperationId.get(operationId)?.parameters.find((p) => p.in === 'body');
    if (!bodyParam) return [];
    const check = schemaValidator(bodyParam.schema ?? {});
    return check(body) ? [] : [...(check.errors ?? [])];
  }

  return {
    matchOperation: (method, path) => find(method, path)?.op.operationId,
    describeOperation,
    requestBodyErrors,
    validateRequest,
    validateResponse,
    operationIds: () => [...byOperationId.keys()],
  };
}

function collectOperations(doc: SwaggerDocument): Operation[] {
  const operations: Operation[] = [];
  for (const [template, methods] of Object.entries(doc.paths)) {
    const compiled = compilePathTemplate(template);
    for (const [method, op] of Object.entries(methods)) {
      if (method === 'parameters') continue;
      const parameters = (op.parameters ?? []).map((p) => resolveParameter(doc, p));
      operations.push({
        operationId: op.operationId,
        method: method.toUpperCase(),
        template: compiled,
        parameters,
        responses: op.responses,
      });
    }
  }
  return operations;
}

function resolveParameter(doc: SwaggerDocument, param: SwaggerParameter): SwaggerParameter {
  if (!param.$ref) return param;
  const m = /^#\/parameters\/(.+)$/.exec(param.$ref);
  const resolved = m ? doc.parameters[m[1]] : undefined;
  if (!resolved) throw new Error(`unresolvable parameter reference ${param.$ref}`);
  return resolved;
}

function normaliseQuery(ex: ContractExchange): Map<string, string> {
  const out = new Map<string, string>();
  const q = ex.query;
  if (q === undefined || typeof q === 'string') {
    const text = typeof q === 'string' ? q : ex.path.includes('?') ? ex.path.slice(ex.path.indexOf('?') + 1) : '';
    for (const [k, v] of new URLSearchParams(text.replace(/^\?/, ''))) out.set(k, v);
  } else if (q instanceof URLSearchParams) {
    for (const [k, v] of q) out.set(k, v);
  } else {
    for (const [k, v] of Object.entries(q)) {
      if (v === undefined) continue;
      out.set(k, Array.isArray(v) ? v.join(',') : v);
    }
  }
  return out;
}

function lowerCaseHeaders(headers: ContractExchange['headers']): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of Object.entries(headers ?? {})) {
    if (v === undefined) continue;
    out.set(k.toLowerCase(), Array.isArray(v) ? v.join(', ') : String(v));
  }
  return out;
}

function parseBody(body: unknown): { present: boolean; value?: unknown; error?: string } {
  if (body === undefined || body === null) return { present: false };
  let text: string | undefined;
  if (typeof body === 'string') text = body;
  else if (Buffer.isBuffer(body)) text = body.toString('utf8');
  else if (body instanceof Uint8Array) text = Buffer.from(body).toString('utf8');
  if (text === undefined) return { present: true, value: body };
  if (text.trim() === '') return { present: false };
  try {
    return { present: true, value: JSON.parse(text) };
  } catch (err) {
    return { present: true, error: (err as Error).message };
  }
}

function stripODataAnnotation(value: unknown): unknown {
  if (!value || typeof value !== 'object' || Array.isArray(value) || !(ODATA_ANNOTATION in value)) return value;
  const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  if (typeof copy[ODATA_ANNOTATION] === 'string') delete copy[ODATA_ANNOTATION];
  return copy;
}

function describeErrors(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? []).map((e) => e.message ?? e.keyword).join('; ');
}

function formatSchemaErrors(where: string, errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((e) => {
    const at = e.instancePath || '/';
    const params = e.params as Record<string, unknown>;
    if (e.keyword === 'additionalProperties') {
      return `${where}: ${at} has property "${String(params.additionalProperty)}" that the spec does not define`;
    }
    if (e.keyword === 'required') return `${where}: ${at} is missing required property "${String(params.missingProperty)}"`;
    if (e.keyword === 'enum') return `${where}: ${at} must be one of ${JSON.stringify(params.allowedValues)}`;
    return `${where}: ${at} ${e.message ?? e.keyword}`;
  });
}
