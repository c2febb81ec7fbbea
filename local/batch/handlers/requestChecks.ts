/**
 * Checks at the door, from the official spec: the operation exists (and is emulated), its query parameters
 * are ones the spec defines with values of the right type, and its body fits the operation's schema (types,
 * required properties, enums, formats, no property the spec does not define). Each failure is answered
 * with the code Batch uses for it and the offending property's path.
 */
import type { ErrorObject } from 'ajv';
import { createContractValidator, type ContractValidator, type OperationDescription, type QueryParameterSpec } from '../contract';
import { API_VERSION } from '../config';
import { BatchHttpError } from './errors';

let compiled: ContractValidator | undefined;

/** The spec compiled once per process (a few hundred milliseconds): every emulator in the process shares it. */
export function specValidator(): ContractValidator {
  return (compiled ??= createContractValidator());
}

/** The emulator answers only the spec version it implements; a missing one is Batch's MissingRequiredQueryParameter. */
export function checkApiVersion(query: Record<string, string>): void {
  const v = query['api-version'];
  if (v === undefined) {
    throw new BatchHttpError(400, 'MissingRequiredQueryParameter', 'A query parameter that is mandatory for this request is not specified.', [
      { key: 'QueryParameterName', value: 'api-version' },
    ]);
  }
  if (v !== API_VERSION) {
    throw new BatchHttpError(400, 'UnsupportedRequestVersion', 'The specified request version is not supported.', [
      { key: 'QueryParameterName', value: 'api-version' },
      { key: 'QueryParameterValue', value: v },
      { key: 'Reason', value: `this emulator serves api-version ${API_VERSION} only` },
    ]);
  }
}

/** A spec operation the emulator has no handler for: 501 naming it, never a silent success or a misleading 400. */
export function notImplemented(op: OperationDescription): BatchHttpError {
  return new BatchHttpError(
    501,
    'NotImplemented',
    `The local Batch emulator does not implement the operation ${op.operationId} (${op.method} ${op.template}).`,
    [{ key: 'OperationId', value: op.operationId }],
  );
}

/** The emulator's own odata.nextLink carries the page position in $skiptoken. */
const PAGING_TOKEN = '$skiptoken';

export function checkQuery(op: OperationDescription, query: Record<string, string>): void {
  const byName = new Map(op.query.map((q) => [q.name, q]));
  for (const [name, value] of Object.entries(query)) {
    const spec = byName.get(name);
    if (!spec) {
      if (name === PAGING_TOKEN && byName.has('maxresults')) continue;
      throw new BatchHttpError(400, 'UnsupportedQueryParameter', 'One of the query parameters specified in the request URI is not supported.', [
        { key: 'QueryParameterName', value: name },
      ]);
    }
    const reason = queryValueProblem(spec, value);
    if (reason) throw invalidQueryValue(name, value, reason);
  }
}

export function invalidQueryValue(name: string, value: string, reason: string): BatchHttpError {
  return new BatchHttpError(400, 'InvalidQueryParameterValue', 'The value for one of the query parameters specified in the request URI is invalid.', [
    { key: 'QueryParameterName', value: name },
    { key: 'QueryParameterValue', value },
    { key: 'Reason', value: reason },
  ]);
}

function queryValueProblem(spec: QueryParameterSpec, raw: string): string | undefined {
  if (spec.type === 'integer') {
    if (!/^-?\d+$/.test(raw)) return 'must be an integer';
    const n = Number(raw);
    if (spec.format === 'int32' && (n < -(2 ** 31) || n > 2 ** 31 - 1)) return 'must be a 32-bit integer';
    if (spec.minimum !== undefined && n < spec.minimum) return `must be at least ${spec.minimum}`;
    if (spec.maximum !== undefined && n > spec.maximum) return `must be at most ${spec.maximum}`;
  }
  if (spec.type === 'boolean' && !/^(true|false)$/i.test(raw)) return 'must be true or false';
  if (spec.format === 'date-time' && Number.isNaN(Date.parse(raw))) return 'must be an ISO 8601 date-time';
  if (spec.enum && !spec.enum.includes(raw)) return `must be one of ${spec.enum.join(', ')}`;
  return undefined;
}

/** The body against the operation's schema; the first problem is answered, as Batch answers one. */
export function checkBody(op: OperationDescription, body: unknown): void {
  if (!op.body) return;
  if (body === undefined) {
    if (op.body.required)
      throw new BatchHttpError(400, 'InvalidRequestBody', 'The specified Request Body is not syntactically valid.', [
        { key: 'Reason', value: 'the request has no body' },
      ]);
    return;
  }
  // Batch reads enum values without regard to case (taskCompletion = taskcompletion).
  const [first] = specValidator()
    .requestBodyErrors(op.operationId, body)
    .filter((e) => !(e.keyword === 'enum' && enumMatchesIgnoringCase(e, body)));
  if (first) throw bodyError(first, body);
}

function valueAt(body: unknown, instancePath: string): unknown {
  const segments = instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  return segments.reduce<unknown>((cur, k) => (cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>)[k] : undefined), body);
}

function enumMatchesIgnoringCase(e: ErrorObject, body: unknown): boolean {
  const value = valueAt(body, e.instancePath);
  const allowed = ((e.params as { allowedValues?: unknown[] }).allowedValues ?? []).map((v) => String(v).toLowerCase());
  return typeof value === 'string' && allowed.includes(value.toLowerCase());
}

/** One ajv error as Batch's error: UnsupportedProperty, MissingRequiredProperty or InvalidPropertyValue, with the path. */
export function bodyError(e: ErrorObject, body: unknown): BatchHttpError {
  const segments = e.instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'additionalProperties') {
    return new BatchHttpError(400, 'UnsupportedProperty', 'One of the properties specified in the request body is not supported.', [
      { key: 'PropertyName', value: propertyPath([...segments, String(params.additionalProperty)]) },
    ]);
  }
  if (e.keyword === 'required') {
    return new BatchHttpError(400, 'MissingRequiredProperty', 'A required property was not specified in the request body.', [
      { key: 'PropertyName', value: propertyPath([...segments, String(params.missingProperty)]) },
    ]);
  }
  if (segments.length === 0)
    return new BatchHttpError(400, 'InvalidRequestBody', 'The specified Request Body is not syntactically valid.', [
      { key: 'Reason', value: `the body ${e.message ?? 'is invalid'}` },
    ]);
  const value = valueAt(body, e.instancePath);
  const reason = e.keyword === 'enum' ? `must be one of ${(params.allowedValues as unknown[]).join(', ')}` : (e.message ?? e.keyword);
  return new BatchHttpError(400, 'InvalidPropertyValue', 'The value provided for one of the properties in the request body is invalid.', [
    { key: 'PropertyName', value: propertyPath(segments) },
    { key: 'PropertyValue', value: typeof value === 'object' ? JSON.stringify(value) : String(value) },
    { key: 'Reason', value: reason },
  ]);
}

/** ['value', '0', 'commandLine'] → value[0].commandLine, the way the handlers name properties. */
export function propertyPath(segments: string[]): string {
  return segments.reduce((acc, s) => (/^\d+$/.test(s) ? `${acc}[${s}]` : acc ? `${acc}.${s}` : s), '');
}
