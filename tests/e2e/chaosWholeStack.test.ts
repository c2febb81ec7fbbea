/**
 * Chaos, whole stack: `npm start` (the supervised stack: Azurite, the Batch emulator, the registry and the Functions
 * host, over one data folder) is SIGKILLed as a whole right after a burst of submissions through both doors (HTTP and
 * the job-submissions queue), then started again on the same folder. Azurite saves its stores every 5 s and loses
 * what changed since (docs/local-stack.md, "Azurite's own limits"), so:
 *  - jobs accepted (202) more than that window before the kill must be there and end Succeeded;
 *  - jobs of the last burst must end Succeeded, or be missing as a whole (lost with Azurite's unsaved writes);
 *  - none may be stuck in a running state. A row whose orchestration start was lost is re-driven by the first sweep
 *    after the start (docs/operations.md, "Recovery after an unclean stop").
 */
import { stringify } from 'yaml';
import type { JobViewLite, StackClient } from '../../local/jobRunner';
import { isTerminal } from '../../shared/core/state/states';
import { StackFixture } from '../stack/supervisedStack';

const fx = new StackFixture('chaos-whole');
const BURST = 3;
/** Azurite's autosave interval (5 s) and a margin for the save itself. */
const SAVED_AFTER_MS = 8_000;

beforeAll(async () => {
  // The host inherits the supervisor's environment: a sweep every 5 s, so "the first sweep after the start" is soon.
  process.env.SWEEP_SCHEDULE = '*/5 * * * * *';
  await fx.setUp();
}, 180_000);
afterAll(async () => {
  delete process.env.SWEEP_SCHEDULE;
  await fx.tearDown();
}, 180_000);

const spec = (id: string) => ({
  id,
  name: id,
  pool: { vmSize: 'Standard_D2s_v5', nodes: 1 },
  mpi: { runtime: 'openmpi', processesPerNode: 1, fabric: 'tcp', options: ['--mca', 'btl_tcp_if_include', 'lo'], command: 'echo "burst done"' },
});

async function view(client: StackClient, id: string): Promise<JobViewLite | 'missing' | undefined> {
  const res = await fetch(`${client.baseUrl}/api/jobs/${id}`, { headers: { 'x-functions-key': client.host.keys.functionKey } }).catch(() => undefined);
  if (!res || res.status === 503) return undefined;
  if (res.status === 404) return 'missing';
  if (res.status !== 200) throw new Error(`GET /api/jobs/${id} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as JobViewLite;
}

test('a whole-stack SIGKILL right after a burst: every accepted job ends Succeeded or is missing as a whole, none is stuck', async () => {
  let client = fx.current.client();
  const headers = { 'x-functions-key': client.host.keys.functionKey, 'content-type': 'application/yaml' };
  const queue = client.operator.queue('job-submissions');
  await queue.createIfNotExists();
  const burst = async (prefix: string) => {
    await queue.sendMessage(Buffer.from(JSON.stringify(spec(`${prefix}-queue`)), 'utf8').toString('base64'));
    const answers = await Promise.all(
      Array.from({ length: BURST }, (_, i) => `${prefix}-${i}`).map(async (id) => {
        const res = await fetch(`${client.baseUrl}/api/jobs`, { method: 'POST', headers, body: stringify(spec(id)) });
        return { id, status: res.status };
      }),
    );
    const ok = answers.filter((a) => a.status === 202 || a.status === 200).map((a) => a.id);
    expect(ok).toHaveLength(BURST);
    return ok;
  };
  // An earlier burst, whose rows Azurite has saved by the kill; then the last one, right before it.
  const early = await burst('early');
  for (let i = 0; !(await view(client, 'early-queue')) || (await view(client, 'early-queue')) === 'missing'; i++) {
    if (i > 120) throw new Error('the queued job of the first burst was never taken in');
    await new Promise((res) => setTimeout(res, 500));
  }
  await new Promise((res) => setTimeout(res, SAVED_AFTER_MS));
  const late = await burst('late');
  const accepted = [...early, ...late];

  // The whole stack at once, supervisor first (it would restart the host), no shutdown code anywhere.
  const r = fx.current.runtime();
  for (const pid of [r.supervisor.pid, r.azurite.pid, r.host.pid]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await fx.current.exited;
  client = (await fx.start()).client();

  const ends = new Map<string, string>();
  const deadline = Date.now() + 240_000;
  // A queued message may still wait for the restarted host: a missing job counts as lost only after a while.
  const settled = Date.now() + 30_000;
  for (;;) {
    for (const id of [...accepted, 'early-queue', 'late-queue']) {
      const v = await view(client, id);
      if (v === 'missing') ends.set(id, 'missing');
      else if (v && isTerminal(v.state)) ends.set(id, `${v.state}${v.state === 'Succeeded' ? '' : `: ${v.error?.message ?? ''}`}`);
      else if (v) ends.set(id, `still ${v.state}`);
    }
    const open = [...ends.values()].filter((e) => e.startsWith('still') || e === 'missing');
    // A missing job stays missing (a lost row is not rebuilt); wait only while some job is still on its way.
    if (Date.now() > settled && [...ends.values()].every((e) => !e.startsWith('still')) && ends.size === accepted.length + 2) break;
    if (Date.now() > deadline) throw new Error(`stuck after a whole-stack SIGKILL: ${JSON.stringify(Object.fromEntries(ends))} (${open.length} open)`);
    await new Promise((res) => setTimeout(res, 1000));
  }
  console.log(`whole-stack SIGKILL after a burst: ${JSON.stringify(Object.fromEntries(ends))}`);
  // The early jobs (the queued one included: its message was taken and its row written long before the kill) end
  // Succeeded; the last burst's end Succeeded or are missing as a whole (the queued one: its message may be lost too).
  for (const [id, end] of ends) {
    expect({ id, end }).toEqual({ id, end: id.startsWith('early-') ? 'Succeeded' : expect.stringMatching(/^(Succeeded|missing)$/) });
  }
}, 600_000);
