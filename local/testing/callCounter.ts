/**
 * Counting the requests the control plane makes, where they arrive (not by instrumenting the app): Azurite's request
 * tap (local/azurite/requestTap.cjs, every storage request of every account), the Batch emulator's data-plane and
 * management-plane exchanges, and the registry's request counters. Each request is classified once, as
 * (service, component, account, resource, operation), and stamped with its arrival time, so a bench or a test can
 * take snapshots around a step (an intake, a poll) or bucket a whole job by the stages of its timeline.
 *
 * Components: `durable` for the task hub's tables and queues (<hub>Instances, <hub>History, <hub>-control-NN,
 * <hub>-workitems, the hub's lease and large-message containers), `app` for everything else in storage, `batch` and
 * `arm` for the two Batch planes. Queue `get` (dequeue) requests are the pollers' (the Functions host's queue
 * triggers, the Durable engine's dispatchers): their number follows the clock and the pollers' back-off, not the
 * work, so budgets count a consumed message by its `delete` and report dequeues apart (`poller`).
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type { StorageArrival } from '../azurite';
import type { ExchangeRecord } from '../batch/config';
import { NODE_AGENT_USER_AGENT } from '../batch/runner/nodeAgentHttp';
import type { InvocationRecord } from '../host';

export type CallService = 'table' | 'queue' | 'blob' | 'batch' | 'arm';
/** `node`: the emulated nodes' own storage transfers (their output file uploads, resource files), not the control plane's. */
export type CallComponent = 'app' | 'durable' | 'poller' | 'node' | 'batch' | 'arm';

export interface Call {
  service: CallService;
  component: CallComponent;
  /** Storage account (path-style), or the Batch account's plane. */
  account: string;
  /** Table, queue or container name; for Batch the path template (`/pools/{}/nodes`). */
  resource: string;
  /** What the request does, e.g. `insert`, `query`, `merge`, `batch`, `put-message`, `GET`. */
  operation: string;
  /** The whole path and query as it arrived (for a test's own finer matching). */
  url: string;
  /** When it arrived (ms, this process's clock). */
  at: number;
}

/** The task hub's resources (local/durable/store.ts; Azure's Storage provider names them the same). */
function durableResource(resource: string, hub: string): boolean {
  const h = hub.toLowerCase();
  const r = resource.toLowerCase();
  return r === `${h}instances` || r === `${h}history` || r.startsWith(`${h}-control-`) || r === `${h}-workitems` || r.startsWith(`${h}-`);
}

const ENTITY = /^([A-Za-z][A-Za-z0-9]*)\((.*)\)$/;

