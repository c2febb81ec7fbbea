/**
 * The node agent's own transfers: files read or written with a pool identity (one GET or one Put Blob with
 * `Authorization: Bearer <identity token>` and a service version, as Azure Storage takes Entra tokens, https only)
 * and https resource files. Plain node:http(s) so the agent trusts the public roots plus the certificate authorities
 * of the node image (the emulator's `trustedCertificates`), as a Batch node trusts its OS's store; SAS container
 * transfers keep using the Storage SDK.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { createSecureContext, rootCertificates } from 'node:tls';

export const STORAGE_VERSION = '2021-08-06';

/**
 * The User-Agent of the emulated node agent's storage transfers (output file uploads, resource files), as a Batch
 * node's agent has its own: a count of requests (local/testing/callCounter.ts) tells the nodes' transfers from the
 * control plane's requests.
 */
export const NODE_AGENT_USER_AGENT = 'BatchNodeAgent-emulated';

export interface AgentHttpResult {
  status: number;
  body: Buffer;
}

/**
 * One https agent per set of extra CAs, holding one TLS context built from them: given as a request's `ca`, the ~140
 * public roots and the extra ones made a new context for every connection (tens of milliseconds each) and were
 * joined into the connection pool's key on every request. An agent per set keeps a connection verified against one
 * set from serving a request that trusts another.
 */
const agentsByTrust = new Map<string, https.Agent>();

function agentTrusting(trustedCertificates: string[]): https.Agent {
  const key = trustedCertificates.join('\n');
  let agent = agentsByTrust.get(key);
  if (!agent) {
    // No keep-alive: a node's requests are few and far apart, and a reused idle socket that the storage server closes
    // at its keep-alive timeout just as a request goes out fails that request with "socket hang up" (a resource file
    // download failed so in a whole run). What the agent saves is the TLS context, built once per set.
    agent = new https.Agent({ keepAlive: false, secureContext: createSecureContext({ ca: [...rootCertificates, ...trustedCertificates] }) });
    agentsByTrust.set(key, agent);
  }
  return agent;
}

/** One request; `token` (a storage token) adds the bearer and the service version; `trustedCertificates` the node's extra CAs. */
export function agentRequest(
  method: 'GET' | 'PUT',
  url: string,
  token: string | undefined,
  trustedCertificates: string[] | undefined,
  body?: Buffer,
  headers: Record<string, string> = {},
): Promise<AgentHttpResult> {
  const u = new URL(url);
  const mod = u.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(
      u,
      {
        method,
        headers: {
          ...(token ? { Authorization: `Bearer ${token}`, 'x-ms-version': STORAGE_VERSION, 'x-ms-date': new Date().toUTCString() } : {}),
          ...(body ? { 'Content-Length': String(body.length) } : {}),
          'User-Agent': NODE_AGENT_USER_AGENT,
          ...headers,
        },
        ...(u.protocol === 'https:' && trustedCertificates?.length ? { agent: agentTrusting(trustedCertificates) } : {}),
        timeout: 60_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from ${u.host} within 60 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** Storage's error code from an error answer (`<Code>…</Code>`), for messages. */
export function storageErrorCode(body: Buffer): string {
  return /<Code>([^<]+)<\/Code>/.exec(body.toString('utf8'))?.[1] ?? '';
}
