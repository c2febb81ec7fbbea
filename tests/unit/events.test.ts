/**
 * Job events, the pure parts: the CloudEvent of a transition (validated by the CNCF SDK, no spec or output in it), the
 * Standard Webhooks signature (the specification's own example, and an independent HMAC), the delivery cursor and
 * retry arithmetic and the relay watermark (properties), which webhook addresses are refused, and the EVENTS_*
 * settings.
 */
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { CloudEvent } from 'cloudevents';
import { Webhook } from 'standardwebhooks';
import { eventId, jobStateChangedEvent, JOB_STATE_CHANGED_TYPE, MAX_REASON_CHARS } from '../../shared/adapters/events/cloudEvent';
import {
  afterAttempt,
  INITIAL_CURSOR,
  nextWatermark,
  pendingTransitions,
  retryDelayMs,
  type CursorState,
  type RetryPolicy,
} from '../../shared/adapters/events/cursor';
import { signWebhook } from '../../shared/adapters/events/webhookSignature';
import { addressAllowed, classifyAddress, webhookUrlProblem } from '../../shared/adapters/events/webhookAddress';
import { loadConfig } from '../../shared/adapters/config';
import { JOB_STATES, type JobEvent } from '../../shared/adapters/state';

const job = { id: 'cfd-run-7', name: 'cfd run 7', owner: 'tenant-1/user-2' };
const t = (seq: number, from: JobEvent['from'], to: JobEvent['to'], reason = `to ${to}`): JobEvent => ({
  jobId: job.id,
  at: new Date(Date.UTC(2025, 0, 1, 0, 0, seq)).toISOString(),
  kind: 'transition',
  seq,
  from,
  to,
  reason,
});

describe('the CloudEvent of a transition', () => {
  const ev = jobStateChangedEvent(job, t(3, 'Provisioning', 'PullingImages', 'pool ready'), 'https://func-hpc.azurewebsites.net/');

  it('carries the job, both states, the reason, seq and time, with a stable id and the job URL as source', () => {
    expect(ev).toEqual({
      specversion: '1.0',
      id: 'cfd-run-7:3',
      source: 'https://func-hpc.azurewebsites.net/api/jobs/cfd-run-7',
      type: JOB_STATE_CHANGED_TYPE,
      subject: 'PullingImages',
      time: '2025-01-01T00:00:03.000Z',
      datacontenttype: 'application/json',
      sequence: '0000000003',
      data: {
        jobId: 'cfd-run-7',
        name: 'cfd run 7',
        owner: 'tenant-1/user-2',
        state: 'PullingImages',
        previousState: 'Provisioning',
        reason: 'pool ready',
        seq: 3,
        time: '2025-01-01T00:00:03.000Z',
      },
    });
    expect(jobStateChangedEvent(job, t(3, 'Provisioning', 'PullingImages', 'pool ready'), 'https://func-hpc.azurewebsites.net')).toEqual(ev);
    expect(eventId('a', 12)).toBe('a:12');
  });

  it('is a valid CloudEvents 1.0 event for the CNCF SDK (strict), for every state and reason', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1e6 }), fc.constantFrom(...JOB_STATES), fc.string(), (seq, to, reason) => {
        const e = jobStateChangedEvent(job, { ...t(1, null, to, reason), seq }, 'https://x.example');
        expect(new CloudEvent({ ...e }, true).validate()).toBe(true);
        expect(e.data.reason.length).toBeLessThanOrEqual(MAX_REASON_CHARS);
        // "sequence" orders as a string as it does as a number.
        expect(e.sequence).toHaveLength(10);
      }),
    );
    // Without a configured origin the source is a relative URI reference, still valid.
    expect(new CloudEvent({ ...jobStateChangedEvent(job, t(1, null, 'Submitted')) }, true).validate()).toBe(true);
  });

  it('has the creation with previousState null, and never a note', () => {
    expect(jobStateChangedEvent(job, t(1, null, 'Submitted')).data.previousState).toBeNull();
    expect(() => jobStateChangedEvent(job, { jobId: job.id, at: '2025-01-01T00:00:00Z', kind: 'note', reason: 'pulled 3/4' })).toThrow(/only transitions/);
    expect(() => jobStateChangedEvent(job, { ...t(1, null, 'Submitted'), jobId: 'other' })).toThrow(/other/);
  });

  it('carries nothing of the spec, the result or the output: only the listed fields', () => {
    const full = { ...job, spec: { env: { TOKEN: 'secret' } }, result: { masterOutputTail: 'tail' }, tags: { a: 'b' } };
    const body = JSON.stringify(jobStateChangedEvent(full, t(2, 'Submitted', 'Provisioning')));
    expect(body).not.toMatch(/secret|TOKEN|tail|tags/);
    expect(Object.keys(jobStateChangedEvent(full, t(2, 'Submitted', 'Provisioning')).data).sort()).toEqual([
      'jobId',
      'name',
      'owner',
      'previousState',
      'reason',
      'seq',
      'state',
      'time',
    ]);
  });
});

