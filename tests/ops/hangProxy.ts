/**
 * A loopback HTTP proxy in front of the Batch emulator that can hold matching requests forever (never answer):
 * the way to make an activity "never return" with everything else real. Held requests are destroyed at close().
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HangProxy {
  url: string;
  setTarget(url: string): void;
  /** Hold every request whose "METHOD path" matches (undefined: pass everything). */
  hang(match: RegExp | undefined): void;
  held(): number;
  close(): Promise<void>;
}

export async function startHangProxy(): Promise<HangProxy> {
  let target: URL | undefined;
  let match: RegExp | undefined;
  const heldResponses = new Set<http.ServerResponse>();
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer((req, res) => {
    const key = `${req.method} ${req.url}`;
    if (match?.test(key)) {
      heldResponses.add(res);
      res.on('close', () => heldResponses.delete(res));
      return;
    }
    if (!target) {
      res.writeHead(503).end('hang proxy: no target yet');
      return;
    }
    const out = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host }, agent },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    out.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502);
      res.end(`hang proxy: ${err.message}`);
    });
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    setTarget(url) {
      target = new URL(url);
    },
    hang(m) {
      match = m;
    },
    held: () => heldResponses.size,
    async close() {
      match = undefined;
      for (const res of heldResponses) res.destroy();
      server.closeAllConnections();
      agent.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
