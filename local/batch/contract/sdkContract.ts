/**
 * The emulator's run-time contract, derived from the registry SDKs the project already depends on
 * (@azure/batch for the data plane, @azure/arm-batch for the management plane) instead of the Swagger files
 * in ../shared/specs, which are reference data for tests only and are not shipped with the repository.
 *
 * Each SDK client sends every operation through `sendOperationRequest(args, operationSpec)`; replacing that
 * method on one client instance and calling each operation once (nothing is sent) yields the SDK's operation
 * specs: method, path, query/header/path parameters with their constraints, the body mapper, and the response
 * mappers per status. The model mappers (required properties, types, enums, constraints) become Swagger
 * definitions, so the existing validators compile them exactly as they compile the official document.
 *
 * What the mappers cannot say, this module says once: they do not tell integers from doubles (the spec's
 * int64/double properties are listed below), nor name operations (operationIds are rebuilt from the SDK's
 * group and method names). tests/batch/contract-drift.test.ts compares the result with the official Swagger
 * so the two cannot drift apart silently.
 */
import { readFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { contractCacheDir, readCacheEntry, sha256, writeCacheEntry } from './fileCache';
import type { JsonSchema, SwaggerParameter } from './swaggerToJsonSchema';

/** A Swagger 2.0 document, reduced to what the validators read. */
export interface SwaggerLikeDocument {
  info: { version: string };
  paths: Record<string, Record<string, { operationId: string; parameters?: SwaggerParameter[]; responses: Record<string, SwaggerLikeResponse> }>>;
  definitions: Record<string, JsonSchema>;
  parameters: Record<string, SwaggerParameter>;
}

interface SwaggerLikeResponse {
  schema?: JsonSchema;
  headers?: Record<string, { type?: string; format?: string }>;
}

/** The mapper shape shared by @azure/ms-rest-js and @azure/core-client. */
interface Mapper {
  serializedName?: string;
  required?: boolean;
  readOnly?: boolean;
  isConstant?: boolean;
  defaultValue?: unknown;
  constraints?: Record<string, unknown>;
  type: {
    name: string;
    className?: string;
    modelProperties?: Record<string, Mapper>;
    element?: Mapper;
    value?: Mapper;
    allowedValues?: unknown[];
  };
}

interface OperationParameter {
  parameterPath: string | string[] | Record<string, unknown>;
  mapper: Mapper;
}

interface OperationSpec {
  httpMethod: string;
  path?: string;
  urlParameters?: OperationParameter[];
  queryParameters?: OperationParameter[];
  headerParameters?: OperationParameter[];
  requestBody?: OperationParameter;
  responses: Record<string, { bodyMapper?: Mapper; headersMapper?: Mapper }>;
  serializer: { modelMappers: Record<string, Mapper> };
}

/** Data-plane number properties that the spec types int64 or double (every other integer there is int32). */
const INT64_PROPERTIES = new Set([
  'diskReadIOps',
  'diskWriteIOps',
  'readIOps',
  'writeIOps',
  'numSucceededTasks',
  'numFailedTasks',
  'numTaskRetries',
  'contentLength',
]);
const DOUBLE_PROPERTIES = new Set([
  'totalCoreHours',
  'avgCPUPercentage',
  'avgMemoryGiB',
  'peakMemoryGiB',
  'avgDiskGiB',
  'peakDiskGiB',
  'diskReadGiB',
  'diskWriteGiB',
  'networkReadGiB',
  'networkWriteGiB',
  'readIOGiB',
  'writeIOGiB',
]);

/** Group names of the management SDK → the spec's operationId prefixes. */
const MANAGEMENT_GROUPS: Record<string, string> = {
  batchAccountOperations: 'BatchAccounts',
  applicationPackageOperations: 'ApplicationPackages',
  applicationOperations: 'Applications',
  location: 'LocationOperations',
  operations: 'Operations',
  certificateOperations: 'Certificates',
  privateLinkResourceOperations: 'BatchManagementClientPrivateLinkResources',
  privateEndpointConnectionOperations: 'BatchManagementClientPrivateEndpointConnections',
  poolOperations: 'Pools',
};

/** Data-plane SDK class names → the spec's operationId prefixes. */
const DATA_GROUPS: Record<string, string> = { CertificateOperations: 'Certificate', ComputeNodeOperations: 'ComputeNode' };

/** Management operations whose SDK method name is not the spec's operation name. */
const MANAGEMENT_RENAMES: Record<string, string> = {
  ApplicationPackages_List: 'ApplicationPackages_ListByApplication',
  Applications_List: 'Applications_ListByBatchAccount',
  BatchAccounts_GetDetector: 'DetectorResponses_GetDetector',
  BatchAccounts_ListDetectors: 'DetectorResponses_ListByBatchAccount',
};

const capitalise = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** Calls every operation of every group of a client once with placeholders, capturing the spec instead of sending. */
function captureOperations(client: object, name: (group: string, groupClass: string, method: string) => string | undefined): Map<string, OperationSpec> {
  const captured = new Map<string, OperationSpec>();
  let last: OperationSpec | undefined;
  (client as { sendOperationRequest: unknown }).sendOperationRequest = (_args: unknown, spec: OperationSpec) => {
    last = spec;
    return new Promise(() => undefined); // never settles: nothing is sent, nothing is awaited
  };
  for (const [group, ops] of Object.entries(client)) {
    if (!ops || typeof ops !== 'object' || (ops as { client?: unknown }).client !== client) continue;
    const proto = Object.getPrototypeOf(ops) as Record<string, unknown>;
    for (const method of Object.getOwnPropertyNames(proto)) {
      const fn = proto[method];
      if (method === 'constructor' || typeof fn !== 'function' || /Next$|PagingPage$|PagingAll$/.test(method)) continue;
      const id = name(group, (ops as object).constructor.name, method);
      if (!id || captured.has(id)) continue;
      last = undefined;
      try {
        (fn as (...a: unknown[]) => unknown).call(ops, 'x', 'x', 'x', 'x', 'x');
      } catch {
        continue; // a method that is not an operation (argument checks of helpers)
      }
      if (last) captured.set(id, last);
    }
  }
  return captured;
}

function constraintKeywords(mapper: Mapper): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(mapper.constraints ?? {})) {
    if (key === 'InclusiveMinimum') out.minimum = value;
    else if (key === 'InclusiveMaximum') out.maximum = value;
    else if (key === 'ExclusiveMinimum') out.exclusiveMinimum = value;
    else if (key === 'ExclusiveMaximum') out.exclusiveMaximum = value;
    else if (key === 'MinLength') out.minLength = value;
    else if (key === 'MaxLength') out.maxLength = value;
    else if (key === 'MinItems') out.minItems = value;
    else if (key === 'MaxItems') out.maxItems = value;
    else if (key === 'UniqueItems') out.uniqueItems = value;
    else if (key === 'Pattern') out.pattern = value instanceof RegExp ? value.source : String(value);
  }
  return out;
}