describe('the Standard Webhooks signature', () => {
  it("matches the specification's example", () => {
    // standard-webhooks spec example: secret, msg id, timestamp and payload → signature.
    const h = signWebhook('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'msg_p5jXN8AQM9LWM0D4loKWxJek', '{"test": 2432232314}', new Date(1614265330_000));
    expect(h).toEqual({
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    });
  });

  it('is HMAC-SHA256 of "<id>.<seconds>.<body>" with the secret\'s bytes, and a verifier rejects any change', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 24, maxLength: 64 }),
        fc.string({ minLength: 1 }),
        fc.string(),
        fc.integer({ min: 0, max: 999 }),
        (key, id, body, ms) => {
          const secret = `whsec_${Buffer.from(key).toString('base64')}`;
          const at = new Date(Date.now() - ms);
          const h = signWebhook(secret, id, body, at);
          const seconds = Math.floor(at.getTime() / 1000);
          expect(h['webhook-timestamp']).toBe(String(seconds));
          expect(h['webhook-signature']).toBe(`v1,${createHmac('sha256', Buffer.from(key)).update(`${id}.${seconds}.${body}`).digest('base64')}`);
          const wh = new Webhook(secret);
          expect(() => wh.verify(body, { ...h }, { jsonParse: false })).not.toThrow();
          expect(() => wh.verify(`${body} `, { ...h }, { jsonParse: false })).toThrow(/signature/);
          expect(() => wh.verify(body, { ...h, 'webhook-id': `${id}x` }, { jsonParse: false })).toThrow(/signature/);
        },
      ),
      { numRuns: 50 },
    );
  });
});

