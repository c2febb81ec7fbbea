/** The job API over HTTP, for the CLI: one method per endpoint, errors mapped to CliError with exit codes. */
import type { TimelineNote } from '../shared/core/contract/nodeReplacements';
import { AccessRefused, CliError, ExitCode, type FieldError } from './errors';
import type { Connection } from './connection';
import type { PipelineStatus } from '../shared/core/contract/progress';
import type { JobResultView } from '../shared/core/contract/jobResult';
import type { JobOutputsResponse } from '../shared/core/contract/outputs';
import type { UploadRequest, UploadResponse } from '../shared/core/contract/uploads';
import type { JobQueueView } from '../shared/core/contract/queue';
import type { ExplainDocument } from '../shared/core/contract/explain';

/** The parts of a job view the CLI reads; the rest is passed through for --json. */
export interface JobView {
  id: string;
  name: string;
  state: string;
  stage: string;
  tags?: Record<string, string>;
  createdAt?: string;
  updatedAt?: string;
  progress?: LiveProgress | null;
  orchestrationStatus?: string;
  batchPoolId?: string;
  batchJobId?: string;
  result?: JobResultView;
  error?: { code: string; message: string };
  /** While Queued (GET /api/jobs/{id}): its place in the queue and why it waits. */
  queue?: JobQueueView;
  /** The job's timeline (GET /api/jobs/{id}): transitions and notes, node replacements among them. */
  timeline?: TimelineNote[];
  [extra: string]: unknown;
}

/** The orchestration's custom status as the API passes it through; any part may be missing. */
export type LiveProgress = Partial<PipelineStatus>;

export interface SubmitAnswer {
  job: JobView;
  statusUrl: string;
  created: boolean;
}

export interface JobLogs {
  jobId: string;
  node: string;
  stream: 'stdout' | 'stderr';
  source: 'live' | 'recorded' | 'none';
  size: number;
  start: number;
  content: string;
  nodes: string[];
  message?: string;
}

export interface ListOptions {
  state?: string;
  tag?: string;
  top?: number;
  continuationToken?: string;
}

interface ErrorBody {
  error?: string;
  message?: string;
  errors?: FieldError[];
}

/** DELETE /api/jobs/{id} as the CLI reads it. */
export interface CancelAnswer {
  job: JobView;
  cancelRequested: boolean;
  /** The job is cleaning up (409 JobFinishing): too late to cancel. */
  finishing?: boolean;
  /** With `finishing`: the state cleanup ends it in, when the pipeline recorded it. */
  endsAs?: string;
  message?: string;
}

/** GET /api/me: the caller as the API sees it. */
export interface Me {
  id: string;
  name: string;
  kind: string;
  roles: string[];
  permissions: string[];
  seesAllJobs: boolean;
  tenantId?: string;
  objectId?: string;
  /** The caller's own blob prefix in the data accounts (docs/security.md, "Data areas"). */
  dataArea?: string;
  sharedAreas?: { account: string; container: string; prefix: string; access: 'read' | 'write' }[];
}

/**
 * 503 means "not now" (the API's dependencies, or a Function App that is starting: Azure's host answers 503 until it
 * runs): every call is retried after the answer's Retry-After (at most RETRY_AFTER_CAP_S, 2 s when absent), up to
 * UNAVAILABLE_RETRIES times. Safe for submit too: a job's id is its spec's (or its idempotency key's), so a repeat
 * finds the job the first try may have created.
 */
const UNAVAILABLE_RETRIES = 5;
const RETRY_AFTER_CAP_S = 10;

export function retryAfterMs(header: string | null): number {
  const seconds = header !== null && /^\d+$/.test(header.trim()) ? Number(header.trim()) : 2;
  return Math.min(seconds, RETRY_AFTER_CAP_S) * 1000;
}

export class ApiClient {
  constructor(
    private readonly connection: Connection,
    private readonly fetchImpl: typeof fetch = fetch,
    /** Bearer tokens (cli/auth.ts); not asked when an operator key is configured. */
    private readonly token?: () => Promise<string | undefined>,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ) {}

  async me(): Promise<Me> {
    return (await this.call<Me>('GET', '/api/me')).body;
  }

  async submit(specText: string, contentType: string): Promise<SubmitAnswer> {
    const { status, body } = await this.call<{ job: JobView; statusUrl: string }>('POST', '/api/jobs', { body: specText, contentType });
    return { job: body.job, statusUrl: body.statusUrl, created: status === 202 };
  }

