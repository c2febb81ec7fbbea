/**
 * Job events end to end on the supervised stack (`npm start`): the stack's webhook receiver (local/webhooks) gets
 * every transition of several jobs at least once, with stable ids (`<jobId>:<seq>`), first arrivals in seq order per
 * job, each signature verified (Standard Webhooks reference library) and each body a valid CloudEvent (CNCF SDK),
 * none missing, across a SIGKILL of the Functions host in the middle of the jobs. The jobs are cheap: one native job
 * that runs, one that fails at provisioning (its pool does not exist), one cancelled after the restart (the cancel
 * path). Every delivery is recorded in EventAttempts. Fails on the old code (no events at all), and fails if
 * anything is lost across the kill (a missing id), reordered (first arrivals out of seq order) or unsigned.
 */
import { stringify } from 'yaml';
import { getJobView, submitSpec, type StackClient } from '../../local/jobRunner';
import type { ReceivedDelivery } from '../../local/webhooks';
import { ATTEMPTS_TABLE, CURSORS_TABLE, DeliveryStore } from '../../shared/adapters/events/deliveryStore';
import { StackFixture, waitGone } from '../stack/supervisedStack';

const fx = new StackFixture('events');

beforeAll(() => fx.setUp(), 180_000);
afterAll(() => fx.tearDown(), 180_000);

function nativeJob(id: string, command: string): string {
  return stringify({
    id,
    name: id,
    tags: { suite: 'events' },
    pool: { vmSize: 'Standard_D2s_v5', nodes: 1 },
    container: { runtime: 'none' },
    data: { inputs: [] },
    mpi: { runtime: 'openmpi', processesPerNode: 1, fabric: 'tcp', options: ['--mca', 'btl_tcp_if_include', 'lo'], command },
    limits: { maxWallClock: 'PT10M' },
  });
}

function missingPoolJob(id: string): string {
  return stringify({ id, name: id, pool: { poolId: `does-not-exist-${id}`, nodes: 1 }, mpi: { runtime: 'openmpi', command: 'true' } });
}

interface TimelineEntry {
  kind: string;
  seq?: number;
  to?: string;
  from?: string | null;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function state(client: StackClient, id: string): Promise<string | undefined> {
  return (await getJobView(client, id).catch(() => undefined))?.state;
}

async function deliveries(receiverUrl: string): Promise<ReceivedDelivery[]> {
  const res = await fetch(`${new URL(receiverUrl).origin}/deliveries`);
  return (await res.json()) as ReceivedDelivery[];
}

test('every transition of every job reaches the webhook, signed, in seq order, none lost across a SIGKILL of the host', async () => {
  const s = fx.current;
  let client = s.client();
  const before = s.runtime();
  const receiver = before.webhooks.url;
  const jobs = { ran: 'ev-runs', failed: 'ev-no-pool', cancelled: 'ev-cancelled' };
  await submitSpec(client, nativeJob(jobs.ran, 'sleep 3; echo done'));
  await submitSpec(client, missingPoolJob(jobs.failed));
  await submitSpec(client, nativeJob(jobs.cancelled, 'sleep 120'));

  // Kill the host while the jobs are between stages: transitions are being written and published.
  await until('a job under way', async () => ((await state(client, jobs.ran)) ?? 'Submitted') !== 'Submitted' || undefined, 120_000);
  process.kill(before.host.pid, 'SIGKILL');
  await waitGone(before.host, 10_000);
  await s.waitForOutput(/the Functions host is back \(pid \d+\)/, 120_000);
  client = s.client();

  // The cancel path, on the restarted host.
  await until(`${jobs.cancelled} running`, async () => (await state(client, jobs.cancelled)) === 'Running' || undefined, 180_000);
  const cancel = await fetch(`${client.baseUrl}/api/jobs/${jobs.cancelled}`, {
    method: 'DELETE',
    headers: { 'x-functions-key': client.host.keys.functionKey },
  });
  expect(cancel.status).toBe(202);

  const ends: Record<string, string> = { [jobs.ran]: 'Succeeded', [jobs.failed]: 'Failed', [jobs.cancelled]: 'Cancelled' };
  const timelines = new Map<string, TimelineEntry[]>();
  for (const id of Object.values(jobs)) {
    const view = await until(
      `${id} finished`,
      async () => {
        const v = await getJobView(client, id);
        return ['Succeeded', 'Failed', 'Cancelled'].includes(v.state) ? v : undefined;
      },
      240_000,
    );
    expect({ id, state: view.state }).toEqual({ id, state: ends[id] });
    timelines.set(
      id,
      ((view.timeline ?? []) as TimelineEntry[]).filter((e) => e.kind === 'transition'),
    );
  }

  // Wait until every transition has arrived (the relay finds what the kill interrupted; a lease held by the killed
  // host runs out first), then check what arrived.
  const expectedIds = [...timelines].flatMap(([id, t]) => t.map((e) => `${id}:${e.seq}`));
  expect(expectedIds.length).toBeGreaterThanOrEqual(3 * 4);
  const got = await until(
    'every transition delivered',
    async () => {
      const all = await deliveries(receiver);
      const ok = new Set(all.filter((d) => d.status === 204).map((d) => d.id));
      return expectedIds.every((id) => ok.has(id)) ? all : undefined;
    },
    180_000,
  );

  const ours = got.filter((d) => Object.values(jobs).some((j) => d.id.startsWith(`${j}:`)));
  for (const d of ours)
    expect({ id: d.id, signatureValid: d.signatureValid, cloudEventValid: d.cloudEventValid }).toEqual({
      id: d.id,
      signatureValid: true,
      cloudEventValid: true,
    });
  for (const [id, timeline] of timelines) {
    const mine = ours.filter((d) => d.id.startsWith(`${id}:`));
    // No event the job does not have, and each id always carries the same transition (stable ids).
    const bySeq = new Map(timeline.map((e) => [e.seq as number, e]));
    for (const d of mine) {
      const data = (d.event as { data: { seq: number; state: string; previousState: string | null; jobId: string } }).data;
      const t = bySeq.get(data.seq);
      expect({ id: d.id, state: data.state, previousState: data.previousState, jobId: data.jobId }).toEqual({
        id: `${id}:${data.seq}`,
        state: t?.to,
        previousState: t?.from ?? null,
        jobId: id,
      });
    }
    // First arrivals in seq order, none missing.
    const firstSeqs: number[] = [];
    for (const d of mine) {
      const seq = Number(d.id.split(':')[1]);
      if (!firstSeqs.includes(seq)) firstSeqs.push(seq);
    }
    expect({ id, firstSeqs }).toEqual({ id, firstSeqs: timeline.map((e) => e.seq) });
    expect(timeline[timeline.length - 1].to).toBe(ends[id]);
  }

  // Every delivery is on record: each seq of each job has a delivered attempt for the local webhook.
  const store = new DeliveryStore(client.operator.table(CURSORS_TABLE), client.operator.table(ATTEMPTS_TABLE));
  for (const [id, timeline] of timelines) {
    const attempts = await store.attemptsOf(id);
    const delivered = new Set(attempts.filter((a) => a.endpoint === 'webhook-local' && a.outcome === 'delivered').map((a) => a.seq));
    expect({ id, delivered: [...delivered].sort((a, b) => a - b) }).toEqual({ id, delivered: timeline.map((e) => e.seq) });
  }
  console.log(`events: ${expectedIds.length} transitions of ${timelines.size} jobs, ${ours.length} deliveries (${ours.length - expectedIds.length} repeats)`);
}, 600_000);
