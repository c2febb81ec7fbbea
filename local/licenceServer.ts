/**
 * The examples' FlexLM licence server on the local stack (examples/workloads/licensed-app-flexlm.yaml): a stand-in
 * for lmgrd and its vendor daemon that the emulator serves at 10.0.0.4:27000 and :27001 in the examples' subnet
 * (local/exampleNetwork.ts, through the Batch emulator's TCP services, local/batch/runner/tcpServices.ts).
 *
 * Its protocol is the example's, not FlexLM's: one line "CHECKOUT <sha256 of the site key>" in, "GRANTED" (the hash
 * is the key's the local Key Vault holds as hpclocal/demo-license-key) or "DENIED" out. The vendor daemon's port
 * accepts and closes (preflight only checks that it answers). Both listen on 127.0.0.1 at ports the OS gives: the
 * emulator's table is written at every start, so nothing stored names them.
 */
import { createHash } from 'node:crypto';
import { createServer, type AddressInfo, type Server } from 'node:net';

export const LICENCE_SERVER_ADDRESS = '10.0.0.4';
export const LMGRD_PORT = 27000;
export const VENDOR_PORT = 27001;

export interface LicenceServer {
  /** The local ports serving lmgrd and the vendor daemon. */
  lmgrdPort: number;
  vendorPort: number;
  /** Every checkout line received, in order (what a test checks: the value never, its hash only). */
  checkouts: string[];
  stop(): Promise<void>;
}

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** The answer to one request line, for the site key `key`. */
export function licenceAnswer(line: string, key: string): 'GRANTED' | 'DENIED' {
  return line.trim() === `CHECKOUT ${sha256(key)}` ? 'GRANTED' : 'DENIED';
}

/** Longest request line read (a client that sends more is answered DENIED). */
const MAX_LINE = 1024;

export async function startLicenceServer(opts: { key: string }): Promise<LicenceServer> {
  const checkouts: string[] = [];
  const lmgrd = createServer((socket) => {
    let buf = '';
    socket.setTimeout(30_000, () => socket.destroy());
    socket.on('error', () => undefined);
    socket.on('data', (d) => {
      buf += d.toString('utf8');
      const nl = buf.indexOf('\n');
      if (nl < 0 && buf.length <= MAX_LINE) return;
      const line = nl < 0 ? '' : buf.slice(0, nl);
      socket.removeAllListeners('data');
      checkouts.push(line.slice(0, MAX_LINE));
      socket.end(`${licenceAnswer(line, opts.key)}\n`);
    });
  });
  const vendor = createServer((socket) => {
    socket.on('error', () => undefined);
    socket.end();
  });
  const listen = (s: Server) =>
    new Promise<number>((resolve, reject) => {
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => resolve((s.address() as AddressInfo).port));
    });
  const close = (s: Server) => new Promise<void>((resolve) => (s.listening ? s.close(() => resolve()) : resolve()));
  try {
    const lmgrdPort = await listen(lmgrd);
    const vendorPort = await listen(vendor);
    return { lmgrdPort, vendorPort, checkouts, stop: async () => void (await Promise.all([close(lmgrd), close(vendor)])) };
  } catch (err) {
    await Promise.all([close(lmgrd), close(vendor)]);
    throw err;
  }
}