describe('the delivery cursor', () => {
  /** A timeline of n transitions, some maybe lost from the table (kept only on the row when it is the last). */
  const timelineArb = fc.integer({ min: 0, max: 30 }).chain((n) =>
    fc.record({
      n: fc.constant(n),
      lost: fc.subarray(Array.from({ length: n }, (_, i) => i + 1)),
      delivered: fc.integer({ min: 0, max: n + 2 }),
      notes: fc.integer({ min: 0, max: 3 }),
    }),
  );

  it('lists seq delivered+1 … eventSeq in order, each once, from the timeline or the row, missing only when in neither', () => {
    fc.assert(
      fc.property(timelineArb, ({ n, lost, delivered, notes }) => {
        const all = Array.from({ length: n }, (_, i) => t(i + 1, i === 0 ? null : 'Submitted', 'Provisioning'));
        const timeline: JobEvent[] = [
          ...all.filter((e) => !lost.includes(e.seq as number)).reverse(), // any order, with duplicates and notes
          ...all.filter((e) => !lost.includes(e.seq as number)).slice(0, 2),
          ...Array.from({ length: notes }, (): JobEvent => ({ jobId: job.id, at: '2025-01-01T00:00:00Z', kind: 'note', reason: 'n' })),
        ];
        const row = { eventSeq: n, ...(n > 0 ? { lastEvent: all[n - 1] } : {}) };
        const pending = pendingTransitions(timeline, row, delivered);
        expect(pending.map((p) => p.seq)).toEqual(Array.from({ length: Math.max(0, n - delivered) }, (_, i) => delivered + i + 1));
        for (const p of pending) {
          const shouldMiss = lost.includes(p.seq) && p.seq !== n;
          expect('missing' in p).toBe(shouldMiss);
          if (!('missing' in p)) expect(p.event).toEqual(all[p.seq - 1]);
        }
      }),
    );
  });

  const policyArb = fc.record({
    maxAttempts: fc.integer({ min: 1, max: 30 }),
    initialMs: fc.integer({ min: 1, max: 10_000 }),
    maxMs: fc.integer({ min: 10_000, max: 7_200_000 }),
  });

  it('moves on by exactly one event when it is delivered; retries on a growing, capped delay; gives up after maxAttempts tries', () => {
    fc.assert(
      fc.property(policyArb, fc.array(fc.boolean(), { maxLength: 80 }), (policy: RetryPolicy, outcomes) => {
        let c: CursorState = INITIAL_CURSOR;
        let failuresOfHead = 0;
        let lastDelay = 0;
        for (const ok of outcomes) {
          const head = c.delivered + 1;
          const v = afterAttempt(c, ok, 'HTTP 503', new Date(0), policy);
          if (ok) {
            expect(v.outcome).toBe('delivered');
            expect(v.cursor).toEqual({ delivered: head, attempt: 0 });
          } else if (failuresOfHead + 1 >= policy.maxAttempts) {
            expect(v.outcome).toBe('abandoned');
            expect(v.cursor.delivered).toBe(head);
          } else {
            expect(v.outcome).toBe('retry');
            const delay = (v as { delayMs: number }).delayMs;
            expect(v.cursor.delivered).toBe(head - 1);
            expect(delay).toBeLessThanOrEqual(policy.maxMs);
            expect(delay).toBeGreaterThanOrEqual(Math.min(policy.initialMs, policy.maxMs));
            if (failuresOfHead > 0) expect(delay).toBeGreaterThanOrEqual(lastDelay);
            expect(v.cursor.nextAttemptAt).toBe(new Date(delay).toISOString());
            lastDelay = delay;
          }
          failuresOfHead = v.outcome === 'retry' ? failuresOfHead + 1 : 0;
          c = v.cursor;
        }
      }),
    );
    expect([1, 2, 3, 4, 20].map((f) => retryDelayMs(f, { maxAttempts: 24, initialMs: 5_000, maxMs: 7_200_000 }))).toEqual([
      5_000, 10_000, 20_000, 40_000, 7_200_000,
    ]);
  });

  it('the relay watermark stays behind now - margin and behind every job it could not settle, and never goes back otherwise', () => {
    const iso = fc.integer({ min: Date.UTC(2024, 0, 1), max: Date.UTC(2026, 0, 1) }).map((ms) => new Date(ms).toISOString());
    fc.assert(
      fc.property(
        iso,
        fc.integer({ min: 0, max: 3_600_000 }),
        fc.array(iso, { maxLength: 5 }),
        fc.option(iso, { nil: undefined }),
        (nowIso, margin, unsettled, previous) => {
          const now = new Date(nowIso);
          const w = Date.parse(nextWatermark(now, margin, unsettled, previous));
          if (unsettled.length > 0 || previous === undefined || Date.parse(previous) <= now.getTime() - margin)
            expect(w).toBeLessThanOrEqual(now.getTime() - margin);
          for (const u of unsettled) expect(w).toBeLessThan(Date.parse(u));
          if (unsettled.length === 0 && previous !== undefined) expect(w).toBeGreaterThanOrEqual(Date.parse(previous));
        },
      ),
    );
  });
});

