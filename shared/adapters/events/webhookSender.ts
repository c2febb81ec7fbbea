/**
 * POSTs one event to a webhook: CloudEvents structured mode (application/cloudevents+json), Standard Webhooks
 * signature headers, a bounded time, no redirects followed. The host name is resolved here and every address it
 * resolves to is checked (webhookAddress.ts) before the socket connects to one of them, so a name that points at an
 * internal address, or is switched to one after start-up (DNS rebinding), is refused at each delivery.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import * as http from 'node:http';
import * as https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { JobCloudEvent } from './cloudEvent';
import type { EventEndpoint, SendResult } from './endpoint';
import { addressAllowed, classifyAddress, webhookUrlProblem } from './webhookAddress';
import { signWebhook } from './webhookSignature';

export const WEBHOOK_TIMEOUT_MS = 10_000;
export const WEBHOOK_CONTENT_TYPE = 'application/cloudevents+json; charset=utf-8';

export interface WebhookEndpointOptions {
  name: string;
  url: string;
  secret: string;
  allowLoopback: boolean;
  timeoutMs?: number;
  /** Clock for the signature's timestamp (tests pin it). */
  now?: () => Date;
}

/** A lookup that answers only with allowed addresses and fails when the name resolves to any refused one. */
export function guardedLookup(allowLoopback: boolean): LookupFunction {
  return ((
    hostname: string,
    options: { all?: boolean; family?: number },
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    dnsLookup(hostname, { all: true, family: options?.family ?? 0 }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const refused = addresses.filter((a) => !addressAllowed(a.address, allowLoopback));
      if (addresses.length === 0 || refused.length > 0) {
        const e = new Error(
          `${hostname} resolves to ${refused.map((a) => a.address).join(', ') || 'nothing'}: refused (internal, private or reserved address)`,
        ) as NodeJS.ErrnoException;
        e.code = 'EADDRREFUSED';
        return callback(e, '', 0);
      }
      if (options?.all) return callback(null, addresses);
      return callback(null, addresses[0].address, addresses[0].family);
    });
  }) as LookupFunction;
}

export function webhookEndpoint(opts: WebhookEndpointOptions): EventEndpoint {
  const now = opts.now ?? (() => new Date());
  const timeoutMs = opts.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
  return {
    name: `webhook-${opts.name}`,
    async send(event: JobCloudEvent): Promise<SendResult> {
      const problem = webhookUrlProblem(opts.url, opts.allowLoopback);
      if (problem) return { ok: false, error: `webhook URL refused: ${problem}` };
      const url = new URL(opts.url);
      const literal = classifyAddress(url.hostname);
      if (literal !== undefined && !addressAllowed(url.hostname, opts.allowLoopback)) return { ok: false, error: `address ${url.hostname} refused` };
      const body = JSON.stringify(event);
      const headers = {
        'content-type': WEBHOOK_CONTENT_TYPE,
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': 'hpc-jobs-events/1',
        ...signWebhook(opts.secret, event.id, body, now()),
      };
      return post(url, body, headers, timeoutMs, guardedLookup(opts.allowLoopback));
    },
  };
}

function post(url: URL, body: string, headers: Record<string, string>, timeoutMs: number, lookup: LookupFunction): Promise<SendResult> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (r: SendResult) => {
      if (!settled) {
        settled = true;
        resolve(r);
      }
    };
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.request(url, { method: 'POST', headers, lookup, timeout: timeoutMs, agent: false }, (res) => {
      const status = res.statusCode ?? 0;
      // Read (and drop) at most a few KB of the answer, so the socket is released; the body is not ours to keep.
      let seen = 0;
      res.on('data', (c: Buffer) => {
        seen += c.length;
        if (seen > 4096) res.destroy();
      });
      res.on('close', () =>
        done(
          status >= 200 && status < 300
            ? { ok: true, status }
            : { ok: false, status, error: `HTTP ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}` },
        ),
      );
      res.on('error', () => undefined);
    });
    const timer = setTimeout(() => {
      req.destroy(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err: NodeJS.ErrnoException) =>
      done({ ok: false, error: err.code && !err.message.includes(err.code) ? `${err.code}: ${err.message}` : err.message }),
    );
    req.on('close', () => clearTimeout(timer));
    req.end(body);
  });
}
