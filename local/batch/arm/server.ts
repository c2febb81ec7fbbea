/**
 * The emulated Batch resource provider behind a local Resource Manager endpoint (ARM_ENDPOINT): its own listener,
 * as management.azure.com is another host than the account's data plane. Requests are checked at the door like
 * Resource Manager does (api-version, bearer token, role assignments, subscription / resource group / account in
 * the path, the body against the official management spec), then served by pools.ts. Every answer carries
 * x-ms-request-id and x-ms-correlation-request-id; errors use ARM's `{ error: { code, message } }`. Operations of
 * the spec other than the pool operations and the account GET answer 501.
 */
import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { ExchangeRecord } from '../config';
import type { Services } from '../handlers/http';
import { createManagementValidator, MANAGEMENT_API_VERSION, type ManagementValidator } from '../contract/managementValidator';
import type { NodeIdentityProvider } from '../model/identity';
import type { Json } from '../model/types';
import { authenticateArm, type ArmAccessConfig } from './auth';
import { ArmHttpError, armErrorBody, armErrors } from './errors';
import { getAccount, listVirtualMachineSkus } from './account';
import { createPool, deleteOperation, deletePool, getPool, listPools, patchPool, type ArmContext, type ArmResponse } from './pools';
import type { ArmScope } from './poolModel';

export interface ArmServerConfig {
  scope: ArmScope;
  access: ArmAccessConfig;
  identity?: NodeIdentityProvider;
  services: Services;
  baseUrl: () => string;
  /** The data plane's URL (the account GET's accountEndpoint). */
  accountUrl: () => string;
  /** The account's region (default {@link DEFAULT_LOCATION}). */
  location?: string;
  sharedKey: boolean;
  onExchange?: (ex: ExchangeRecord) => void;
}

/** The emulated account's region unless the stack names one. */
export const DEFAULT_LOCATION = 'westeurope';

let validator: ManagementValidator | undefined;
const managementSpec = () => (validator ??= createManagementValidator());

const eq = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function createArmServer(cfg: ArmServerConfig): http.Server {
  const operations = new Map<string, string>();
  const definitions = new Map<string, string>();
  return http.createServer((req, res) => {
    handle(cfg, { operations, definitions }, req, res).catch((e: Error) => {
      if (res.writableEnded) return;
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'InternalServerError', message: e.message } }));
    });
  });
}

async function handle(cfg: ArmServerConfig, state: Pick<ArmContext, 'operations' | 'definitions'>, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const method = (req.method ?? 'GET').toUpperCase();
  const url = new URL(req.url ?? '/', 'http://arm.invalid');
  const query = Object.fromEntries(url.searchParams);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(',') : v;
  const rawBody = await readBody(req);
  const requestId = randomUUID();
  let requestBody: unknown;
  let result: ArmResponse;
  try {
    const version = query['api-version'];
    if (version === undefined)
      throw new ArmHttpError(400, 'MissingApiVersionParameter', 'The api-version query parameter (?api-version=) is required for all requests.');
    if (version !== MANAGEMENT_API_VERSION) {
      throw new ArmHttpError(
        400,
        'InvalidApiVersionParameter',
        `The api-version '${version}' is invalid. The supported versions are '${MANAGEMENT_API_VERSION}'.`,
      );
    }
    const caller = await authenticateArm(cfg.access, headers.authorization);
    if (rawBody.length) {
      try {
        requestBody = JSON.parse(rawBody);
      } catch {
        throw armErrors.invalidContent('The request content was invalid and could not be deserialized.');
      }
    }
    result = await dispatch(cfg, state, caller, method, url.pathname, query, headers, requestBody);
  } catch (e) {
    if (!(e instanceof ArmHttpError)) throw e;
    result = { status: e.status, body: armErrorBody(e), headers: e.headers };
  }
  const out: Record<string, string> = {
    'x-ms-request-id': requestId,
    'x-ms-correlation-request-id': headers['x-ms-correlation-request-id'] ?? requestId,
    ...(result.headers ?? {}),
  };
  if (headers['x-ms-client-request-id']) out['x-ms-client-request-id'] = headers['x-ms-client-request-id'];
  if (result.body !== undefined) {
    const text = JSON.stringify(result.body);
    out['Content-Type'] = 'application/json; charset=utf-8';
    out['Content-Length'] = String(Buffer.byteLength(text));
    res.writeHead(result.status, out);
    res.end(text);
  } else {
    out['Content-Length'] = '0';
    res.writeHead(result.status, out);
    res.end();
  }
  cfg.onExchange?.({
    method,
    path: url.pathname,
    query,
    headers,
    requestBody: requestBody ?? (rawBody.length ? rawBody : undefined),
    status: result.status,
    responseBody: result.body,
    responseHeaders: Object.fromEntries(Object.entries(out).map(([k, v]) => [k.toLowerCase(), v])),
  });
}