describe('webhook addresses', () => {
  const v4 = (a: number, b: number, c: number, d: number) => `${a}.${b}.${c}.${d}`;
  const octet = fc.integer({ min: 0, max: 255 });

  it('refuses the metadata service, link-local, private, shared and reserved IPv4 ranges in every spelling', () => {
    const refused = fc.oneof(
      fc.tuple(octet, octet).map(([c, d]) => v4(169, 254, c, d)),
      fc.tuple(octet, octet, octet).map(([b, c, d]) => v4(10, b, c, d)),
      fc.tuple(fc.integer({ min: 16, max: 31 }), octet, octet).map(([b, c, d]) => v4(172, b, c, d)),
      fc.tuple(octet, octet).map(([c, d]) => v4(192, 168, c, d)),
      fc.tuple(fc.integer({ min: 64, max: 127 }), octet, octet).map(([b, c, d]) => v4(100, b, c, d)),
      fc.tuple(octet, octet, octet).map(([b, c, d]) => v4(0, b, c, d)),
      fc.tuple(fc.integer({ min: 224, max: 255 }), octet, octet, octet).map(([a, b, c, d]) => v4(a, b, c, d)),
      fc.constant('168.63.129.16'),
    );
    fc.assert(
      fc.property(refused, fc.boolean(), (ip, loopbackAllowed) => {
        const n = ip.split('.').reduce((acc, p) => acc * 256 + Number(p), 0);
        const hex = n.toString(16).padStart(8, '0');
        for (const host of [ip, String(n), `0x${hex}`, `[::ffff:${ip}]`, `[::ffff:${hex.slice(0, 4)}:${hex.slice(4)}]`, `[64:ff9b::${ip}]`]) {
          expect({ host, problem: webhookUrlProblem(`https://${host}/hook`, loopbackAllowed) }).toEqual({
            host,
            problem: expect.stringMatching(/internal, private or reserved|loopback/),
          });
        }
        expect(addressAllowed(ip, loopbackAllowed)).toBe(false);
        expect(addressAllowed(`::ffff:${ip}`, loopbackAllowed)).toBe(false);
      }),
    );
    expect(webhookUrlProblem('https://[fd00:ec2::254]/', false)).toMatch(/internal/);
    expect(webhookUrlProblem('https://[fe80::1]/', false)).toMatch(/internal/);
    expect(webhookUrlProblem('https://metadata.google.internal/computeMetadata', false)).toMatch(/platform-internal/);
  });

  it('allows public addresses over https only, loopback only when the deployment allows it, never credentials in the URL', () => {
    expect(webhookUrlProblem('https://hooks.example.com/jobs', false)).toBeUndefined();
    expect(webhookUrlProblem('https://20.50.2.1/jobs', false)).toBeUndefined();
    expect(webhookUrlProblem('http://hooks.example.com/jobs', false)).toMatch(/https/);
    expect(webhookUrlProblem('http://hooks.example.com/jobs', true)).toMatch(/https/);
    expect(webhookUrlProblem('http://127.0.0.1:9000/hooks', false)).toMatch(/https/);
    expect(webhookUrlProblem('https://127.0.0.1:9000/hooks', false)).toMatch(/loopback/);
    expect(webhookUrlProblem('https://localhost/hooks', false)).toMatch(/loopback/);
    expect(webhookUrlProblem('http://127.0.0.1:9000/hooks', true)).toBeUndefined();
    expect(webhookUrlProblem('http://[::1]:9000/hooks', true)).toBeUndefined();
    expect(webhookUrlProblem('http://localhost:9000/hooks', true)).toBeUndefined();
    expect(webhookUrlProblem('https://user:pw@hooks.example.com/', false)).toMatch(/credentials/);
    expect(webhookUrlProblem('ftp://hooks.example.com/', false)).toMatch(/https/);
    expect(webhookUrlProblem('not a url', false)).toMatch(/not a URL/);
    expect(classifyAddress('8.8.8.8')).toBe('public');
    expect(classifyAddress('2606:4700::1111')).toBe('public');
    expect(classifyAddress('::1')).toBe('loopback');
    expect(classifyAddress('hooks.example.com')).toBeUndefined();
  });
});

