/**
 * The public release servers the examples download from over https, stood in for locally: examples name the real-looking
 * host (examples/workloads/wrf-tables-from-url.yaml: `https://wrf-release.example.org/v4.5/…`), the Batch emulator's
 * nodes resolve it here (the emulator's `hostAliases`), and this serves the files committed under
 * examples/workloads/files/<host's folder>/. So the example runs as written on `npm start`. GET and HEAD only; a path
 * outside the folder or a file not there is 404.
 */
import { createServer, type Server } from 'node:https';
import { existsSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';

/** The public hosts the examples name, and the folder (relative to the repository root) each one's files are in. */
export const RELEASE_HOSTS: Readonly<Record<string, string>> = {
  'wrf-release.example.org': path.join('examples', 'workloads', 'files', 'wrf-release'),
};

export interface ReleaseServers {
  /** host name → the `127.0.0.1:port` serving it (the emulator's hostAliases). */
  aliases: Record<string, string>;
  stop(): Promise<void>;
}

/** The file a request path names under `root`, or undefined (outside it, or not a file). */
export function servedFile(root: string, urlPath: string): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath.split('?')[0]);
  } catch {
    return undefined;
  }
  const file = path.resolve(root, `.${path.posix.normalize(`/${decoded}`)}`);
  if (!file.startsWith(root + path.sep)) return undefined;
  return existsSync(file) && statSync(file).isFile() ? file : undefined;
}

function serve(root: string, tls: { cert: string; key: string }): Promise<{ server: Server; port: number }> {
  const server = createServer(tls, (req, res) => {
    const file = req.method === 'GET' || req.method === 'HEAD' ? servedFile(root, req.url ?? '/') : undefined;
    if (!file) {
      res.writeHead(req.method === 'GET' || req.method === 'HEAD' ? 404 : 405, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    const body = readFileSync(file);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port }));
  });
}

/**
 * One https server per release host, on an ephemeral port of 127.0.0.1, with a certificate for 127.0.0.1 that the
 * emulated nodes trust (the stack's local certificate).
 */
export async function startReleaseServers(repoRoot: string, tls: { cert: string; key: string }): Promise<ReleaseServers> {
  const servers: Server[] = [];
  const aliases: Record<string, string> = {};
  for (const [host, folder] of Object.entries(RELEASE_HOSTS)) {
    const { server, port } = await serve(path.join(repoRoot, folder), tls);
    servers.push(server);
    aliases[host] = `127.0.0.1:${port}`;
  }
  return {
    aliases,
    stop: async () => {
      // Nodes' keep-alive connections would hold close() open.
      await Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              s.close(() => resolve());
              s.closeAllConnections();
            }),
        ),
      );
    },
  };
}
