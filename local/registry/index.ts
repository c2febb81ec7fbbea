/**
 * The local OCI registry: a read-only distribution API server on 127.0.0.1 with a configurable limit of
 * concurrently pulling clients (429 TOOMANYREQUESTS beyond it, see pullAdmission.ts) and an optional shared
 * bandwidth cap, so that the registry overload seen at scale can be reproduced and measured on one machine.
 */
import { createServer } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { BandwidthLimiter } from './bandwidth';
import { ImageCatalog, ImageSource } from './imageCatalog';
import { PullAdmission, RegistryStats } from './pullAdmission';
import { RegistryContext, handleRequest } from './server';
import { createRegistryAuth, type RegistryAuthOptions } from './auth';

export type { ImageSource, LayoutSource } from './imageCatalog';
export type { BuiltImage, BuildImageOptions, LayerSpec } from './imageBuilder';
export type { RegistryStats, ClientStats } from './pullAdmission';
export { buildImage } from './imageBuilder';
export { REFRESH_TOKEN_USER, REGISTRY_AAD_AUDIENCES, type RegistryAuthOptions } from './auth';
export { writeOciLayout, readOciLayout } from './layout';

export interface RegistryOptions {
  /** TCP port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** Most clients pulling at the same time; unlimited when absent. */
  maxConcurrentPulls?: number;
  /** Cap on the bytes per second sent by all transfers together; unlimited when absent. */
  bandwidthBytesPerSec?: number;
  /** Value of Retry-After on 429 answers, in seconds (default 1). */
  retryAfterSeconds?: number;
  images?: ImageSource[];
  /** Make the registry private (ACR's token service, auth.ts); absent = open, anyone may pull. */
  auth?: RegistryAuthOptions;
}

export interface RegistryHandle {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** `127.0.0.1:<port>`, the registry part of image references (`<host>/hpc/mpi-demo:1.0`). */
  host: string;
  stats(): RegistryStats;
  resetStats(): void;
  /** Changes the concurrent-pull limit for new requests; undefined removes it. */
  setLimit(n: number | undefined): void;
  /** Adds images while running. */
  addImage(source: ImageSource): Promise<void>;
  stop(): Promise<void>;
}

export async function startRegistry(opts: RegistryOptions = {}): Promise<RegistryHandle> {
  const catalog = new ImageCatalog();
  for (const source of opts.images ?? []) await catalog.add(source);
  const ctx: RegistryContext = {
    catalog,
    admission: new PullAdmission(opts.maxConcurrentPulls),
    bandwidth: new BandwidthLimiter(opts.bandwidthBytesPerSec),
    retryAfterSeconds: opts.retryAfterSeconds ?? 1,
    ...(opts.auth ? { auth: createRegistryAuth(opts.auth) } : {}),
  };
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    handleRequest(ctx, req, res).catch((err: Error) => {
      if (!res.headersSent) {
        res.writeHead(500, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ errors: [{ code: 'UNKNOWN', message: err.message }] }));
      } else res.destroy(err);
    });
  });
  server.keepAliveTimeout = 5000;
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = `127.0.0.1:${port}`;
  return {
    url: `http://${host}`,
    host,
    stats: () => ctx.admission.snapshot(),
    resetStats: () => ctx.admission.reset(),
    setLimit: (n) => ctx.admission.setLimit(n),
    addImage: (source) => catalog.add(source),
    stop: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