  /** POST /api/jobs/{id}/rerun: a new job from a finished job's recorded spec (each idempotency key gives another rerun). */
  async rerun(id: string, idempotencyKey?: string): Promise<SubmitAnswer> {
    const { status, body } = await this.call<{ job: JobView; statusUrl: string }>(
      'POST',
      `/api/jobs/${encodeURIComponent(id)}/rerun`,
      idempotencyKey ? { headers: { 'idempotency-key': idempotencyKey } } : {},
    );
    return { job: body.job, statusUrl: body.statusUrl, created: status === 202 };
  }

  /** POST /api/jobs?dryRun=true: what the deployment would send to Batch for this spec; nothing is created. */
  async explain(specText: string, contentType: string): Promise<ExplainDocument> {
    const { body } = await this.call<ExplainDocument>('POST', '/api/jobs?dryRun=true', { body: specText, contentType });
    // Loaded here: the module declares the document's zod schema, which no other API call needs at start-up.
    const { EXPLAIN_VERSION } = await import('../shared/core/contract/explain');
    if (body?.version !== EXPLAIN_VERSION) {
      throw new CliError(
        `POST /api/jobs?dryRun=true answered without an explain document of version ${EXPLAIN_VERSION} (version ${String(body?.version)}): is the API older or newer than this CLI?`,
        ExitCode.Api,
      );
    }
    return body;
  }

  async getJob(id: string): Promise<JobView> {
    return (await this.call<JobView>('GET', `/api/jobs/${encodeURIComponent(id)}`)).body;
  }

  async listJobs(options: ListOptions): Promise<{ jobs: JobView[]; continuationToken?: string }> {
    const q = new URLSearchParams();
    if (options.state) q.set('state', options.state);
    if (options.tag) q.set('tag', options.tag);
    if (options.top !== undefined) q.set('top', String(options.top));
    if (options.continuationToken) q.set('continuationToken', options.continuationToken);
    const qs = q.toString();
    return (await this.call<{ jobs: JobView[]; continuationToken?: string }>('GET', `/api/jobs${qs ? `?${qs}` : ''}`)).body;
  }

  /** 202 requested; 200 already finished; 409 JobFinishing: cleaning up, too late (with the state it ends in). */
  async cancel(id: string, reason?: string): Promise<CancelAnswer> {
    const qs = reason ? `?reason=${encodeURIComponent(reason)}` : '';
    const { status, body } = await this.call<CancelAnswer & { error?: string }>('DELETE', `/api/jobs/${encodeURIComponent(id)}${qs}`, { accept: [409] });
    if (status === 409 && body.error !== 'JobFinishing') throw new CliError(body.message ?? `conflict (${status})`, ExitCode.Usage);
    return { ...body, finishing: status === 409 };
  }

  async logs(id: string, options: { node?: string; stream: 'stdout' | 'stderr'; since?: number }): Promise<JobLogs> {
    const q = new URLSearchParams({ stream: options.stream });
    if (options.node) q.set('node', options.node);
    if (options.since) q.set('since', String(options.since));
    return (await this.call<JobLogs>('GET', `/api/jobs/${encodeURIComponent(id)}/logs?${q}`)).body;
  }

  /** POST /api/uploads: a SAS URL per named blob in the caller's area (or a shared area it may write). */
  async uploads(request: UploadRequest): Promise<UploadResponse> {
    return (
      await this.call<UploadResponse>('POST', '/api/uploads', {
        body: JSON.stringify(request),
        contentType: 'application/json',
        notFound: 'POST /api/uploads does not exist on this API (deployed before uploads?)',
      })
    ).body;
  }

  async outputs(id: string, options: { top?: number; continuationToken?: string } = {}): Promise<JobOutputsResponse> {
    const q = new URLSearchParams();
    if (options.top !== undefined) q.set('top', String(options.top));
    if (options.continuationToken) q.set('continuationToken', options.continuationToken);
    const qs = q.toString();
    return (
      await this.call<JobOutputsResponse>('GET', `/api/jobs/${encodeURIComponent(id)}/outputs${qs ? `?${qs}` : ''}`, {
        notFound: 'GET /api/jobs/{id}/outputs does not exist on this API (deployed before outputs?)',
      })
    ).body;
  }

  async usage(query: URLSearchParams): Promise<unknown> {
    const qs = query.toString();
    return (
      await this.call<unknown>('GET', `/api/usage${qs ? `?${qs}` : ''}`, {
        notFound: 'GET /api/usage does not exist on this API (deployed without the usage endpoint?)',
      })
    ).body;
  }

