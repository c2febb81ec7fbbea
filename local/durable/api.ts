/**
 * The Durable Functions HTTP management API, as the extension's HttpApiHandler.cs serves it (routes,
 * status codes, JSON shapes, error bodies, as documented on the "HTTP API reference" page of Durable Functions):
 *  - at the webhook `/runtime/webhooks/durabletask/` on the host's listener, where the host has already
 *    checked the system key (`code=` or x-functions-key: the `durabletask_extension` key or the master key);
 *  - at the rpcBaseUrl `/durabletask/` on the engine's loopback RPC listener (rpcListener.ts), which is what
 *    durable-functions' DurableClient calls.
 * Where this engine answers differently from Azure, docs/local-durable.md says so.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { HostContext } from '../host/extension';
import { parseBool, parseDate, parseDouble, parseInt32, parseRuntimeStatuses, queryValue } from './apiQuery';
import type { ResolvedOptions } from './config';
import { events } from './history';
import { formatHistory, parseJsonText } from './historyView';
import { instanceIdError } from './instanceIds';
import { RPC_PATH, WEBHOOK_PATH, checkStatusBody, managementUrls, type Webhook } from './links';
import { findFunction, startMessage, type OrchestrationDispatcher } from './orchestrations';
import { rewindPlan } from './rewind';
import type { DurableStore, InstanceQuery, InstanceRow } from './store';
import { isTerminal, TERMINAL_STATUSES, type RuntimeStatus } from './state';
import { formatTimeline } from './timeline';

/** Azure Table returns at most 1,000 entities a page. */
const MAX_PAGE_SIZE = 1000;
/** Kestrel's request body limit for the extension's endpoints is lifted; ours stops at the host's 100 MB. */
const MAX_BODY_BYTES = 100 * 1024 * 1024;

/** How the request arrived: through the host's webhook or the engine's RPC listener. */
export type Via = 'webhook' | 'rpc';

interface Reply {
  status: number;
  body?: unknown;
  /** A plain-text answer instead of JSON. */
  text?: string;
  headers?: Record<string, string>;
}

/** An answer other than success; `body` undefined means an empty body, as the handler's CreateResponse(status). */
class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body?: unknown,
  ) {
    super(`HTTP ${status}`);
  }
}

/** HttpRequestMessageExtensions.CreateErrorResponse(status, message, exception). */
function exceptionBody(message: string, exceptionMessage: string, exceptionType: string): Record<string, unknown> {
  return { Message: message, ExceptionMessage: exceptionMessage, ExceptionType: exceptionType, StackTrace: null };
}

const answer = {
  notFound: () => new HttpError(404),
  gone: () => new HttpError(410),
  /** An ArgumentException from the client (unknown function, bad instance id...): 400. */
  argument: (exceptionMessage: string, message = 'One or more of the arguments submitted is incorrect') =>
    new HttpError(400, exceptionBody(message, exceptionMessage, 'System.ArgumentException')),
  invalidJson: (detail: string) => new HttpError(400, exceptionBody('Invalid JSON content', detail, 'Newtonsoft.Json.JsonReaderException')),
  /** Any other exception in the handler (InvalidOperationException from the client): 500. */
  failed: (exceptionMessage: string, exceptionType = 'System.InvalidOperationException') =>
    new HttpError(500, exceptionBody('Something went wrong while processing your request', exceptionMessage, exceptionType)),
  notEmulated: (message: string) => new HttpError(501, { Message: message }),
  /**
   * 412 Precondition Failed with the handler's message as a JSON string (`request.CreateResponse(PreconditionFailed,
   * string)` in HttpApiHandler.cs): rewind of an instance that is not Failed, purge of one that is not terminal.
   */
  precondition: (message: string) => new HttpError(412, message),
};

/** IsCompletedStatus of the handler: Completed, Terminated, Canceled, Failed. */
const isCompleted = (s: RuntimeStatus): boolean => isTerminal(s);
const RUNNING_STATUSES: readonly RuntimeStatus[] = ['Running', 'Pending', 'ContinuedAsNew', 'Suspended'];

