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
  /** Contexts for clients that set nothing but (at most) the cipher list: by cipher list. Emptied when certs change. */
  shared: Map<string, tls.SecureContext>;
}

/**
 * createSecureContext's options that shape the context (Node 20's lib/internal/tls/secure-context.js). A client that
 * sets none of them (the SDKs' agents, fetch) gets one shared context: building one with Node's ~140 root
 * certificates costs tens of milliseconds of the event loop, which every new connection would otherwise pay.
 * `ciphers` is left out: tls.connect always sets it (to tls.DEFAULT_CIPHERS unless given), so it is part of the key.
 */
const CONTEXT_OPTIONS = [
  'ca',
  'cert',
  'key',
  'pfx',
  'passphrase',
  'crl',
  'sigalgs',
  'dhparam',
  'ecdhCurve',
  'honorCipherOrder',
  'minVersion',
  'maxVersion',
  'secureOptions',
  'secureProtocol',
  'sessionIdContext',
  'sessionTimeout',
  'ticketKeys',
  'privateKeyEngine',
  'privateKeyIdentifier',
  'clientCertEngine',
  'allowPartialTrustChain',
] as const;

// One state per process, whatever number of copies of this module are loaded (jest loads one per test file, each in
// its own global scope, which it cleans afterwards): kept on the tls module object itself, which the process shares.
const KEY = Symbol.for('hpc-local-stack.trusted-certificates');

function state(): TrustState {
  const holder = tls as unknown as Record<symbol, TrustState | undefined>;
  let s = holder[KEY];
  if (!s) {
    const created: TrustState = { certs: new Map(), original: tls.createSecureContext, shared: new Map() };
    (tls as { createSecureContext: typeof tls.createSecureContext }).createSecureContext = function createSecureContext(
      options?: tls.SecureContextOptions,
    ): tls.SecureContext {
      if (created.certs.size === 0 || (options && options.ca !== undefined)) return created.original(options);
      // The CA list (Node's ~140 roots and ours) is built only for a context that is created: every new connection
      // comes here, and most take the shared context.
      const ca = (): string[] => [...tls.rootCertificates, ...created.certs.keys()];
      const o = (options ?? {}) as Record<string, unknown>;
      if (CONTEXT_OPTIONS.some((k) => o[k] !== undefined)) return created.original({ ...options, ca: ca() });
      const ciphers = typeof o.ciphers === 'string' ? o.ciphers : '';
      let context = created.shared.get(ciphers);
      if (!context) {
        context = created.original({ ca: ca(), ...(ciphers ? { ciphers } : {}) });
        created.shared.set(ciphers, context);
      }
      return context;
    };
    Object.defineProperty(holder, KEY, { value: created, enumerable: false });
    s = created;
  }
  return s;
}

/** Trusts `certPem` in this process until the returned function is called (calls nest: trusted while one holds it). */
export function trustCertificateInProcess(certPem: string): () => void {
  const s = state();
  if (!s.certs.has(certPem)) s.shared.clear();
  s.certs.set(certPem, (s.certs.get(certPem) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const n = (s.certs.get(certPem) ?? 1) - 1;
    if (n > 0) {
      s.certs.set(certPem, n);
      return;
    }
    s.certs.delete(certPem);
    s.shared.clear();
  };
}

/** Whether `certPem` is trusted in this process by trustCertificateInProcess. */
export function trustedInProcess(certPem: string): boolean {
  return state().certs.has(certPem);
}