async function dispatch(
  cfg: ArmServerConfig,
  state: Pick<ArmContext, 'operations' | 'definitions'>,
  caller: Awaited<ReturnType<typeof authenticateArm>>,
  method: string,
  path: string,
  query: Record<string, string>,
  headers: Record<string, string>,
  body: unknown,
): Promise<ArmResponse> {
  const parts = path
    .split('/')
    .filter(Boolean)
    .map((p) => decodeURIComponent(p));
  const [subs, subscriptionId, rgs, resourceGroup, providers, namespace, accounts, accountName, pools, poolName, opResults, op] = parts;
  const { scope } = cfg;
  if (!eq(subs ?? '', 'subscriptions') || !subscriptionId)
    throw new ArmHttpError(404, 'InvalidResourceType', `The resource path ${path} is not a resource of this endpoint.`);
  if (!eq(subscriptionId, scope.subscriptionId)) throw armErrors.subscriptionNotFound(subscriptionId);
  const ctx: ArmContext = {
    ...state,
    scope,
    access: cfg.access,
    identity: cfg.identity,
    services: cfg.services,
    baseUrl: cfg.baseUrl(),
    apiVersion: MANAGEMENT_API_VERSION,
    location: cfg.location ?? DEFAULT_LOCATION,
    accountEndpoint: new URL(cfg.accountUrl()).host,
    sharedKey: cfg.sharedKey,
  };
  // /subscriptions/{id}/providers/Microsoft.Batch/locations/{location}/virtualMachineSkus: a subscription-level read.
  if (
    eq(rgs ?? '', 'providers') &&
    eq(resourceGroup ?? '', 'Microsoft.Batch') &&
    eq(providers ?? '', 'locations') &&
    namespace &&
    eq(accounts ?? '', 'virtualMachineSkus') &&
    accountName === undefined &&
    method === 'GET'
  ) {
    return listVirtualMachineSkus(ctx, caller, namespace, query);
  }
  if (!eq(rgs ?? '', 'resourceGroups') || !resourceGroup)
    throw new ArmHttpError(404, 'InvalidResourceType', `The resource path ${path} is not a resource of this endpoint.`);
  if (!eq(resourceGroup, scope.resourceGroup)) throw armErrors.resourceGroupNotFound(resourceGroup);
  if (!eq(providers ?? '', 'providers') || !eq(namespace ?? '', 'Microsoft.Batch'))
    throw new ArmHttpError(404, 'InvalidResourceNamespace', `The resource namespace '${namespace ?? ''}' is invalid.`);
  if (!eq(accounts ?? '', 'batchAccounts') || !accountName)
    throw new ArmHttpError(
      404,
      'InvalidResourceType',
      `The resource type '${accounts ?? ''}' could not be found in the namespace 'Microsoft.Batch' for api version '${MANAGEMENT_API_VERSION}'.`,
    );
  if (!eq(accountName, scope.accountName)) throw armErrors.accountNotFound(accountName, resourceGroup);
  if (pools === undefined && method === 'GET') return getAccount(ctx, caller);
  if (eq(pools ?? '', 'pools')) {
    if (poolName === undefined && method === 'GET') return listPools(ctx, caller, query);
    if (poolName !== undefined && opResults === undefined) {
      if (method === 'PUT' || method === 'PATCH') {
        const problems = managementSpec().requestBodyErrors(method === 'PUT' ? 'Pools_Create' : 'Pools_Update', body ?? {});
        if (body === undefined) throw armErrors.invalidContent('The request content was invalid: the body is required.');
        if (problems.length) {
          const [first] = problems;
          const p = first.params as Record<string, unknown>;
          // The SDK-derived contract closes models with additionalProperties, the spec file with unevaluatedProperties.
          const extra = p.unevaluatedProperty ?? p.additionalProperty;
          const at = `${first.instancePath}${extra ? `/${String(extra)}` : p.missingProperty ? `/${String(p.missingProperty)}` : ''}`
            .replace(/^\//, '')
            .replace(/\//g, '.');
          throw armErrors.invalidContent(
            `The request content was invalid: ${at || 'the body'} ${extra ? 'is not a property of the model' : (first.message ?? first.keyword)}.`,
            at || undefined,
          );
        }
        return method === 'PUT' ? createPool(ctx, caller, poolName, body as Json, headers) : patchPool(ctx, caller, poolName, body as Json, headers);
      }
      if (method === 'GET') return getPool(ctx, caller, poolName);
      if (method === 'DELETE') return deletePool(ctx, caller, poolName);
    }
    if (poolName !== undefined && eq(opResults ?? '', 'operationResults') && op && method === 'GET') return deleteOperation(ctx, caller, poolName, op);
  }
  const operation = managementSpec().matchOperation(method, path);
  if (operation)
    throw new ArmHttpError(501, 'NotImplemented', `The local Batch emulator does not implement the management operation ${operation} (${method} ${path}).`);
  throw new ArmHttpError(404, 'InvalidResourceType', `No management operation ${method} ${path}.`);
}
