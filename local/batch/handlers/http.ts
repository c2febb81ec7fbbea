import type { Readable } from 'node:stream';
import type { Engine } from '../runner/engine';
import type { JobLifecycle } from '../runner/jobLifecycle';
import type { Scheduler } from '../runner/scheduler';
import type { TaskExecutor } from '../runner/taskExecutor';
import type { Versioned } from '../model/types';
import { BatchHttpError } from './errors';

export interface RequestContext {
  method: string;
  /** Decoded path segments, e.g. ['pools', 'p1', 'nodes']. */
  segments: string[];
  query: Record<string, string>;
  headers: Record<string, string>;
  body: unknown;
  /** Size of the request body as received, for Batch's body size limits. */
  bodyBytes: number;
  baseUrl: string;
  /** The spec operation the request is for, e.g. Pool_Add. */
  operationId: string;
}

export interface HandlerResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Raw content (task/node files) instead of JSON. */
  stream?: Readable | Buffer;
}

export interface Services {
  engine: Engine;
  executor: TaskExecutor;
  scheduler: Scheduler;
  jobs: JobLifecycle;
}

export type Handler = (ctx: RequestContext, params: Record<string, string>, s: Services) => HandlerResponse | Promise<HandlerResponse>;

export function jsonBody(ctx: RequestContext): Record<string, unknown> {
  const b = ctx.body;
  if (b === undefined || b === null) return {};
  if (typeof b !== 'object' || Array.isArray(b)) throw new BatchHttpError(400, 'InvalidRequestBody', 'The specified Request Body is not syntactically valid.');
  return b as Record<string, unknown>;
}

/** If-Match / If-None-Match against the resource's ETag (Batch answers 412 ConditionNotMet). */
export function checkConditions(ctx: RequestContext, rec: Versioned): void {
  const ifMatch = ctx.headers['if-match'];
  if (ifMatch && ifMatch !== '*' && stripQuotes(ifMatch) !== rec.eTag) {
    throw new BatchHttpError(412, 'ConditionNotMet', 'The condition specified using HTTP conditional header(s) is not met.');
  }
  const ifNoneMatch = ctx.headers['if-none-match'];
  if (ifNoneMatch && (ifNoneMatch === '*' || stripQuotes(ifNoneMatch) === rec.eTag)) {
    if (ctx.method === 'GET' || ctx.method === 'HEAD') throw new BatchHttpError(304, 'NotModified', 'Not modified.');
    throw new BatchHttpError(412, 'ConditionNotMet', 'The condition specified using HTTP conditional header(s) is not met.');
  }
  const ifUnmodified = ctx.headers['if-unmodified-since'];
  if (ifUnmodified && rec.lastModified.getTime() > Date.parse(ifUnmodified) + 999) {
    throw new BatchHttpError(412, 'ConditionNotMet', 'The condition specified using HTTP conditional header(s) is not met.');
  }
}

function stripQuotes(s: string): string {
  return s.replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
}

export function versionHeaders(rec: Versioned): Record<string, string> {
  return { ETag: rec.eTag, 'Last-Modified': rec.lastModified.toUTCString() };
}

/** Headers on creates/updates: the resource's version, DataServiceId and (for creates) Location. */
export function writeHeaders(rec: Versioned, url: string): Record<string, string> {
  return { ...versionHeaders(rec), DataServiceId: url };
}
