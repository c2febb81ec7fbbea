import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ensureCertificate } from '../../local/identity/tls';

// The local issuer's certificate has a P-256 key (an RSA-2048 key cost openssl 0.2-0.7 CPU-s per stack).
// It must still serve TLS that a client trusting only this certificate accepts, for 127.0.0.1 and localhost.
describe('the local issuer TLS certificate', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'issuer-tls-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is an EC P-256 certificate for 127.0.0.1 and localhost, kept and reused', () => {
    const tls = ensureCertificate(dir);
    const cert = new X509Certificate(tls.cert);
    expect(cert.publicKey.asymmetricKeyType).toBe('ec');
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkHost('localhost')).toBe('localhost');
    expect(ensureCertificate(dir).cert).toBe(tls.cert);
  });

  it('serves HTTPS that a client trusting only it accepts', async () => {
    const tls = ensureCertificate(dir);
    const server = createServer({ cert: tls.cert, key: tls.key }, (_req, res) => res.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      const body = await new Promise<string>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/', ca: tls.cert }, (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => resolve(text));
        });
        req.on('error', reject);
        req.end();
      });
      expect(body).toBe('ok');
    } finally {
      server.close();
    }
  });
});