/** "yyyy-MM-ddTHH:mm:ssZ", as the extension formats status times. */
const isoSeconds = (iso: string): string => `${iso.slice(0, 19)}Z`;

export class ManagementApi {
  constructor(
    private readonly store: DurableStore,
    private readonly dispatcher: OrchestrationDispatcher,
    private readonly host: HostContext,
    private readonly opts: ResolvedOptions,
    private readonly webhook: Webhook,
    private readonly log: Logger,
  ) {}

  /** Answers the request when its path is the API's (under the webhook or the RPC path); false otherwise. */
  async handle(req: IncomingMessage, res: ServerResponse, url: URL, via: Via): Promise<boolean> {
    const rest = apiPath(url.pathname, via);
    if (rest === undefined) return false;
    let reply: Reply;
    try {
      const body = await readBody(req);
      if (body === undefined) throw new HttpError(413);
      reply = await this.route(req, url, via, rest, body);
    } catch (err) {
      if (err instanceof HttpError) reply = { status: err.status, body: err.body };
      else {
        this.log.error({ err, url: url.pathname }, 'durable management API request failed');
        reply = { status: 500, body: exceptionBody('Something went wrong while processing your request', (err as Error).message, (err as Error).name) };
      }
    }
    if (reply.text !== undefined) {
      res.writeHead(reply.status, { 'Content-Type': 'text/plain; charset=utf-8', ...reply.headers });
      res.end(reply.text);
      return true;
    }
    const text = reply.body === undefined ? '' : JSON.stringify(reply.body);
    res.writeHead(reply.status, { ...(text ? { 'Content-Type': 'application/json; charset=utf-8' } : {}), ...reply.headers });
    res.end(text);
    return true;
  }

  private async route(req: IncomingMessage, url: URL, via: Via, rest: string, body: string): Promise<Reply> {
    const method = (req.method ?? 'GET').toUpperCase();
    // Links point at the host the caller used, as GetClientResponseLinks uses the request URI; RPC callers get the webhook's.
    const origin = via === 'webhook' && req.headers.host ? `http://${req.headers.host}` : this.webhook.origin;
    const taskHub = queryValue(url, 'taskHub');
    if (taskHub && taskHub.toLowerCase() !== this.opts.hubName.toLowerCase()) {
      throw answer.notEmulated(`The local Durable engine serves only the task hub '${this.opts.hubName}' (the request names '${taskHub}')`);
    }
    const parts = rest === '' ? [] : rest.split('/').map(safeDecode);
    const [head = '', ...tail] = parts;
    switch (head.toLowerCase()) {
      case 'orchestrators':
        if (tail.length >= 1 && tail.length <= 2 && tail[0]) {
          if (method !== 'POST') throw answer.notFound();
          return this.start(tail[0], tail[1] || undefined, body, url, origin, req);
        }
        break;
      case 'entities':
        if (tail.length <= 2) throw answer.notEmulated('Durable entities are not supported by the local Durable engine');
        break;
      case 'makeprimary':
        if (tail.length === 0) throw answer.notEmulated('App leases (makeprimary) are not supported by the local Durable engine');
        break;
      case 'instances':
        return this.instances(method, tail, body, url, origin, req);
      default:
        break;
    }
    throw answer.notFound();
  }

  private async instances(method: string, tail: string[], body: string, url: URL, origin: string, req: IncomingMessage): Promise<Reply> {
    if (tail.length === 3 && tail[1].toLowerCase() === 'raiseevent' && tail[2]) {
      if (method !== 'POST') throw answer.notFound();
      return this.raise(tail[0], tail[2], body, req);
    }
    if (tail.length > 2) throw answer.notFound();
    const [id, op] = tail;
    if (!id) {
      if (method === 'GET') return this.list(url, req);
      if (method === 'DELETE') return this.purgeMany(url);
      throw answer.notFound();
    }
    if (!op) {
      if (method === 'GET') return this.status(id, url, req, origin);
      if (method === 'DELETE') return this.purgeOne(id);
      throw answer.notFound();
    }
    const operation = op.toLowerCase();
    if (method === 'POST') {
      const reason = queryValue(url, 'reason');
      if (operation === 'terminate' || operation === 'suspend' || operation === 'resume') return this.control(id, operation, reason);
      if (operation === 'rewind') return this.rewind(id, reason);
      if (operation === 'restart') return this.restart(id, url, origin, req);
    } else if (method === 'GET' && operation === 'timeline') {
      return this.timeline(id);
    }
    throw answer.notFound();
  }

