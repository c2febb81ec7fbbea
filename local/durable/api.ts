/**
 * The Durable Functions HTTP management API (HttpApiHandler.cs routes, status codes and JSON shapes;
 * notes/azure-platform.md §5.1, functions-runtime.md §3.2), served under both
 * `/runtime/webhooks/durabletask/` (the URLs in check-status responses) and the rpcBaseUrl
 * `/durabletask/` (what durable-functions' DurableClient calls).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { HostContext } from '../host/extension';
import type { ResolvedOptions } from './config';
import { formatTimeline } from './timeline';
import { EventType, events, type HistoryEvent } from './history';
import { findFunction, startMessage, type OrchestrationDispatcher } from './orchestrations';
import type { DurableStore, InstanceQuery, InstanceRow } from './store';
import { isTerminal, TERMINAL_STATUSES, type RuntimeStatus } from './state';

export const WEBHOOK_PREFIX = '/runtime/webhooks/durabletask/';
export const RPC_PREFIX = '/durabletask/';
const CONNECTION_NAME = 'Storage';
const RUNTIME_STATUSES: readonly RuntimeStatus[] = ['Running', 'Completed', 'ContinuedAsNew', 'Failed', 'Canceled', 'Terminated', 'Pending', 'Suspended'];

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

interface Reply {
  status: number;
  body?: unknown;
  /** A plain-text answer instead of JSON. */
  text?: string;
  headers?: Record<string, string>;
}

/** The durableClient binding data (BindingHelper.DurableOrchestrationClientToString). */
export function clientBindingData(baseUrl: string, hubName: string): Record<string, unknown> {
  const base = `${baseUrl}${WEBHOOK_PREFIX.slice(0, -1)}`;
  const q = `taskHub=${hubName}&connection=${CONNECTION_NAME}`;
  return {
    taskHubName: hubName,
    connectionName: CONNECTION_NAME,
    creationUrls: {
      createNewInstancePostUri: `${base}/orchestrators/{functionName}[/{instanceId}]?${q}`,
      createAndWaitOnNewInstancePostUri: `${base}/orchestrators/{functionName}[/{instanceId}]?timeout={timeoutInSeconds}&pollingInterval={intervalInSeconds}&${q}`,
    },
    managementUrls: managementUrls(base, 'INSTANCEID', hubName),
    baseUrl: base,
    requiredQueryStringParameters: q,
    rpcBaseUrl: `${baseUrl}${RPC_PREFIX}`,
  };
}

function managementUrls(base: string, id: string, hubName: string): Record<string, string> {
  const q = `taskHub=${hubName}&connection=${CONNECTION_NAME}`;
  const inst = `${base}/instances/${id}`;
  return {
    id,
    statusQueryGetUri: `${inst}?${q}`,
    sendEventPostUri: `${inst}/raiseEvent/{eventName}?${q}`,
    terminatePostUri: `${inst}/terminate?reason={text}&${q}`,
    rewindPostUri: `${inst}/rewind?reason={text}&${q}`,
    purgeHistoryDeleteUri: `${inst}?${q}`,
    restartPostUri: `${inst}/restart?${q}`,
    suspendPostUri: `${inst}/suspend?reason={text}&${q}`,
    resumePostUri: `${inst}/resume?reason={text}&${q}`,
  };
}

export function checkStatusPayload(origin: string, instanceId: string, hubName: string): Record<string, string> {
  return managementUrls(`${origin}${WEBHOOK_PREFIX.slice(0, -1)}`, encodeURIComponent(instanceId), hubName);
}

/** "yyyy-MM-ddTHH:mm:ssZ", as the extension formats status times. */
const isoSeconds = (iso: string): string => `${iso.slice(0, 19)}Z`;