/** One mapper → a Swagger schema (`$ref` for named composite models). */
function mapperSchema(mapper: Mapper, propertyName?: string): JsonSchema {
  const t = mapper.type;
  const base = constraintKeywords(mapper);
  // A constant (ContainerConfiguration.type: "dockerCompatible") is the spec's one-value enum.
  if (mapper.isConstant) return { type: 'string', enum: [mapper.defaultValue], ...base };
  switch (t.name) {
    case 'Composite':
      if (t.className && !t.modelProperties) return { $ref: `#/definitions/${t.className}` };
      return { ...compositeSchema(t.modelProperties ?? {}), ...base };
    case 'Sequence':
      return { type: 'array', items: t.element ? mapperSchema(t.element, propertyName) : {}, ...base };
    case 'Dictionary':
      return { type: 'object', additionalProperties: t.value ? mapperSchema(t.value) : {}, ...base };
    case 'Enum':
      return { type: 'string', enum: t.allowedValues, ...base };
    case 'Number':
      if (propertyName && DOUBLE_PROPERTIES.has(propertyName)) return { type: 'number', format: 'double', ...base };
      return { type: 'integer', format: propertyName && INT64_PROPERTIES.has(propertyName) ? 'int64' : 'int32', ...base };
    case 'Boolean':
      return { type: 'boolean', ...base };
    case 'Uuid':
      return { type: 'string', format: 'uuid', ...base };
    case 'DateTime':
      return { type: 'string', format: 'date-time', ...base };
    case 'DateTimeRfc1123':
      return { type: 'string', format: 'date-time-rfc1123', ...base };
    case 'TimeSpan':
      return { type: 'string', format: 'duration', ...base };
    case 'Stream':
      return { type: 'file', format: 'file' };
    case 'Object':
      return { type: 'object', ...base };
    default:
      return { type: 'string', ...base };
  }
}