  private async start(name: string, givenId: string | undefined, body: string, url: URL, origin: string, req: IncomingMessage): Promise<Reply> {
    const input = parseJsonBody(body, true);
    const fn = findFunction(this.host.functions(), name, 'orchestrationTrigger');
    if (!fn) throw answer.argument(`The function '${name}' doesn't exist, is disabled, or is not an orchestrator function.`);
    if (givenId !== undefined) {
      const invalid = instanceIdError(givenId);
      if (invalid) throw answer.argument(invalid);
    }
    const instanceId = givenId ?? randomUUID().replace(/-/g, '');
    await this.startInstance(fn.name, instanceId, input);
    return this.waitOrCheckStatus(instanceId, url, origin, req);
  }

  /** WaitForCompletionOrCreateCheckStatusResponseAsync when `timeout` and `pollingInterval` are given, else the 202 links. */
  private async waitOrCheckStatus(instanceId: string, url: URL, origin: string, req: IncomingMessage): Promise<Reply> {
    const timeout = parseDouble(queryValue(url, 'timeout'));
    const interval = parseDouble(queryValue(url, 'pollingInterval'));
    if (timeout !== undefined && interval !== undefined) {
      if (interval > timeout) throw answer.argument(`Total timeout ${timeout} should be bigger than retry timeout ${interval}`);
      const deadline = Date.now() + timeout * 1000;
      for (;;) {
        const row = await this.store.getInstance(instanceId);
        if (row?.runtimeStatus === 'Completed') return { status: 200, body: parseJsonText(row.output) };
        if (row && isCompleted(row.runtimeStatus)) return this.status(instanceId, url, req, origin, false);
        const left = deadline - Date.now();
        if (left <= 0) break;
        await new Promise((r) => setTimeout(r, Math.max(10, Math.min(left, interval * 1000))));
      }
    }
    const links = checkStatusBody(managementUrls(this.webhook, origin, instanceId, this.opts.hubName));
    return { status: 202, body: links, headers: { Location: links.statusQueryGetUri, 'Retry-After': '10' } };
  }

  /** Create the instance row and send its start message; 409 if a non-terminal instance has the id. */
  async startInstance(name: string, instanceId: string, input: string | undefined): Promise<void> {
    const executionId = randomUUID().replace(/-/g, '');
    const now = new Date().toISOString();
    const row = { instanceId, name, runtimeStatus: 'Pending' as const, executionId, input, createdTime: now, lastUpdatedTime: now };
    // The usual start names a new id: insert first and read only when the id is taken (one storage call, not two). An
    // insert, not an upsert: of two concurrent starts exactly one creates the instance, the other gets 409.
    if (!(await this.store.createInstance(row))) {
      const existing = await this.store.getInstance(instanceId);
      if (existing && !isTerminal(existing.runtimeStatus)) {
        throw new HttpError(409, { Message: `An instance with ID '${instanceId}' already exists and is ${existing.runtimeStatus}` });
      }
      // A finished instance is started again under the same id (the provider overwrites it); one that vanished
      // between the insert and the read (purged) is simply created.
      await this.store.putInstance(row);
    }
    await this.store.sendControl(startMessage(instanceId, executionId, name, input));
    this.dispatcher.wake();
    this.log.info({ instanceId, orchestrator: name }, 'durable instance scheduled');
  }

