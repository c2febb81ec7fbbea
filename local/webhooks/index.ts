/**
 * The local stack's webhook receiver: the endpoint the stack registers for job events (EVENTS_WEBHOOKS `local=...`),
 * standing in for a customer's service. It checks every delivery as a careful receiver would and keeps what it got,
 * duplicates included, for tests and people to read:
 *
 *   POST /hooks        a delivery: the Standard Webhooks signature is verified with the specification's reference
 *                      library (standardwebhooks) and the body is read as a CloudEvent with the CNCF SDK (cloudevents),
 *                      which validates it against CloudEvents 1.0. 204 when both pass, 401 for a bad signature, 400 for
 *                      a body that is not a valid CloudEvent, or the status of an injected fault. Every request is kept.
 *   GET  /deliveries   every request received, in arrival order (JSON array of ReceivedDelivery)
 *   POST /faults       { "failNext": n, "status": 503 }: answer the next n deliveries with that status (fault injection)
 *
 * With a data folder the secret and the deliveries (deliveries.jsonl, appended) survive restarts of the stack.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { HTTP, type CloudEvent } from 'cloudevents';
import { Webhook } from 'standardwebhooks';

export interface ReceivedDelivery {
  receivedAt: string;
  /** webhook-id header. */
  id: string;
  timestamp: string;
  /** The status this receiver answered. */
  status: number;
  signatureValid: boolean;
  /** Whether the body is a valid CloudEvents 1.0 event (structured mode). */
  cloudEventValid: boolean;
  error?: string;
  contentType: string;
  /** The parsed body (when it was JSON). */
  event?: Record<string, unknown>;
}

export interface WebhookReceiver {
  /** The URL to register: http://127.0.0.1:<port>/hooks */
  url: string;
  port: number;
  /** The Standard Webhooks secret (whsec_...) deliveries are signed with. */
  secret: string;
  deliveries(): ReceivedDelivery[];
  stop(): Promise<void>;
}

export interface WebhookReceiverOptions {
  port?: number;
  /** Keeps the secret and the deliveries here. Default: in memory only, a new secret. */
  dataDir?: string;
  /** Called with each delivery's event this receiver accepted (204), duplicates included, as it arrives. */
  onEvent?: (event: Record<string, unknown>) => void;
}

function loadSecret(dataDir: string | undefined): string {
  const file = dataDir && path.join(dataDir, 'secret');
  if (file && existsSync(file)) return readFileSync(file, 'utf8').trim();
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  if (file) writeFileSync(file, secret + '\n', { mode: 0o600 });
  return secret;
}

function loadDeliveries(file: string | undefined): ReceivedDelivery[] {
  if (!file || !existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ReceivedDelivery);
}

export async function startWebhookReceiver(opts: WebhookReceiverOptions = {}): Promise<WebhookReceiver> {
  if (opts.dataDir) mkdirSync(opts.dataDir, { recursive: true });
  const secret = loadSecret(opts.dataDir);
  const verifier = new Webhook(secret);
  const logFile = opts.dataDir && path.join(opts.dataDir, 'deliveries.jsonl');
  const received = loadDeliveries(logFile);
  let faults = { failNext: 0, status: 503 };

  const receive = (req: http.IncomingMessage, body: string): ReceivedDelivery => {
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]));
    const d: ReceivedDelivery = {
      receivedAt: new Date().toISOString(),
      id: headers['webhook-id'] ?? '',
      timestamp: headers['webhook-timestamp'] ?? '',
      status: 204,
      signatureValid: false,
      cloudEventValid: false,
      contentType: headers['content-type'] ?? '',
    };
    try {
      d.event = JSON.parse(body) as Record<string, unknown>;
    } catch {
      // not JSON: cloudEventValid stays false
    }
    try {
      verifier.verify(body, headers);
      d.signatureValid = true;
    } catch (err) {
      d.status = 401;
      d.error = `signature: ${(err as Error).message}`;
    }
    try {
      const ev = HTTP.toEvent({ headers, body }) as CloudEvent<unknown> | CloudEvent<unknown>[];
      if (Array.isArray(ev)) throw new Error('a batch, not one event');
      d.cloudEventValid = ev.validate();
    } catch (err) {
      if (d.status === 204) d.status = 400;
      d.error = [d.error, `cloudevent: ${(err as Error).message}`].filter(Boolean).join('; ');
    }
    if (d.status === 204 && faults.failNext > 0) {
      faults = { ...faults, failNext: faults.failNext - 1 };
      d.status = faults.status;
      d.error = 'injected fault';
    }
    return d;
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', 'http://receiver');
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (req.method === 'POST' && (url.pathname === '/hooks' || url.pathname.startsWith('/hooks/'))) {
        const d = receive(req, body);
        received.push(d);
        if (logFile) appendFileSync(logFile, JSON.stringify(d) + '\n');
        res.writeHead(d.status).end();
        if (d.status === 204 && d.event && opts.onEvent) {
          try {
            opts.onEvent(d.event);
          } catch {
            // A watcher's failure is not the delivery's: it was accepted.
          }
        }
      } else if (req.method === 'GET' && url.pathname === '/deliveries') {
        json(200, received);
      } else if (req.method === 'POST' && url.pathname === '/faults') {
        try {
          const f = JSON.parse(body) as { failNext?: unknown; status?: unknown };
          faults = { failNext: Number(f.failNext ?? 0) || 0, status: Number(f.status ?? 503) || 503 };
          json(200, faults);
        } catch {
          json(400, { error: 'body must be JSON {"failNext": n, "status": s}' });
        }
      } else {
        json(404, { error: `no ${req.method} ${url.pathname}` });
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    secret,
    deliveries: () => [...received],
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The app settings that register a receiver as the webhook `local` (loopback http allowed for it alone). */
export function localWebhookSettings(receiver: Pick<WebhookReceiver, 'url' | 'secret'>): Record<string, string> {
  return {
    EVENTS_WEBHOOKS: `local=${receiver.url}`,
    EVENTS_WEBHOOK_SECRETS: `local=${receiver.secret}`,
    EVENTS_WEBHOOK_ALLOW_LOOPBACK: 'true',
    // The relay is the safety net (each transition's queue message delivers it at once): locally it runs every 15 s
    // (Azure: every minute), and retries start after 1 s and stay under 10 s. Each run is a timer execution and four
    // table requests; at every 5 s it was about a third of an idle stack's requests.
    EVENTS_RELAY_SCHEDULE: '*/15 * * * * *',
    EVENTS_RETRY_INITIAL_SECONDS: '1',
    EVENTS_RETRY_MAX_SECONDS: '10',
  };
}