/**
 * Model properties → an object schema. Resource Manager models flatten `properties.x` into dotted serialized
 * names; they are nested back into the wire shape here.
 */
function compositeSchema(modelProperties: Record<string, Mapper>): JsonSchema {
  const root: JsonSchema = { type: 'object', properties: {}, additionalProperties: false };
  for (const [prop, mapper] of Object.entries(modelProperties)) {
    // ms-rest-js writes "" for the array of a list result, which is `value` on the wire.
    const wire = (mapper.serializedName || prop).split(/(?<!\\)\./).map((s) => s.replace(/\\\./g, '.'));
    let node = root;
    for (const segment of wire.slice(0, -1)) {
      const props = node.properties as Record<string, JsonSchema>;
      node = props[segment] ??= { type: 'object', properties: {}, additionalProperties: false };
    }
    const leaf = wire[wire.length - 1];
    (node.properties as Record<string, JsonSchema>)[leaf] = mapperSchema(mapper, leaf);
    if (mapper.required && !mapper.readOnly) ((node.required ??= []) as string[]).push(leaf);
  }
  return root;
}

function parameter(p: OperationParameter, where: SwaggerParameter['in']): SwaggerParameter {
  const schema = mapperSchema(p.mapper, p.mapper.serializedName);
  const out: SwaggerParameter & JsonSchema = {
    name: p.mapper.serializedName ?? String(p.parameterPath),
    in: where,
    required: p.mapper.required === true || p.mapper.isConstant === true,
  };
  for (const key of ['type', 'format', 'enum', 'minimum', 'maximum', 'pattern', 'minLength', 'maxLength'] as const)
    if (schema[key] !== undefined) out[key] = schema[key] as never;
  return out;
}

function headersOf(mapper: Mapper | undefined): Record<string, { type?: string; format?: string }> | undefined {
  if (!mapper?.type.modelProperties) return undefined;
  const out: Record<string, { type?: string; format?: string }> = {};
  for (const [prop, m] of Object.entries(mapper.type.modelProperties)) {
    const s = mapperSchema(m, prop);
    out[m.serializedName ?? prop] = { type: s.type as string | undefined, format: s.format as string | undefined };
  }
  return out;
}

function documentFrom(version: string, operations: Map<string, OperationSpec>): SwaggerLikeDocument {
  const doc: SwaggerLikeDocument = { info: { version }, paths: {}, definitions: {}, parameters: {} };
  for (const [operationId, spec] of operations) {
    const path = `/${(spec.path ?? '').replace(/^\//, '')}`;
    const inPath = (p: OperationParameter) => path.includes(`{${p.mapper.serializedName ?? ''}}`);
    const parameters: SwaggerParameter[] = [
      ...(spec.urlParameters ?? []).filter(inPath).map((p) => ({ ...parameter(p, 'path'), required: true })),
      ...(spec.queryParameters ?? []).map((p) => parameter(p, 'query')),
      ...(spec.headerParameters ?? []).map((p) => parameter(p, 'header')),
    ];
    if (spec.requestBody) {
      // A flattened body (parameterPath an object) is named after its model, as the spec names it: jobDisableParameter.
      const model = spec.requestBody.mapper.serializedName ?? 'body';
      const name = typeof spec.requestBody.parameterPath === 'string' ? spec.requestBody.parameterPath : model.charAt(0).toLowerCase() + model.slice(1);
      parameters.push({ name, in: 'body', required: spec.requestBody.mapper.required === true, schema: mapperSchema(spec.requestBody.mapper) });
    }
    const responses: Record<string, SwaggerLikeResponse> = {};
    for (const [status, r] of Object.entries(spec.responses)) {
      responses[status] = { schema: r.bodyMapper ? mapperSchema(r.bodyMapper) : undefined, headers: headersOf(r.headersMapper) };
    }
    (doc.paths[path] ??= {})[spec.httpMethod.toLowerCase()] = { operationId, parameters, responses };
    for (const [className, mapper] of Object.entries(spec.serializer.modelMappers)) {
      if (!doc.definitions[className] && mapper.type.modelProperties) doc.definitions[className] = compositeSchema(mapper.type.modelProperties);
    }
  }
  return doc;
}