  private async status(instanceId: string, url: URL, req: IncomingMessage, origin: string, allow500 = true): Promise<Reply> {
    const row = await this.store.getInstance(instanceId);
    if (!row) throw answer.notFound();
    const showHistory = parseBool(queryValue(url, 'showHistory'), false);
    const showHistoryOutput = parseBool(queryValue(url, 'showHistoryOutput'), false);
    const showInput = parseBool(queryValue(url, 'showInput'), true);
    const payload = this.payload(row, showInput);
    if (showHistory && row.runtimeStatus !== 'Pending') {
      const loaded = await this.store.load(instanceId);
      if (loaded) payload.historyEvents = formatHistory(loaded.history, { showHistoryOutput, showInput });
    }
    if (RUNNING_STATUSES.includes(row.runtimeStatus)) {
      // Location is the request's own URL (HandleGetStatusRequestAsync), so a poller keeps its key and options.
      const requestOrigin = req.headers.host ? `http://${req.headers.host}` : origin;
      return { status: 202, body: payload, headers: { Location: `${requestOrigin}${req.url ?? ''}`, 'Retry-After': '5' } };
    }
    const failed500 = allow500 && row.runtimeStatus === 'Failed' && parseBool(queryValue(url, 'returnInternalServerErrorOnFailure'), false);
    return { status: failed500 ? 500 : 200, body: payload };
  }

  payload(row: InstanceRow, showInput: boolean): Record<string, unknown> {
    return {
      name: row.name,
      instanceId: row.instanceId,
      runtimeStatus: row.runtimeStatus,
      input: showInput ? parseJsonText(row.input) : null,
      customStatus: parseJsonText(row.customStatus),
      output: parseJsonText(row.output),
      createdTime: isoSeconds(row.createdTime),
      lastUpdatedTime: isoSeconds(row.lastUpdatedTime),
    };
  }

  /** GET instances: filters that do not parse are ignored, as the handler's TryGet... helpers do. */
  private async list(url: URL, req: IncomingMessage): Promise<Reply> {
    const q: InstanceQuery = {
      createdTimeFrom: parseDate(queryValue(url, 'createdTimeFrom')),
      createdTimeTo: parseDate(queryValue(url, 'createdTimeTo')),
      runtimeStatus: parseRuntimeStatuses(queryValue(url, 'runtimeStatus')),
      instanceIdPrefix: queryValue(url, 'instanceIdPrefix') || undefined,
    };
    const top = parseInt32(queryValue(url, 'top'));
    const pageSize = top !== undefined && top > 0 ? Math.min(top, MAX_PAGE_SIZE) : this.opts.statusPageSize;
    const showInput = parseBool(queryValue(url, 'showInput'), true);
    const token = headerValue(req, 'x-ms-continuation-token');
    const page = await this.store.queryInstances(q, pageSize, token || undefined);
    return {
      status: 200,
      body: page.rows.map((r) => this.payload(r, showInput)),
      // The handler always adds the header; it is empty on the last page.
      headers: { 'x-ms-continuation-token': page.next ?? '' },
    };
  }

  /** Local addition (not in the Durable API): the history as the timeline command prints it. */
  private async timeline(instanceId: string): Promise<Reply> {
    const [row, loaded] = await Promise.all([this.store.getInstance(instanceId), this.store.load(instanceId)]);
    if (!row && !loaded) throw answer.notFound();
    return { status: 200, text: formatTimeline(row, loaded?.state, loaded?.history ?? []) + '\n' };
  }

  private async raise(instanceId: string, eventName: string, body: string, req: IncomingMessage): Promise<Reply> {
    const row = await this.store.getInstance(instanceId);
    if (!row) throw answer.notFound();
    if (isCompleted(row.runtimeStatus)) throw answer.gone();
    const mediaType = (headerValue(req, 'content-type') ?? '').split(';')[0].trim().toLowerCase();
    if (mediaType !== 'application/json') throw new HttpError(400, { Message: 'Only application/json request content is supported' });
    const input = parseJsonBody(body, false);
    await this.store.sendControl({
      id: randomUUID(),
      instanceId,
      event: events.eventRaised(new Date(), eventName, input),
      sentAt: new Date().toISOString(),
    });
    this.dispatcher.wake();
    this.log.info({ instanceId, event: eventName }, 'durable event raised');
    return { status: 202 };
  }