/** Classifies one storage request (pure). `service` comes from the port it reached. */
export function classifyStorage(service: 'table' | 'queue' | 'blob', method: string, url: string, hub: string, userAgent = ''): Omit<Call, 'at'> {
  const u = new URL(url, 'http://x');
  const segments = u.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  const account = segments[0] ?? '';
  const rest = segments.slice(1);
  const q = u.searchParams;
  const m = method.toUpperCase();
  let resource = rest[0] ?? '';
  let operation = m.toLowerCase();
  if (service === 'table') {
    const entity = ENTITY.exec(resource);
    if (resource === '$batch') {
      operation = 'batch';
    } else if (resource === 'Tables' || resource.startsWith('Tables(')) {
      operation = m === 'POST' ? 'create-table' : m === 'DELETE' ? 'delete-table' : 'list-tables';
      resource = resource.startsWith('Tables(') ? resource.slice(8, -2) : '';
    } else if (entity) {
      resource = entity[1];
      const keyed = entity[2] !== '';
      operation =
        m === 'GET'
          ? keyed
            ? 'get'
            : 'query'
          : m === 'PUT'
            ? 'replace'
            : m === 'MERGE' || m === 'PATCH'
              ? 'merge'
              : m === 'DELETE'
                ? 'delete'
                : m.toLowerCase();
    } else {
      operation = m === 'POST' ? 'insert' : m === 'GET' ? 'query' : m.toLowerCase();
    }
  } else if (service === 'queue') {
    if (rest.length === 0) operation = q.get('comp') === 'list' ? 'list-queues' : 'service';
    else if (rest[1] === 'messages') {
      if (rest.length > 2) operation = m === 'DELETE' ? 'delete-message' : 'update-message';
      else operation = m === 'POST' ? 'put-message' : m === 'DELETE' ? 'clear-messages' : q.get('peekonly') === 'true' ? 'peek' : 'get-messages';
    } else operation = m === 'PUT' ? 'create-queue' : m === 'DELETE' ? 'delete-queue' : 'queue-properties';
  } else {
    const comp = q.get('comp');
    if (rest.length === 0) operation = comp === 'list' ? 'list-containers' : comp === 'userdelegationkey' ? 'user-delegation-key' : 'service';
    else if (rest.length === 1) operation = comp === 'list' ? 'list-blobs' : `container-${m.toLowerCase()}${comp ? `-${comp}` : ''}`;
    else operation = m === 'GET' ? 'read' : m === 'HEAD' ? 'properties' : m === 'DELETE' ? 'delete' : `write${comp ? `-${comp}` : ''}`;
  }
  // A table batch names its table in its body only: the Durable engine's History writes are the batches a job makes
  // (the app's one transaction, admission's, is counted with them when a queue admits jobs).
  const durable = durableResource(resource, hub) || (service === 'table' && operation === 'batch');
  const component: CallComponent = userAgent.includes(NODE_AGENT_USER_AGENT)
    ? 'node'
    : service === 'queue' && operation === 'get-messages'
      ? 'poller'
      : durable
        ? 'durable'
        : 'app';
  return { service, component, account, resource, operation, url };
}

/**
 * A Batch path as a template: ids replaced by `{}` (collections and ids alternate; a file path after `files` is one
 * id). `/pools/p1/nodes` → `/pools/{}/nodes`, `/jobs/j/tasks/t/files/a/b` → `/jobs/{}/tasks/{}/files/{}`.
 */
export function batchTemplate(path: string): string {
  const segs = path.split('?')[0].split('/').filter(Boolean);
  const out: string[] = [];
  for (let i = 0; i < segs.length; i++) {
    if (i % 2 === 0) out.push(segs[i].toLowerCase());
    else out.push('{}');
    if (segs[i].toLowerCase() === 'files' && i % 2 === 0 && i + 1 < segs.length) {
      out.push('{}');
      break;
    }
  }
  return `/${out.join('/')}`;
}

