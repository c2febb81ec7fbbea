/**
 * A small HTTP reverse proxy on loopback that can make a storage endpoint (Azurite's table service) fail on
 * demand: answer 503 ServerBusy (or another status), reset the connection, or lose the response of a request
 * that was applied, for the next N requests or for a time window.
 * Put it in front of one endpoint only (its URL goes into a connection string's TableEndpoint) to see how
 * the app behaves when storage is briefly or permanently unavailable, with everything else real. It also records
 * every request it sees, so a test can count the storage calls a path makes.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * - `status`: answer with an error status (default 503 ServerBusy) without forwarding;
 * - `reset`: destroy the connection without forwarding (the request never reached storage);
 * - `lostResponse`: forward, let storage apply it, then destroy the connection instead of answering
 *   (the client cannot know the write happened: its retry meets its own write).
 */
export type FaultMode = 'status' | 'reset' | 'lostResponse';

export interface FaultRule {
  mode: FaultMode;
  /** For mode `status` (default 503). */
  status?: number;
  /** Fail this many matching requests, then pass again. */
  count?: number;
  /** Fail every matching request until this many ms from now. */
  forMs?: number;
  /** Only requests whose "METHOD path" matches (default: all). */
  match?: RegExp;
}

export interface FaultProxyStats {
  /** Requests forwarded to the target. */
  forwarded: number;
  /** Requests that got a fault (lostResponse ones are counted in both). */
  failed: number;
}

export interface FaultProxy {
  /** `http://127.0.0.1:<port>` (append the account path, e.g. `/devstoreaccount1`, as Azurite's endpoints do). */
  url: string;
  port: number;
  /** Start failing as the rule says (replaces the current rule). */
  fail(rule: FaultRule): void;
  /** Stop failing. */
  heal(): void;
  stats(): FaultProxyStats;
  /** Every request seen, in arrival order, as "METHOD path" (path with its query; forwarded or failed alike). */
  requests(): string[];
  close(): Promise<void>;
}

interface ActiveRule extends FaultRule {
  remaining: number;
  until: number;
}

/** Starts the proxy on an ephemeral port, forwarding to `target` (e.g. `http://127.0.0.1:10002`). */
export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const to = new URL(target);
  let rule: ActiveRule | undefined;
  const stats: FaultProxyStats = { forwarded: 0, failed: 0 };
  const agent = new http.Agent({ keepAlive: true });

  const shouldFail = (req: http.IncomingMessage): ActiveRule | undefined => {
    if (!rule) return undefined;
    if (rule.match && !rule.match.test(`${req.method ?? 'GET'} ${req.url ?? '/'}`)) return undefined;
    if (Date.now() < rule.until) return rule;
    if (rule.remaining > 0) {
      rule.remaining--;
      return rule;
    }
    return undefined;
  };

  const seen: string[] = [];

  const server = http.createServer((req, res) => {
    seen.push(`${req.method ?? 'GET'} ${req.url ?? '/'}`);
    const fault = shouldFail(req);
    if (fault && fault.mode !== 'lostResponse') {
      stats.failed++;
      // Drain the body first so a 503 is a clean answer the client can read and retry.
      req.resume();
      req.on('end', () => {
        if (fault.mode === 'reset') {
          req.socket.destroy();
          return;
        }
        const status = fault.status ?? 503;
        const code = status === 503 ? 'ServerBusy' : status === 403 ? 'AuthorizationFailure' : 'InjectedFault';
        const body = JSON.stringify({ 'odata.error': { code, message: { lang: 'en-US', value: `fault proxy: injected ${status}` } } });
        res.writeHead(status, { 'Content-Type': 'application/json', 'x-ms-error-code': code, Connection: 'close' });
        res.end(body);
      });
      return;
    }
    stats.forwarded++;
    if (fault) stats.failed++;
    const upstream = http.request(
      { protocol: to.protocol, hostname: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers, agent },
      (up) => {
        if (fault) {
          up.resume();
          up.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'text/plain' });
      res.end(`fault proxy: upstream ${target} failed: ${err.message}`);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    fail(r) {
      if (r.count === undefined && r.forMs === undefined) throw new Error('fault proxy: a rule needs count or forMs');
      rule = { ...r, remaining: r.count ?? 0, until: r.forMs !== undefined ? Date.now() + r.forMs : 0 };
    },
    heal() {
      rule = undefined;
    },
    stats: () => ({ ...stats }),
    requests: () => [...seen],
    async close() {
      rule = undefined;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      agent.destroy();
    },
  };
}

/** The connection string with its TableEndpoint replaced (the other services stay where they are). */
export function withTableEndpoint(connectionString: string, tableEndpoint: string): string {
  const parts = connectionString.split(';').filter((p) => p !== '' && !/^TableEndpoint=/i.test(p));
  return `${[...parts, `TableEndpoint=${tableEndpoint}`].join(';')};`;
}
