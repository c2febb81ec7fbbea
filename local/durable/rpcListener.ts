/**
 * The engine's local RPC endpoint, the `rpcBaseUrl` durable-functions' DurableClient calls (the Durable
 * extension's LocalHttpListener: http://127.0.0.1:<port>/durabletask/, loopback only, not part of the
 * app's public listener). In Azure it takes no key because only the app's own sandbox reaches it. Here
 * any local process could, so it asks for the webhook's system key too: the rpcBaseUrl handed to the app
 * carries it as URL credentials (`http://durabletask:<key>@127.0.0.1:<port>/durabletask/`), which the
 * library's HTTP client sends as Basic authorization; `code=` or x-functions-key work as on the webhook.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';

export const RPC_USER = 'durabletask';

export interface RpcListener {
  port: number;
  /** The rpcBaseUrl for the binding data, credentials included. */
  baseUrlWithKey(key: string): string;
  close(): Promise<void>;
}

export interface RpcListenerOptions {
  /** 0 = ephemeral (default). */
  port: number;
  handle(req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<boolean>;
  /** Whether a presented key opens the Durable API (its system key or the master key). */
  authorize(presented: string | undefined): boolean;
  log: Logger;
}

function presented(req: http.IncomingMessage, url: URL): string | undefined {
  const auth = req.headers.authorization;
  if (auth && /^basic /i.test(auth)) {
    const decoded = Buffer.from(auth.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon >= 0) return decoded.slice(colon + 1);
  }
  const header = req.headers['x-functions-key'];
  return (Array.isArray(header) ? header[0] : header) ?? url.searchParams.get('code') ?? undefined;
}

export async function startRpcListener(opts: RpcListenerOptions): Promise<RpcListener> {
  const active = new Set<Promise<void>>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
    const p = (async () => {
      if (!opts.authorize(presented(req, url))) {
        req.resume();
        res.writeHead(401).end();
        return;
      }
      if (!(await opts.handle(req, res, url))) res.writeHead(404).end();
    })()
      .catch((err: Error) => {
        opts.log.error({ err, url: req.url }, 'durable RPC request failed');
        if (!res.headersSent) res.writeHead(500);
        res.end();
      })
      .finally(() => active.delete(p));
    active.add(p);
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(`Durable RPC endpoint cannot listen on 127.0.0.1:${opts.port}: ${err.code ?? err.message}`)),
    );
    server.listen(opts.port, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    baseUrlWithKey: (key) => `http://${RPC_USER}:${encodeURIComponent(key)}@127.0.0.1:${port}/durabletask/`,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await Promise.allSettled([...active]);
      server.closeAllConnections();
      await closed;
    },
  };
}