/** The Batch service (data plane) contract as @azure/batch states it, derived afresh (see {@link dataPlaneDocument}). */
export function deriveDataPlaneDocument(): SwaggerLikeDocument {
  // Loaded here, not at the top: with the derived document cached, a process never loads the SDK for its contract.
  const batchSdk = require('@azure/batch') as typeof import('@azure/batch');
  const client = new batchSdk.BatchServiceClient(
    new batchSdk.BatchSharedKeyCredentials('contract', Buffer.from('contract').toString('base64')),
    'https://contract.invalid',
  );
  const ops = captureOperations(
    client,
    (_group, groupClass, method) => `${DATA_GROUPS[groupClass] ?? groupClass}_${capitalise(method === 'deleteMethod' ? 'delete' : method)}`,
  );
  return documentFrom(client.apiVersion ?? '', ops);
}

/** The Batch management (Resource Manager) contract as @azure/arm-batch states it, derived afresh. */
export function deriveManagementDocument(): SwaggerLikeDocument {
  const armSdk = require('@azure/arm-batch') as typeof import('@azure/arm-batch');
  const credential = { getToken: () => Promise.resolve({ token: 'contract', expiresOnTimestamp: 0 }) };
  const client = new armSdk.BatchManagementClient(credential, 'contract');
  const ops = captureOperations(client, (group, _groupClass, method) => {
    const prefix = MANAGEMENT_GROUPS[group];
    if (!prefix) return undefined;
    const bare = method
      .replace(/^_/, '')
      .replace(/^begin(.)/, (_m, c: string) => c.toLowerCase())
      .replace(/AndWait$/, '');
    const id = `${prefix}_${capitalise(bare)}`;
    return MANAGEMENT_RENAMES[id] ?? id;
  });
  return documentFrom(client.apiVersion, ops);
}

/** Bumped when the cache entries' layout changes. */
const CACHE_FORMAT = 1;

/** The package's version, read from its package.json beside the resolved entry point (the SDK itself is not loaded). */
function packageVersion(name: string): string {
  const marker = `${sep}node_modules${sep}`;
  const entry = require.resolve(name);
  const root = join(entry.slice(0, entry.lastIndexOf(marker) + marker.length), ...name.split('/'));
  return (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * Loading an SDK and deriving its document costs a few hundred milliseconds, and every test file that starts an
 * emulator paid it. The document depends only on the SDK's version and on this file, so it is cached under a key of
 * both (fileCache.ts); `dir` is for tests.
 */
export function cachedDocument(sdk: string, derive: () => SwaggerLikeDocument, dir?: string): SwaggerLikeDocument {
  let file: string | undefined;
  let key: string | undefined;
  try {
    key = sha256(`${CACHE_FORMAT}\n${sdk}@${packageVersion(sdk)}\n${readFileSync(__filename, 'utf8')}`);
    file = join(dir ?? contractCacheDir(), `${sdk.replace(/\W+/g, '-')}-${key.slice(0, 16)}.json`);
    const body = readCacheEntry(file, key);
    const doc = body === undefined ? undefined : (JSON.parse(body) as SwaggerLikeDocument);
    if (doc?.info && doc.paths && doc.definitions && doc.parameters) return doc;
  } catch {
    // no cache entry to read: derive it
  }
  const doc = derive();
  if (file && key) writeCacheEntry(file, key, JSON.stringify(doc));
  return doc;
}

let dataPlane: SwaggerLikeDocument | undefined;
let management: SwaggerLikeDocument | undefined;

/** The Batch service (data plane) contract as @azure/batch states it (cached; the same as {@link deriveDataPlaneDocument}). */
export function dataPlaneDocument(): SwaggerLikeDocument {
  return (dataPlane ??= cachedDocument('@azure/batch', deriveDataPlaneDocument));
}

/** The Batch management (Resource Manager) contract as @azure/arm-batch states it (cached; as {@link deriveManagementDocument}). */
export function managementDocument(): SwaggerLikeDocument {
  return (management ??= cachedDocument('@azure/arm-batch', deriveManagementDocument));
}
