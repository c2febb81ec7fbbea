/**
 * The HTTPS certificate of the local issuer. MSAL (under @azure/identity) refuses an authority that is not https,
 * so the issuer must speak TLS; Node has no API to make a certificate, so Debian's `openssl` makes a self-signed
 * one for 127.0.0.1 and localhost (kept in the data folder and reused while it is valid). Clients trust it through
 * NODE_EXTRA_CA_CERTS=<certFile> (child processes: the CLI) or an agent given the certificate (in process).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { X509Certificate } from 'node:crypto';

export interface TlsFiles {
  certFile: string;
  keyFile: string;
  cert: string;
  key: string;
}

const DAY_MS = 24 * 3_600_000;

function usable(certFile: string, keyFile: string): boolean {
  if (!existsSync(certFile) || !existsSync(keyFile)) return false;
  try {
    const cert = new X509Certificate(readFileSync(certFile));
    return Date.parse(cert.validTo) - Date.now() > DAY_MS && cert.checkIP('127.0.0.1') !== undefined;
  } catch {
    return false;
  }
}

export function ensureCertificate(dir: string): TlsFiles {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const certFile = path.join(dir, 'issuer-cert.pem');
  const keyFile = path.join(dir, 'issuer-key.pem');
  if (!usable(certFile, keyFile)) {
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          // P-256, not RSA: an RSA-2048 key costs openssl 0.2-0.7 CPU-s, paid by every stack a test starts.
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-nodes',
          '-sha256',
          '-days',
          '825',
          '-keyout',
          keyFile,
          '-out',
          certFile,
          '-subj',
          '/CN=hpc local identity',
          '-addext',
          'subjectAltName=IP:127.0.0.1,DNS:localhost',
          '-addext',
          'basicConstraints=critical,CA:TRUE',
          '-addext',
          'keyUsage=critical,digitalSignature,keyCertSign',
          '-addext',
          'extendedKeyUsage=serverAuth',
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
    } catch (err) {
      throw new Error(`cannot make the local issuer's TLS certificate with openssl (apt-get install openssl): ${(err as Error).message}`);
    }
  }
  return { certFile, keyFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
}
