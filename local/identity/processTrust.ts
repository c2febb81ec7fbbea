/**
 * Trust in the local stack's TLS certificate (tls.ts) for the process the stack runs in. Azurite speaks https (its
 * OAuth needs it) and so does the issuer; Node trusts extra CAs only through NODE_EXTRA_CA_CERTS, read once when a
 * process starts. So:
 *   - child processes the stack starts (the supervised Functions host, Azurite, the CLI) get NODE_EXTRA_CA_CERTS;
 *   - the process that starts the stack in itself (a test, the demo, the supervisor, whose Batch emulator downloads
 *     resource files from Azurite) adds the certificate here, to what Node trusts by default: every TLS client that
 *     brings no CA list of its own gets Node's root certificates plus the local ones, which is exactly what
 *     NODE_EXTRA_CA_CERTS does at start-up. The app in the in-process host is not changed; its SDK clients, like
 *     every other client in the process, simply find the certificate trusted, as they find Azure's public CAs
 *     trusted on Azure Functions.
 * Local tooling only: nothing under shared/, functions/ or orchestrations/ imports it.
 */
// The module object itself (not a namespace copy), so that every client in the process sees the patched function.
import tls from 'node:tls';

interface TrustState {
  certs: Map<string, number>;
  original: typeof tls.createSecureContext;
}

// One state per process, whatever number of copies of this module are loaded (jest loads one per test file, each in
// its own global scope, which it cleans afterwards): kept on the tls module object itself, which the process shares.
const KEY = Symbol.for('hpc-local-stack.trusted-certificates');

function state(): TrustState {
  const holder = tls as unknown as Record<symbol, TrustState | undefined>;
  let s = holder[KEY];
  if (!s) {
    const created: TrustState = { certs: new Map(), original: tls.createSecureContext };
    (tls as { createSecureContext: typeof tls.createSecureContext }).createSecureContext = function createSecureContext(options?: tls.SecureContextOptions): tls.SecureContext {
      if (created.certs.size === 0 || (options && options.ca !== undefined)) return created.original(options);
      return created.original({ ...options, ca: [...tls.rootCertificates, ...created.certs.keys()] });
    };
    Object.defineProperty(holder, KEY, { value: created, enumerable: false });
    s = created;
  }
  return s;
}

/** Trusts `certPem` in this process until the returned function is called (calls nest: trusted while one holds it). */
export function trustCertificateInProcess(certPem: string): () => void {
  const s = state();
  s.certs.set(certPem, (s.certs.get(certPem) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const n = (s.certs.get(certPem) ?? 1) - 1;
    if (n <= 0) s.certs.delete(certPem);
    else s.certs.set(certPem, n);
  };
}

/** Whether `certPem` is trusted in this process by trustCertificateInProcess. */
export function trustedInProcess(certPem: string): boolean {
  return state().certs.has(certPem);
}
