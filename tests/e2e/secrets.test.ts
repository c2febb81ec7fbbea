/**
 * Issue 26 item 3 end to end, on the local stack through the public API: the licensed-app example
 * (examples/workloads/licensed-app-flexlm.yaml) with its licence server pointed at a fake FlexLM server this test runs,
 * and both secrets (the licence key, the app token) random canaries in the local Key Vault. The job must succeed:
 * every rank checked a licence out with the right key (the server compares hashes) and printed a hash of its token.
 * Then the canary test: neither value, raw or base64, is anywhere in the stack's whole data folder after it stopped
 * (every table entity, queue message incl. poison, blob incl. Durable history and large payloads, the Batch
 * emulator's persisted state and node sandboxes, webhook deliveries), in the host log, or in any API answer (status,
 * the job list, logs, outputs, the dry run's explain document), which show the reference instead.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { asUser, mpiOutput, submitSpec, watchJob, type JobViewLite } from '../../local/jobRunner';

const licenseKey = `lk-${randomBytes(16).toString('hex')}`;
const appToken = `tok-${randomBytes(16).toString('hex')}`;
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'e2e-secrets-'));
const hostLog = path.join(REPO_ROOT, 'test-artifacts', 'e2e-secrets-host.log');

let stack: Stack | undefined;
let lmServer: Server;
let vendorServer: Server;
let view: JobViewLite;
const checkouts: string[] = [];
const answers: Record<string, string> = {};

/** A fake lmgrd: one line "CHECKOUT <sha256 of key>" in, GRANTED or DENIED out. */
function fakeLmgrd(): Server {
  return createServer((socket) => {
    let buf = '';
    socket.on('data', (d) => {
      buf += d.toString();
      const line = buf.split('\n')[0];
      if (!buf.includes('\n')) return;
      checkouts.push(line);
      socket.end(line === `CHECKOUT ${sha(licenseKey)}` ? 'GRANTED\n' : 'DENIED\n');
    });
    socket.on('error', () => undefined);
  });
}

const listen = (s: Server) => new Promise<number>((resolve) => s.listen(0, '127.0.0.1', () => resolve((s.address() as { port: number }).port)));

function exampleSpec(lmPort: number, vendorPort: number): string {
  const text = readFileSync(path.join(REPO_ROOT, 'examples', 'workloads', 'licensed-app-flexlm.yaml'), 'utf8');
  // Only the licence server changes: the emulator has no TCP service at 10.0.0.4:27000 (tests/helpers/examplesAsWritten.ts).
  return text.replace('server: 10.0.0.4:27000', `server: 127.0.0.1:${lmPort}`).replace('vendorPort: 27001', `vendorPort: ${vendorPort}`);
}

let specText = '';

beforeAll(async () => {
  mkdirSync(path.dirname(hostLog), { recursive: true });
  lmServer = fakeLmgrd();
  vendorServer = createServer((s) => s.end());
  const lmPort = await listen(lmServer);
  const vendorPort = await listen(vendorServer);
  specText = exampleSpec(lmPort, vendorPort);
  stack = await startStack({
    port: 0,
    dataDir,
    poolIdentity: true,
    logDestination: hostLog,
    demoImageFillerBytes: 64 * 1024,
    keyVault: { hpclocal: { secrets: { 'demo-license-key': licenseKey, 'demo-app-token': appToken } } },
    // The licence server is on this machine's loopback, as every emulated node is.
    env: { ALLOWED_INTERNAL_HOSTS: `127.0.0.1:${lmPort},127.0.0.1:${vendorPort}`, NODE_TASK_MAX_ATTEMPTS: '1' },
  });
  // The job id is the one the submission answers with.
  const id = await submitSpec(stack, specText);
  view = await watchJob(stack, id, 420_000);
  for (const [name, route] of [
    ['status', `/api/jobs/${id}`],
    ['list', '/api/jobs'],
    ['logs', `/api/jobs/${id}/logs`],
    ['outputs', `/api/jobs/${id}/outputs`],
  ] as const) {
    const res = await fetch(`${stack.baseUrl}${route}`, { headers: await asUser(stack)() });
    answers[name] = `${res.status} ${await res.text()}`;
  }
  const dry = await fetch(`${stack.baseUrl}/api/jobs?dryRun=true`, { method: 'POST', headers: { 'content-type': 'application/yaml', ...(await asUser(stack)()) }, body: specText });
  answers.explain = `${dry.status} ${await dry.text()}`;
}, 600_000);

afterAll(async () => {
  await stack?.stop();
  lmServer?.close();
  vendorServer?.close();
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

/** The value and its base64 forms at the three alignments (a queue message or payload may be base64). */
function needles(value: string): string[] {
  const forms = [value];
  for (let shift = 0; shift < 3; shift++) {
    // Groups of 3 bytes → 4 characters: skip the group holding the prefix and the last (partial) group.
    const b64 = Buffer.from('xx'.slice(0, shift) + value).toString('base64');
    forms.push(b64.slice(shift ? 4 : 0, b64.length - 4));
  }
  return forms;
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

test('the licensed job succeeds: every rank checked out with the right key and saw its token', async () => {
  if (view.state !== 'Succeeded') throw new Error(`job ${view.id} ${view.state}: ${view.error?.message ?? ''}\n${stack ? await mpiOutput(stack, view) : ''}`);
  expect(checkouts).toEqual([`CHECKOUT ${sha(licenseKey)}`, `CHECKOUT ${sha(licenseKey)}`]);
  const out = view.result?.mpi?.stdoutTail ?? '';
  expect(out.match(new RegExp(`licence: GRANTED token-sha256: ${sha(appToken)}`, 'g'))?.length).toBe(2);
});

test('the explain document and the status show the references, not the values', () => {
  expect(answers.explain).toMatch(/^200 /);
  expect(answers.explain).toContain('mpijob_kv_get hpclocal demo-license-key');
  expect(answers.explain).toContain('Key Vault secret hpclocal/demo-app-token');
  expect(answers.status).toContain('demo-app-token');
});

test('canary: no secret value in any API answer', () => {
  for (const [name, text] of Object.entries(answers)) {
    for (const n of [...needles(licenseKey), ...needles(appToken)]) expect({ name, found: text.includes(n) }).toEqual({ name, found: false });
  }
});

test('canary: no secret value anywhere in the stack\'s storage, emulator state, node sandboxes or host log', async () => {
  await stack?.stop();
  stack = undefined;
  const files = [...filesUnder(dataDir), hostLog];
  expect(files.length).toBeGreaterThan(10);
  const hits: string[] = [];
  for (const f of files) {
    if (statSync(f).size > 256 * 1024 * 1024) continue;
    const text = readFileSync(f).toString('latin1');
    for (const n of [...needles(licenseKey), ...needles(appToken)]) if (text.includes(n)) hits.push(`${path.relative(dataDir, f)}: ${n}`);
  }
  expect(hits).toEqual([]);
}, 120_000);
