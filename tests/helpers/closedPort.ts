import { createServer } from 'node:net';

/** A loopback port where nothing listens (bound, then released): a client of it gets "connection refused". */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}