  private async control(instanceId: string, op: 'terminate' | 'suspend' | 'resume', reason: string | undefined): Promise<Reply> {
    const row = await this.store.getInstance(instanceId);
    if (!row) throw answer.notFound();
    if (isCompleted(row.runtimeStatus)) throw answer.gone();
    const s = row.runtimeStatus;
    if (op === 'suspend' && !['Running', 'Pending', 'ContinuedAsNew'].includes(s)) {
      throw answer.failed(`Cannot suspend the orchestration instance ${instanceId} because instance is in the ${s} state.`);
    }
    if (op === 'resume' && s !== 'Suspended')
      throw answer.failed(`Cannot resume the orchestration instance ${instanceId} because instance is in the ${s} state.`);
    const now = new Date();
    const event =
      op === 'terminate'
        ? events.executionTerminated(now, reason)
        : op === 'suspend'
          ? events.executionSuspended(now, reason ?? '')
          : events.executionResumed(now, reason ?? '');
    await this.store.sendControl({ id: randomUUID(), instanceId, event, sentAt: now.toISOString() });
    this.dispatcher.wake();
    this.log.info({ instanceId, op, reason }, `durable instance ${op} requested`);
    return { status: 202 };
  }

  /**
   * Rewind a Failed instance (HandleRewindInstanceRequestAsync; see rewind.ts for what this engine rewinds). As the
   * extension's handler: 404 with a JSON string for an unknown instance (its `\"${instanceId}\"` keeps the "$"), 412
   * for every status but Failed (Running, Pending, Completed, Terminated, ...), before anything is changed.
   */
  private async rewind(instanceId: string, reason: string | undefined): Promise<Reply> {
    const row = await this.store.getInstance(instanceId);
    if (!row) throw new HttpError(404, `No orchestration with instance ID "$${instanceId}" found.`);
    if (row.runtimeStatus !== 'Failed') {
      throw answer.precondition(`This orchestration has status ${row.runtimeStatus}, but only orchestrations in the "Failed" state can be rewound.`);
    }
    const unsupported = await this.rewindUnsupported(instanceId, 0);
    if (unsupported?.notFailed) throw answer.failed(unsupported.why);
    if (unsupported) throw answer.notEmulated(unsupported.why);
    // As UpdateStatusForRewindAsync: the instance reads Pending until its rewind episode runs.
    await this.store.putInstance({ ...row, runtimeStatus: 'Pending', lastUpdatedTime: new Date().toISOString() });
    await this.store.sendControl({ id: randomUUID(), instanceId, event: events.rewind(new Date(), reason ?? ''), sentAt: new Date().toISOString() });
    this.dispatcher.wake();
    this.log.info({ instanceId, reason }, 'durable instance rewind requested');
    return { status: 202 };
  }

  /** Why this instance (or a failed sub-orchestration it would rewind) cannot be rewound here, if it cannot. */
  private async rewindUnsupported(instanceId: string, depth: number): Promise<{ why: string; notFailed?: boolean } | undefined> {
    const loaded = await this.store.load(instanceId);
    if (!loaded) return { why: `Instance '${instanceId}' has no history to rewind` };
    const plan = rewindPlan(loaded.state, loaded.history);
    if (!plan.ok) return plan;
    for (const t of plan.reopened) {
      if (t.kind !== 'suborch' || !t.childInstanceId) continue;
      const child = await this.store.getInstance(t.childInstanceId);
      if (child?.runtimeStatus !== 'Failed') continue;
      if (depth >= 8) return { why: 'Rewind of sub-orchestrations nested deeper than 8 levels is not supported by the local Durable engine' };
      const why = await this.rewindUnsupported(t.childInstanceId, depth + 1);
      if (why) return { why: `sub-orchestration '${t.childInstanceId}': ${why.why}` };
    }
    return undefined;
  }

