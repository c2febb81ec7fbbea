/**
 * Placement over several Batch accounts on the real local stack: two emulated Batch accounts (the home account
 * `localbatch`, whose quota for the D v5 family holds one Standard_D2s_v5 node, and `localbatch2` with Batch's
 * defaults), both read through their management planes (live quotas, nothing in the app's settings). A two-node job
 * is placed on the second account, runs to Succeeded there (its pool created and its task run by that emulator, none
 * on the home one), and its timeline says why. On the code before, the deployment knew one account: the job was
 * refused at admission. Needs the compiled app: `bash scripts/ensure-deps.sh`.
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import type { ExchangeRecord } from '../../local/batch';
import { eventually } from '../intake/support';

const LOGS = path.join(REPO_ROOT, 'test-artifacts');
let stack: Stack;
let headers: Record<string, string>;
/** Every request the home account's data and management planes served. */
const home: ExchangeRecord[] = [];
const second: ExchangeRecord[] = [];

beforeAll(async () => {
  mkdirSync(LOGS, { recursive: true });
  stack = await startStack({
    port: 0,
    demoImage: false,
    poolIdentity: true,
    logDestination: path.join(LOGS, 'e2e-placement-host.log'),
    batch: { quota: { perFamily: { standardDSv5Family: 2 } }, onExchange: (ex) => home.push(ex), onArmExchange: (ex) => home.push(ex) },
    secondBatch: { onExchange: (ex) => second.push(ex), onArmExchange: (ex) => second.push(ex) },
    env: { ADMISSION_POLL_SECONDS: '5' },
  });
  headers = {
    authorization: `Bearer ${await stack.identity.userToken('alice', { roles: ['Jobs.Submit'], name: 'alice' })}`,
    'content-type': 'application/yaml',
  };
}, 120_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function call(method: string, route: string, body?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${stack.baseUrl}${route}`, { method, headers, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const poolWrites = (xs: ExchangeRecord[]) => xs.filter((x) => (x.method === 'PUT' || x.method === 'POST') && /\/pools(\/[^/]+)?$/i.test(x.path.split('?')[0]));

test("a job that does not fit the home account's quota is placed on the second account, runs there, and the timeline says why", async () => {
  expect(JSON.parse(stack.settings.BATCH_ACCOUNTS).map((a: { name: string }) => a.name)).toEqual(['localbatch', 'localbatch2']);
  const spec = stringify({
    id: 'placed-on-b',
    name: 'placed-on-b',
    pool: { vmSize: 'Standard_D2s_v5', nodes: 2 },
    container: { runtime: 'none' },
    data: { inputs: [] },
    mpi: { runtime: 'openmpi', processesPerNode: 1, fabric: 'tcp', options: ['--mca', 'btl_tcp_if_include', 'lo'], command: 'hostname' },
    limits: { maxWallClock: 'PT10M' },
  });
  // The dry run says where the job would go now, and why not the other account.
  const dry = await call('POST', '/api/jobs?dryRun=true', spec);
  expect(dry.status).toBe(200);
  expect(dry.body.scheduling.placement).toMatchObject({
    account: 'localbatch2',
    accounts: [
      { account: 'localbatch', blocked: 'standardDSv5Family: 0 of 2 cores in use, the job needs 4' },
      { account: 'localbatch2', jobs: 0 },
    ],
  });
  const res = await call('POST', '/api/jobs', spec);
  expect(res.status).toBe(202);
  const job = await eventually('the job to end', 240_000, async () => {
    const view = await call('GET', '/api/jobs/placed-on-b');
    return ['Succeeded', 'Failed', 'Cancelled'].includes(view.body?.state) ? view.body : undefined;
  });
  expect({ state: job.state, error: job.error }).toEqual({ state: 'Succeeded', error: undefined });
  expect(job.batchAccount).toBe('localbatch2');
  const admitted = (job.timeline as { reason: string }[]).find((e) => e.reason.startsWith('admitted:'));
  expect(admitted?.reason).toMatch(
    /placed on localbatch2: quota free \(\d+ cores free\), 0 of our job\(s\) on it(, [\d.]+ per node-hour)?; localbatch: standardDSv5Family: 0 of 2 cores in use, the job needs 4/,
  );
  // The pool was created, and the job and task run, by the second account's emulator; the home account saw none of it.
  expect(poolWrites(second).length).toBeGreaterThan(0);
  expect(poolWrites(home)).toEqual([]);
  expect(second.some((x) => x.method === 'POST' && /\/jobs\/[^/]+\/tasks$/.test(x.path.split('?')[0]))).toBe(true);
  expect(home.filter((x) => /\/jobs\//.test(x.path)).map((x) => `${x.method} ${x.path}`)).toEqual([]);
}, 300_000);