export function classifyBatch(plane: 'batch' | 'arm', method: string, path: string): Omit<Call, 'at'> {
  const resource =
    plane === 'arm'
      ? path
          .split('?')[0]
          .replace(/\/pools\/[^/]+/i, '/pools/{}')
          .replace(/^.*\/providers\//i, '/providers/')
      : batchTemplate(path);
  return { service: plane, component: plane, account: plane, resource, operation: method.toUpperCase(), url: path };
}

/** A grouping key of calls: `service component resource operation` by default. */
export type CallKey = (c: Call) => string;
export const byResourceOperation: CallKey = (c) => `${c.service} ${c.component} ${c.account}/${c.resource} ${c.operation}`;

export function countBy(calls: readonly Call[], key: CallKey = byResourceOperation): Map<string, number> {
  const m = new Map<string, number>();
  for (const c of calls) m.set(key(c), (m.get(key(c)) ?? 0) + 1);
  return new Map([...m].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
}

const MARKER = '/__call-counter-marker/';

/** One function execution of the host (FunctionsHostOptions.onInvocation), when it ended. */
export type Execution = InvocationRecord & { at: number };

/**
 * The counter. Wire it with `stackOptions()` (or its parts) before the stack starts, then `bindStorage` with
 * Azurite's ports once they are known (startStack's result). `mark()` is a barrier: it sends a request of its own to
 * Azurite and resolves when the tap has reported it, so every storage request that arrived before is counted.
 */
export class CallCounter {
  private readonly calls: Call[] = [];
  /** The host's function executions, kept apart from the requests (they are billed as executions, not transactions). */
  private readonly executions: Execution[] = [];
  private ports = new Map<number, 'table' | 'queue' | 'blob'>();
  private pending: StorageArrival[] = [];
  private markers = new Map<string, () => void>();
  private markerUrl: string | undefined;
  private seq = 0;

  constructor(private readonly hub = 'HpcMpiHub') {}

  /** The stack's hooks: storage arrivals and both Batch planes' exchanges. */
  stackOptions(): {
    onStorageRequest: (r: StorageArrival) => void;
    onInvocation: (r: InvocationRecord) => void;
    batch: { onExchange: (e: ExchangeRecord) => void; onArmExchange: (e: ExchangeRecord) => void };
  } {
    return {
      onStorageRequest: (r) => this.storage(r),
      onInvocation: (r) => this.executions.push({ ...r, at: Date.now() }),
      batch: { onExchange: (e) => this.batch('batch', e), onArmExchange: (e) => this.batch('arm', e) },
    };
  }

  /** Which port is which service (Azurite's ports); arrivals seen before are classified now. */
  bindStorage(ports: { blob: number; queue: number; table: number }, tableEndpoint: string): void {
    this.ports = new Map([
      [ports.blob, 'blob'],
      [ports.queue, 'queue'],
      [ports.table, 'table'],
    ]);
    this.markerUrl = new URL(tableEndpoint).origin;
    const early = this.pending;
    this.pending = [];
    for (const r of early) this.storage(r);
  }

  private storage(r: StorageArrival): void {
    if (r.url.startsWith(MARKER)) {
      this.markers.get(r.url)?.();
      return;
    }
    const service = this.ports.get(r.port);
    if (!service) {
      this.pending.push(r);
      return;
    }
    this.calls.push({ ...classifyStorage(service, r.method, r.url, this.hub, r.userAgent), at: Date.now() });
  }

  private batch(plane: 'batch' | 'arm', e: ExchangeRecord): void {
    const query = e.query && Object.keys(e.query).length ? `?${new URLSearchParams(e.query as Record<string, string>).toString()}` : '';
    this.calls.push({ ...classifyBatch(plane, e.method, e.path), url: `${e.path}${query}`, at: Date.now() });
  }

  /** Resolves once every storage request that arrived before this call has been counted (see the class comment). */
  async mark(): Promise<void> {
    if (!this.markerUrl) throw new Error('CallCounter: bindStorage first');
    const url = `${MARKER}${++this.seq}`;
    const seen = new Promise<void>((resolve) => this.markers.set(url, resolve));
    // Any answer will do (Azurite refuses the path); only its arrival matters, so the certificate is not checked.
    const target = new URL(`${this.markerUrl}${url}`);
    await new Promise<void>((resolve) => {
      const get = target.protocol === 'https:' ? https.get : http.get;
      const req = get(target, { rejectUnauthorized: false, agent: false }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', () => resolve());
    });
    await seen;
    this.markers.delete(url);
  }

  /** Every call counted so far (a copy), or those from index `from`. */
  since(from = 0): Call[] {
    return this.calls.slice(from);
  }

  /** The function executions that ended from position `from` (executionPosition) on. */
  executionsSince(from = 0): Execution[] {
    return this.executions.slice(from);
  }

  executionPosition(): number {
    return this.executions.length;
  }

  /** A position to take `since` from. */
  position(): number {
    return this.calls.length;
  }

  /** The calls made while `work` ran, with the barrier on both sides. */
  async during<T>(work: () => Promise<T>): Promise<{ result: T; calls: Call[] }> {
    await this.mark();
    const from = this.position();
    const result = await work();
    await this.mark();
    return { result, calls: this.since(from) };
  }
}
