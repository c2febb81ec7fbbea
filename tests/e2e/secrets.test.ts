/**
 * Issue 26 item 3 end to end, on the local stack through the public API: the licensed-app example
 * (examples/workloads/licensed-app-flexlm.yaml) submitted as committed, byte for byte, to a stack started as
 * `npm start --pool-identity` starts it (the examples' network: its licence server at 10.0.0.4:27000 in subnet
 * "compute", the default subnet of pools), with both secrets (the licence key, the app token) random canaries in the
 * local Key Vault. The job must succeed: every rank checked a licence out with the right key (the server compares
 * hashes) and printed a hash of its token. An extra job puts the same spec's pool in another subnet: its preflight
 * fails, naming the node and the licence server's port.
 * Then the canary test: neither value, raw or base64, is anywhere in the stack's whole data folder after it stopped
 * (every table entity, queue message incl. poison, blob incl. Durable history and large payloads, the Batch
 * emulator's persisted state and node sandboxes, webhook deliveries), in the host log, or in any API answer (status,
 * the job list, logs, outputs, the dry run's explain document), which show the reference instead.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, mkdirSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { asUser, mpiOutput, submitSpec, watchJob, type JobViewLite } from '../../local/jobRunner';
import { LICENSED_AS_WRITTEN } from '../helpers/examplesAsWritten';

const licenseKey = `lk-${randomBytes(16).toString('hex')}`;
const appToken = `tok-${randomBytes(16).toString('hex')}`;
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'e2e-secrets-'));
const hostLog = path.join(REPO_ROOT, 'test-artifacts', 'e2e-secrets-host.log');

let stack: Stack | undefined;
let view: JobViewLite;
let outside: JobViewLite;
const answers: Record<string, string> = {};
const specText = readFileSync(path.join(REPO_ROOT, LICENSED_AS_WRITTEN[0]), 'utf8');
/** The negative case: the same job with its pool in another subnet of the examples' network. */
const OTHER_SUBNET =
  '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/hpc-local/providers/Microsoft.Network/virtualNetworks/vnet-local/subnets/other';
const outsideSpec = specText
  .replace('name: licensed-app-flexlm', 'name: licensed-app-flexlm-outside')
  .replace('  nodes: 2\n', `  nodes: 2\n  network: { subnetId: ${OTHER_SUBNET} }\n`);

beforeAll(async () => {
  mkdirSync(path.dirname(hostLog), { recursive: true });
  expect(outsideSpec).toContain(`network: { subnetId: ${OTHER_SUBNET} }`);
  stack = await startStack({
    port: 0,
    dataDir,
    poolIdentity: true,
    logDestination: hostLog,
    demoImageFillerBytes: 64 * 1024,
    // As `npm start` serves it: the examples' network with the licence server (--example-network is the default).
    exampleNetwork: true,
    keyVault: { hpclocal: { secrets: { 'demo-license-key': licenseKey, 'demo-app-token': appToken } } },
    env: { NODE_TASK_MAX_ATTEMPTS: '1' },
  });
  // The job ids are the ones the submissions answer with.
  const id = await submitSpec(stack, specText);
  const outsideId = await submitSpec(stack, outsideSpec);
  view = await watchJob(stack, id, 420_000);
  outside = await watchJob(stack, outsideId, 420_000);
  for (const [name, route] of [
    ['status', `/api/jobs/${id}`],
    ['list', '/api/jobs'],
    ['logs', `/api/jobs/${id}/logs`],
    ['outputs', `/api/jobs/${id}/outputs`],
  ] as const) {
    const res = await fetch(`${stack.baseUrl}${route}`, { headers: await asUser(stack)() });
    answers[name] = `${res.status} ${await res.text()}`;
  }
  const dry = await fetch(`${stack.baseUrl}/api/jobs?dryRun=true`, {
    method: 'POST',
    headers: { 'content-type': 'application/yaml', ...(await asUser(stack)()) },
    body: specText,
  });
  answers.explain = `${dry.status} ${await dry.text()}`;
}, 600_000);

afterAll(async () => {
  await stack?.stop();
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
  // Only the two ranks of the job in the subnet reached the licence server.
  expect(stack?.licenceServer?.checkouts).toEqual([`CHECKOUT ${sha(licenseKey)}`, `CHECKOUT ${sha(licenseKey)}`]);
  const out = view.result?.mpi?.stdoutTail ?? '';
  expect(out.match(new RegExp(`licence: GRANTED token-sha256: ${sha(appToken)}`, 'g'))?.length).toBe(2);
});

test("a pool outside the licence server's subnet fails preflight, naming the node and the port", () => {
  const message = outside.error?.message ?? '';
  // "…preflight: <node> (missing licence server port 10.0.0.4:27000 (no TCP connection within 5 s), …)": each node of
  // the pool in subnet "other" is named with the port it could not reach; the vendor daemon's port too.
  expect({ state: outside.state, message }).toEqual({
    state: 'Failed',
    message: expect.stringMatching(/preflight: [\s\S]*\S+ \([^\n]*missing licence server port 10\.0\.0\.4:27000 \(no TCP connection within 5 s\)/),
  });
  expect(message).toContain('10.0.0.4:27001');
  expect(stack?.licenceServer?.checkouts.length).toBe(2);
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

test("canary: no secret value anywhere in the stack's storage, emulator state, node sandboxes or host log", async () => {
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