  private async call<T>(
    method: string,
    path: string,
    /** `accept`: error statuses whose JSON body is returned instead of thrown. */
    options: { body?: string; contentType?: string; notFound?: string; accept?: number[]; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: T }> {
    const url = `${this.connection.endpoint}${path}`;
    const headers: Record<string, string> = { ...options.headers, accept: 'application/json' };
    if (this.connection.key) headers['x-functions-key'] = this.connection.key;
    else if (this.token) {
      const token = await this.token();
      if (token) headers.authorization = `Bearer ${token}`;
    }
    if (options.contentType) headers['content-type'] = options.contentType;
    let res: Response;
    for (let tries = 0; ; tries++) {
      try {
        res = await this.fetchImpl(url, { method, headers, body: options.body });
      } catch (err) {
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        throw new CliError(`cannot reach the API at ${this.connection.endpoint}: ${cause?.code ?? cause?.message ?? (err as Error).message}`, ExitCode.Api);
      }
      if (res.status !== 503 || tries >= UNAVAILABLE_RETRIES) break;
      await res.text().catch(() => undefined);
      await this.sleep(retryAfterMs(res.headers.get('retry-after')));
    }
    const text = await res.text();
    let body: unknown = undefined;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      if (res.ok) throw new CliError(`${method} ${url} answered ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`, ExitCode.Api);
    }
    if (res.ok || (body !== undefined && options.accept?.includes(res.status))) return { status: res.status, body: body as T };
    if (res.status === 401 || res.status === 403) {
      throw accessRefused(res.status, body as ErrorBody | undefined, text, Boolean(this.connection.key), res.headers.get('www-authenticate'));
    }
    throw apiError(method, url, res.status, body as ErrorBody | undefined, text, options.notFound);
  }
}

/** The sign-in command the 401 message names (docs/cli.md). */
export const SIGN_IN_COMMAND = 'hpcjob login';

/**
 * 401: the credentials are missing, expired or no longer accepted (e.g. the issuer's key changed): what to run to
 * sign in again. 403: the caller is known but lacks the app role (named by the API's message or its Bearer
 * challenge), or an ownership rule refused a field (DataAreaForbidden, PoolForbidden: the field errors say which).
 */
export function accessRefused(status: 401 | 403, body: ErrorBody | undefined, text: string, usedKey: boolean, challenge: string | null): AccessRefused {
  const detail = body?.message ?? (body?.errors ? undefined : text.slice(0, 200).trim()) ?? '';
  if (status === 401) {
    const advice = usedKey
      ? `the operator key was refused: check --key or HPCJOB_KEY, or drop the key and sign in with \`${SIGN_IN_COMMAND}\``
      : `sign in (again) with \`${SIGN_IN_COMMAND}\`, or pass an operator key with --key`;
    return new AccessRefused(`not signed in or the sign-in is no longer accepted (401${detail ? `: ${detail}` : ''}): ${advice}`, 401);
  }
  const role = neededRole(body?.message, challenge);
  const advice = role ? `: ask an administrator to assign you the app role ${role}, then run \`${SIGN_IN_COMMAND}\` again (roles are read at sign-in)` : '';
  return new AccessRefused(`not allowed (403)${detail ? `: ${detail}` : ''}${advice}`, 403, body?.errors ?? []);
}

/** The app role a 403 names: "… needs the app role X" in the message or in the challenge's error_description. */
function neededRole(message: string | undefined, challenge: string | null): string | undefined {
  for (const text of [message, challenge]) {
    const m = /needs the app role ([\w. ]+?)(?:"|$)/.exec(text ?? '');
    if (m) return m[1].trim();
  }
  return undefined;
}

function apiError(method: string, url: string, status: number, body: ErrorBody | undefined, text: string, notFound?: string): CliError {
  const detail = body?.message ?? (body?.errors ? undefined : text.slice(0, 200).trim()) ?? '';
  if (status === 404) {
    // A 404 without our problem body means the route itself is missing, not the job.
    if (!body?.error && notFound) return new CliError(notFound, ExitCode.NotFound);
    return new CliError(body?.message ?? `not found: ${method} ${url}`, ExitCode.NotFound);
  }
  if (status === 400 || status === 413 || status === 415) {
    const errors = body?.errors ?? [];
    const what = errors.length
      ? `the API rejected the request: ${errors.length} problem(s)`
      : `the API rejected the request (${status})${detail ? `: ${detail}` : ''}`;
    return new CliError(what, ExitCode.Usage, errors);
  }
  if (status === 409) return new CliError(body?.message ?? `conflict (${status})`, ExitCode.Usage);
  return new CliError(`${method} ${url} failed: ${status}${body?.error ? ` ${body.error}` : ''}${detail ? `: ${detail}` : ''}`, ExitCode.Api);
}