  private async restart(instanceId: string, url: URL, origin: string, req: IncomingMessage): Promise<Reply> {
    const row = await this.store.getInstance(instanceId);
    if (!row)
      throw answer.argument(`An orchestrastion with the instanceId ${instanceId} was not found.`, 'InstanceId does not match a valid orchestration instance.');
    const newId = parseBool(queryValue(url, 'restartWithNewInstanceId'), true);
    const id = newId ? randomUUID().replace(/-/g, '') : instanceId;
    await this.startInstance(row.name, id, row.input);
    return this.waitOrCheckStatus(id, url, origin, req);
  }

  /**
   * DELETE instances/{id} (HandleDeleteHistoryByIdRequestAsync): only a terminal instance is purged; any other answers
   * 412 with the handler's message and keeps its history. Ids starting with "@" (entities) skip the status check there.
   */
  private async purgeOne(instanceId: string): Promise<Reply> {
    const row = await this.store.getInstance(instanceId);
    if (!row) throw answer.notFound();
    if (!instanceId.startsWith('@') && !isCompleted(row.runtimeStatus)) {
      throw answer.precondition(
        `Only orchestrations in a terminal state can be purged, but the orchestration with instance ID ${instanceId} has status ${row.runtimeStatus}`,
      );
    }
    await this.purge(instanceId);
    return { status: 200, body: { instancesDeleted: 1 } };
  }

  private async purgeMany(url: URL): Promise<Reply> {
    const from = parseDate(queryValue(url, 'createdTimeFrom'));
    if (!from) throw new HttpError(400, "Please provide value for 'createdTimeFrom' parameter.");
    const statuses = parseRuntimeStatuses(queryValue(url, 'runtimeStatus'));
    // The provider keeps only terminal statuses of the filter; see docs/local-durable.md for the empty case.
    const terminal = (statuses ?? [...TERMINAL_STATUSES]).filter((s) => TERMINAL_STATUSES.includes(s as RuntimeStatus));
    const q: InstanceQuery = { createdTimeFrom: from, createdTimeTo: parseDate(queryValue(url, 'createdTimeTo')) ?? new Date(), runtimeStatus: terminal };
    let n = 0;
    if (terminal.length > 0) {
      const ids: string[] = [];
      for await (const row of this.store.allInstances(q)) ids.push(row.instanceId);
      for (const id of ids) {
        await this.purge(id);
        n += 1;
      }
    }
    if (n === 0) throw answer.notFound();
    return { status: 200, body: { instancesDeleted: n } };
  }

  private async purge(instanceId: string): Promise<void> {
    await this.store.deleteHistory(instanceId);
    await this.store.deleteInstance(instanceId);
    this.dispatcher.forget(instanceId);
    this.log.info({ instanceId }, 'durable instance purged');
  }
}

/** The path after the API's base (trimmed of slashes, as the handler does), or undefined when not the API's. */
function apiPath(pathname: string, via: Via): string | undefined {
  const base = via === 'webhook' ? WEBHOOK_PATH : RPC_PATH.slice(0, -1);
  if (pathname.toLowerCase() !== base.toLowerCase() && !pathname.toLowerCase().startsWith(`${base.toLowerCase()}/`)) return undefined;
  return pathname.slice(base.length).replace(/^\/+|\/+$/g, '');
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * The request body as the JSON text to store, undefined when empty. `emptyIsNull`: the start endpoint
 * reads no input from an empty body; raiseEvent parses the body whatever it is (an empty one is invalid).
 */
function parseJsonBody(body: string, emptyIsNull: boolean): string | undefined {
  if (emptyIsNull && body.trim() === '') return undefined;
  try {
    JSON.parse(body);
  } catch (err) {
    const detail = body.trim() === '' ? "Error reading JToken from JsonReader. Path '', line 0, position 0." : (err as Error).message;
    throw answer.invalidJson(detail);
  }
  return body.trim();
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY_BYTES) chunks.push(c);
    });
    req.on('end', () => resolve(size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