function parseJsonText(text: string | undefined): unknown {
  if (text === undefined) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export class ManagementApi {
  constructor(
    private readonly store: DurableStore,
    private readonly dispatcher: OrchestrationDispatcher,
    private readonly host: HostContext,
    private readonly opts: ResolvedOptions,
    private readonly log: Logger,
  ) {}

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    let rest: string | undefined;
    for (const prefix of [WEBHOOK_PREFIX, RPC_PREFIX]) {
      if (url.pathname.startsWith(prefix)) rest = url.pathname.slice(prefix.length);
      else if (url.pathname === prefix.slice(0, -1)) rest = '';
      if (rest !== undefined) break;
    }
    if (rest === undefined) return false;
    let reply: Reply;
    try {
      const body = await readBody(req);
      reply = await this.route(req, url, rest.split('/').map(decodeURIComponent), body);
    } catch (err) {
      if (err instanceof HttpError) reply = { status: err.status, body: { Message: err.message } };
      else {
        this.log.error({ err, url: url.pathname }, 'durable management API request failed');
        reply = { status: 500, body: { Message: (err as Error).message } };
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

  private async route(req: IncomingMessage, url: URL, parts: string[], body: string): Promise<Reply> {
    const method = req.method ?? 'GET';
    const origin = `http://${req.headers.host ?? new URL(this.host.baseUrl()).host}`;
    const [head, ...tail] = parts;
    if (head === 'orchestrators' && method === 'POST' && tail.length >= 1 && tail.length <= 2 && tail[0]) {
      return this.start(tail[0], tail[1] || undefined, body, url, origin, req);
    }
    if (head === 'instances') {
      const id = tail[0] ?? '';
      if (id === '' && tail.length <= 1) {
        if (method === 'GET') return this.list(url, req);
        if (method === 'DELETE') return this.purgeMany(url);
      } else if (tail.length === 1) {
        if (method === 'GET') return this.status(id, url, origin);
        if (method === 'DELETE') return this.purgeOne(id);
      } else if (method === 'POST') {
        const op = tail[1];
        if (op === 'raiseEvent' && tail[2]) return this.raise(id, tail[2], body, req);
        if (op === 'terminate' || op === 'suspend' || op === 'resume') return this.control(id, op, url.searchParams.get('reason') ?? '');
        if (op === 'rewind') throw new HttpError(501, 'Rewind is not supported by the local Durable engine');
        if (op === 'restart') return this.restart(id, url, origin);
      } else if (method === 'GET' && tail.length === 2 && tail[1] === 'timeline') {
        return this.timeline(id);
      }
    }
    if (head === 'entities') throw new HttpError(501, 'Durable entities are not supported by the local Durable engine');
    throw new HttpError(404, `No Durable management route for ${method} ${url.pathname}`);
  }

  private async start(name: string, givenId: string | undefined, body: string, url: URL, origin: string, req: IncomingMessage): Promise<Reply> {
    const fn = findFunction(this.host.functions(), name, 'orchestrationTrigger');
    if (!fn) throw new HttpError(400, `The function '${name}' doesn't exist, is disabled, or is not an orchestrator function.`);
    const input = parseBodyJson(body, req);
    const instanceId = givenId ?? randomUUID().replace(/-/g, '');
    await this.startInstance(fn.name, instanceId, input);
    const timeout = url.searchParams.get('timeout');
    if (timeout !== null) {
      const deadline = Date.now() + Number(timeout) * 1000;
      const interval = Math.max(100, Number(url.searchParams.get('pollingInterval') ?? '1') * 1000);
      for (;;) {
        const row = await this.store.getInstance(instanceId);
        if (row && row.runtimeStatus === 'Completed') return { status: 200, body: parseJsonText(row.output) };
        if (row && isTerminal(row.runtimeStatus)) return { status: 200, body: this.payload(row, true) };
        if (Date.now() + interval > deadline) break;
        await new Promise((r) => setTimeout(r, interval));
      }
    }
    const links = checkStatusPayload(origin, instanceId, this.opts.hubName);
    return { status: 202, body: links, headers: { Location: links.statusQueryGetUri, 'Retry-After': '10' } };
  }

  /** Create the instance row and send its start message; 409 if a non-terminal instance has the id. */
  async startInstance(name: string, instanceId: string, input: string | undefined): Promise<void> {
    const existing = await this.store.getInstance(instanceId);
    if (existing && !isTerminal(existing.runtimeStatus)) {
      throw new HttpError(409, `An instance with ID '${instanceId}' already exists and is ${existing.runtimeStatus}`);
    }
    const executionId = randomUUID().replace(/-/g, '');
    const now = new Date().toISOString();
    const row = { instanceId, name, runtimeStatus: 'Pending' as const, executionId, input, createdTime: now, lastUpdatedTime: now };
    // A new id is inserted, not upserted: of two concurrent starts exactly one creates the instance, the other gets 409.
    if (existing) await this.store.putInstance(row);
    else if (!(await this.store.createInstance(row))) {
      throw new HttpError(409, `An instance with ID '${instanceId}' already exists`);
    }
    await this.store.sendControl(startMessage(instanceId, executionId, name, input));
    this.dispatcher.wake();
    this.log.info({ instanceId, orchestrator: name }, 'durable instance scheduled');
  }

  private async status(instanceId: string, url: URL, origin: string): Promise<Reply> {
    const row = await this.store.getInstance(instanceId);
    if (!row) throw new HttpError(404, `No instance with ID '${instanceId}' found.`);
    const flag = (k: string, dflt: boolean): boolean => {
      const v = url.searchParams.get(k);
      return v === null ? dflt : v.toLowerCase() === 'true';
    };
    const payload = this.payload(row, flag('showInput', true));
    if (flag('showHistory', false)) {
      const loaded = await this.store.load(instanceId);
      const h = loaded ? formatHistory(loaded.history, flag('showHistoryOutput', false)) : [];
      payload.historyEvents = h;
      payload.history = h;
    }
    if (isTerminal(row.runtimeStatus)) {
      const failed500 = row.runtimeStatus === 'Failed' && flag('returnInternalServerErrorOnFailure', false);
      return { status: failed500 ? 500 : 200, body: payload };
    }
    const location = checkStatusPayload(origin, instanceId, this.opts.hubName).statusQueryGetUri;
    return { status: 202, body: payload, headers: { Location: location, 'Retry-After': '5' } };
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

  private async list(url: URL, req: IncomingMessage): Promise<Reply> {
    const q = queryFromUrl(url);
    const top = url.searchParams.get('top');
    const pageSize = top ? Math.max(1, Number(top)) : this.opts.statusPageSize;
    const token = headerValue(req, 'x-ms-continuation-token');
    const showInput = (url.searchParams.get('showInput') ?? 'false').toLowerCase() === 'true';
    const page = await this.store.queryInstances(q, pageSize, token || undefined);
    return {
      status: 200,
      body: page.rows.map((r) => this.payload(r, showInput)),
      headers: page.next ? { 'x-ms-continuation-token': page.next } : undefined,
    };
  }

  /** Local extension (not in the Durable API): the history as the timeline command prints it. */
  private async timeline(instanceId: string): Promise<Reply> {
    const [row, loaded] = await Promise.all([this.store.getInstance(instanceId), this.store.load(instanceId)]);
    if (!row && !loaded) throw new HttpError(404, `No instance with ID '${instanceId}' found.`);
    return { status: 200, text: formatTimeline(row, loaded?.state, loaded?.history ?? []) + '\n' };
  }

  private async raise(instanceId: string, eventName: string, body: string, req: IncomingMessage): Promise<Reply> {
    const contentType = headerValue(req, 'content-type');
    if (contentType && !/json/i.test(contentType)) throw new HttpError(400, `raiseEvent needs Content-Type application/json, got '${contentType}'`);
    const input = parseBodyJson(body, req);
    const row = await this.store.getInstance(instanceId);
    if (!row) throw new HttpError(404, `No instance with ID '${instanceId}' found.`);
    if (isTerminal(row.runtimeStatus)) throw new HttpError(410, `Instance '${instanceId}' is ${row.runtimeStatus}; it can no longer receive events`);
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

  private async control(instanceId: string, op: 'terminate' | 'suspend' | 'resume', reason: string): Promise<Reply> {
    const row = await this.store.getInstance(instanceId);
    if (!row) throw new HttpError(404, `No instance with ID '${instanceId}' found.`);
    if (isTerminal(row.runtimeStatus)) throw new HttpError(410, `Instance '${instanceId}' is already ${row.runtimeStatus}`);
    const now = new Date();
    const event =
      op === 'terminate' ? events.executionTerminated(now, reason) : op === 'suspend' ? events.executionSuspended(now, reason) : events.executionResumed(now, reason);
    await this.store.sendControl({ id: randomUUID(), instanceId, event, sentAt: now.toISOString() });
    this.dispatcher.wake();
    this.log.info({ instanceId, op, reason }, `durable instance ${op} requested`);
    return { status: 202 };
  }

  private async restart(instanceId: string, url: URL, origin: string): Promise<Reply> {
    const row = await this.store.getInstance(instanceId);
    if (!row) throw new HttpError(404, `No instance with ID '${instanceId}' found.`);
    const newId = (url.searchParams.get('restartWithNewInstanceId') ?? 'true').toLowerCase() !== 'false';
    const id = newId ? randomUUID().replace(/-/g, '') : instanceId;
    await this.startInstance(row.name, id, row.input);
    const links = checkStatusPayload(origin, id, this.opts.hubName);
    return { status: 202, body: links, headers: { Location: links.statusQueryGetUri, 'Retry-After': '10' } };
  }

  private async purgeOne(instanceId: string): Promise<Reply> {
    const row = await this.store.getInstance(instanceId);
    if (!row) throw new HttpError(404, `No instance with ID '${instanceId}' found.`);
    if (!isTerminal(row.runtimeStatus)) throw new HttpError(412, `Instance '${instanceId}' is ${row.runtimeStatus}; only finished instances can be purged`);
    await this.purge(instanceId);
    return { status: 200, body: { instancesDeleted: 1 } };
  }

  private async purgeMany(url: URL): Promise<Reply> {
    const q = queryFromUrl(url);
    if (!q.createdTimeFrom) throw new HttpError(400, 'Purging by filter requires createdTimeFrom');
    q.runtimeStatus = q.runtimeStatus?.length ? q.runtimeStatus.filter((s) => isTerminal(s)) : [...TERMINAL_STATUSES];
    let n = 0;
    if (q.runtimeStatus.length > 0) {
      const ids: string[] = [];
      for await (const row of this.store.allInstances(q)) ids.push(row.instanceId);
      for (const id of ids) {
        await this.purge(id);
        n += 1;
      }
    }
    if (n === 0) throw new HttpError(404, 'No instances matched the purge filter');
    return { status: 200, body: { instancesDeleted: n } };
  }

  private async purge(instanceId: string): Promise<void> {
    await this.store.deleteHistory(instanceId);
    await this.store.deleteInstance(instanceId);
    this.dispatcher.forget(instanceId);
    this.log.info({ instanceId }, 'durable instance purged');
  }
}

function queryFromUrl(url: URL): InstanceQuery {
  const date = (k: string): Date | undefined => {
    const v = url.searchParams.get(k);
    if (!v) return undefined;
    const d = new Date(v);
    if (Number.isNaN(d.getTime())) throw new HttpError(400, `${k} is not a date: '${v}'`);
    return d;
  };
  const statuses = url.searchParams.get('runtimeStatus');
  const runtimeStatus = statuses
    ? statuses.split(',').map((s) => {
        const match = RUNTIME_STATUSES.find((r) => r.toLowerCase() === s.trim().toLowerCase());
        if (!match) throw new HttpError(400, `Unknown runtimeStatus '${s}' (expected one of ${RUNTIME_STATUSES.join(', ')})`);
        return match;
      })
    : undefined;
  return {
    createdTimeFrom: date('createdTimeFrom'),
    createdTimeTo: date('createdTimeTo'),
    runtimeStatus,
    instanceIdPrefix: url.searchParams.get('instanceIdPrefix') ?? undefined,
  };
}

function parseBodyJson(body: string, _req: IncomingMessage): string | undefined {
  if (body.trim() === '') return undefined;
  try {
    JSON.parse(body);
  } catch (err) {
    throw new HttpError(400, `Request body is not valid JSON: ${(err as Error).message}`);
  }
  return body.trim();
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** History as the status API shows it: scheduling folded into the answering event, as the extension does. */
export function formatHistory(history: HistoryEvent[], showOutput: boolean): Record<string, unknown>[] {
  const scheduled = new Map<number, HistoryEvent>();
  const out: Record<string, unknown>[] = [];
  for (const e of history) {
    const type = EventType[e.EventType];
    switch (e.EventType) {
      case EventType.OrchestratorStarted:
      case EventType.OrchestratorCompleted:
        continue;
      case EventType.TaskScheduled:
      case EventType.SubOrchestrationInstanceCreated:
        scheduled.set(e.EventId, e);
        continue;
      default:
        break;
    }
    const item: Record<string, unknown> = { EventType: type, EventId: e.EventId, Timestamp: e.Timestamp };
    const id = e.TaskScheduledId;
    if (id !== undefined) {
      const s = scheduled.get(id);
      item.TaskScheduledId = id;
      if (s) {
        item.FunctionName = s.Name;
        item.ScheduledTime = s.Timestamp;
        if (s.InstanceId) item.InstanceId = s.InstanceId;
      }
    }
    if (e.EventType === EventType.ExecutionStarted) item.FunctionName = e.Name;
    if (e.EventType === EventType.EventRaised) item.Name = e.Name;
    if (e.TimerId !== undefined) item.TimerId = e.TimerId;
    if (e.FireAt) item.FireAt = e.FireAt;
    if (e.OrchestrationStatus) item.OrchestrationStatus = e.OrchestrationStatus;
    if (e.Reason) item.Reason = e.Reason;
    if (e.Details) item.Details = e.Details;
    if (showOutput) {
      if (e.Result !== undefined) item.Result = parseJsonText(e.Result);
      if (e.Input !== undefined) item.Input = parseJsonText(e.Input);
    }
    out.push(item);
  }
  return out;
}