describe('EVENTS_* settings', () => {
  const base = {
    BATCH_ACCOUNT_URL: 'https://acct.westeurope.batch.azure.com',
    BATCH_ACCOUNT_NAME: 'acct',
    AzureWebJobsStorage__accountName: 'hoststore',
    STAGING_ACCOUNTS: 'stage1',
  };
  const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

  it('no endpoint by default; defaults for retries and the relay', () => {
    const ev = loadConfig(base).events;
    expect(ev).toEqual({ webhooks: [], allowLoopback: false, maxAttempts: 24, retryInitialMs: 5_000, retryMaxMs: 7_200_000, relaySchedule: '0 */1 * * * *' });
    expect(loadConfig({ ...base, WEBSITE_HOSTNAME: 'func-hpc.azurewebsites.net' }).events.sourceBaseUrl).toBe('https://func-hpc.azurewebsites.net');
  });

  it('reads webhooks with their secrets, the topic and the source', () => {
    const ev = loadConfig({
      ...base,
      EVENTS_WEBHOOKS: 'ops=https://hooks.example.com/a, audit=https://audit.example.com/b',
      EVENTS_WEBHOOK_SECRETS: `ops=${secret},audit=${secret}`,
      EVENTS_TOPIC_ENDPOINT: 'https://jobs.westeurope-1.eventgrid.azure.net/api/events',
      EVENTS_SOURCE_URL: 'https://api.example.com/',
    }).events;
    expect(ev.webhooks).toEqual([
      { name: 'ops', url: 'https://hooks.example.com/a', secret },
      { name: 'audit', url: 'https://audit.example.com/b', secret },
    ]);
    expect(ev.topicEndpoint).toBe('https://jobs.westeurope-1.eventgrid.azure.net/api/events');
    expect(ev.sourceBaseUrl).toBe('https://api.example.com');
  });

  it.each([
    [{ EVENTS_WEBHOOKS: 'ops=https://hooks.example.com/a' }, /EVENTS_WEBHOOK_SECRETS: no secret for webhook "ops"/],
    [{ EVENTS_WEBHOOKS: 'ops=https://hooks.example.com/a', EVENTS_WEBHOOK_SECRETS: 'ops=whsec_c2hvcnQ=' }, /secret of "ops" must be "whsec_"/],
    [{ EVENTS_WEBHOOKS: 'ops=https://hooks.example.com/a', EVENTS_WEBHOOK_SECRETS: `ops=${secret},x=${secret}` }, /"x" is not a webhook/],
    [{ EVENTS_WEBHOOKS: 'ops=http://169.254.169.254/latest', EVENTS_WEBHOOK_SECRETS: `ops=${secret}` }, /EVENTS_WEBHOOKS: "ops": must be an https URL/],
    [{ EVENTS_WEBHOOKS: 'ops=https://169.254.169.254/latest', EVENTS_WEBHOOK_SECRETS: `ops=${secret}` }, /internal, private or reserved/],
    [{ EVENTS_WEBHOOKS: 'ops=http://127.0.0.1:8080/', EVENTS_WEBHOOK_SECRETS: `ops=${secret}` }, /must be an https URL/],
    [{ EVENTS_WEBHOOKS: 'Ops=https://hooks.example.com/a', EVENTS_WEBHOOK_SECRETS: `Ops=${secret}` }, /EVENTS_WEBHOOKS: entry 1 must be "name=value"/],
    [
      { EVENTS_WEBHOOKS: 'ops=https://hooks.example.com/a', EVENTS_WEBHOOK_SECRETS: '@Microsoft.KeyVault(VaultName=kv;SecretName=hooks)' },
      /EVENTS_WEBHOOK_SECRETS: an unresolved Key Vault reference/,
    ],
    [{ EVENTS_TOPIC_ENDPOINT: 'http://jobs.eventgrid.azure.net/api/events' }, /EVENTS_TOPIC_ENDPOINT: must be the https endpoint/],
    [{ EVENTS_SOURCE_URL: 'https://api.example.com/api' }, /EVENTS_SOURCE_URL: must be an http\(s\) origin/],
    [{ EVENTS_RETRY_INITIAL_SECONDS: '100', EVENTS_RETRY_MAX_SECONDS: '10' }, /EVENTS_RETRY_INITIAL_SECONDS \(100\) must not exceed/],
    [{ EVENTS_MAX_ATTEMPTS: '0' }, /EVENTS_MAX_ATTEMPTS: must be an integer in \[1, 100\]/],
    [{ EVENTS_WEBHOOK_ALLOW_LOOPBACK: 'yes' }, /EVENTS_WEBHOOK_ALLOW_LOOPBACK: must be "true" or "false"/],
  ])('refuses %j', (env, message) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(message);
  });

  it('allows a loopback http webhook only with EVENTS_WEBHOOK_ALLOW_LOOPBACK=true (the local stack)', () => {
    const ev = loadConfig({
      ...base,
      EVENTS_WEBHOOKS: 'local=http://127.0.0.1:8080/hooks',
      EVENTS_WEBHOOK_SECRETS: `local=${secret}`,
      EVENTS_WEBHOOK_ALLOW_LOOPBACK: 'true',
    }).events;
    expect(ev.webhooks.map((w) => w.url)).toEqual(['http://127.0.0.1:8080/hooks']);
  });
});
