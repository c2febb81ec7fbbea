/**
 * What the supervised stack (`npm start`) keeps across a stop, and what it loses where:
 *  - a clean stop (SIGTERM, or Ctrl-C's SIGINT arriving twice as npm forwards it) right after a burst of
 *    acknowledged writes keeps all of them: blobs, queue messages and table entities in several Azurite accounts
 *    (written well inside Azurite's 5 s autosave interval, so only its save on stop can keep them), the Batch
 *    account's pool, job and task, and the registry's image at the same address and digest;
 *  - a SIGKILL of the Functions host alone loses none of the jobs it answered 202 for (their rows and
 *    orchestrations live in Azurite, in another process): the rehearsal's "accepted jobs vanished";
 *  - a SIGKILL of the supervisor itself (what a kill of the terminal's process group does to it) still loses no
 *    acknowledged storage write: Azurite, in its own process group, sees its IPC channel close and saves.
 */
import { stringify } from 'yaml';
import type { JobViewLite, StackClient } from '../../local/jobRunner';
import { submitSpec } from '../../local/jobRunner';
import { isRunning } from '../../local/supervisor/runtime';
import { StackFixture, waitGone } from './supervisedStack';

const ACCOUNTS = ['devstoreaccount1', 'stage2', 'stage4'];
const BURST = 40;
const fx = new StackFixture('storage');

beforeAll(() => fx.setUp(), 180_000);
afterAll(() => fx.tearDown(), 180_000);

// The operator's clients: the stack is keyless, so these carry the local tenant's tokens.
const table = (c: StackClient, account: string) => c.operator.table('burst', account);
const blobs = (c: StackClient, account: string) => c.operator.blobService(account).getContainerClient('burst');
const queue = (c: StackClient, account: string, round: string) => c.operator.queue(`burst-${round}`, account);
const batchClient = (c: StackClient) => c.operator.batch();

/** BURST entities, blobs and messages per account, tagged with `round`, every one acknowledged. */
async function writeBurst(c: StackClient, round: string): Promise<void> {
  await Promise.all(
    ACCOUNTS.map(async (account) => {
      await table(c, account).createTable();
      await blobs(c, account).createIfNotExists();
      await queue(c, account, round).createIfNotExists();
      for (let i = 0; i < BURST; i++) {
        await table(c, account).createEntity({ partitionKey: round, rowKey: String(i), value: `${account}-${i}` });
        await blobs(c, account).getBlockBlobClient(`${round}/${i}`).upload(`${account}-${i}`, `${account}-${i}`.length);
        await queue(c, account, round).sendMessage(`${round}-${i}`);
      }
    }),
  );
}

async function countBurst(c: StackClient, round: string): Promise<Record<string, { entities: number; blobs: number; messages: number }>> {
  const out: Record<string, { entities: number; blobs: number; messages: number }> = {};
  for (const account of ACCOUNTS) {
    let entities = 0;
    for await (const _ of table(c, account).listEntities({ queryOptions: { filter: `PartitionKey eq '${round}'` } })) entities++;
    let blobCount = 0;
    for await (const _ of blobs(c, account).listBlobsFlat({ prefix: `${round}/` })) blobCount++;
    const messages = (await queue(c, account, round).getProperties()).approximateMessagesCount ?? 0;
    out[account] = { entities, blobs: blobCount, messages };
  }
  return out;
}

const everyAccount = (n: { entities: number; blobs: number; messages: number }) => Object.fromEntries(ACCOUNTS.map((a) => [a, n]));

test.each([
  ['SIGTERM', 'term', ['SIGTERM']],
  ['Ctrl-C forwarded twice by npm (SIGINT, SIGINT)', 'int', ['SIGINT', 'SIGINT']],
] as const)(
  'a clean stop (%s) right after acknowledged writes keeps every one of them, in every service',
  async (_what, round, signals) => {
    const s = fx.current;
    const c = s.client();
    const bc = batchClient(c);
    const poolId = `keep-${round}`;
    await bc.pool.add({
      id: poolId,
      vmSize: 'standard_d2s_v3',
      targetDedicatedNodes: 0,
      virtualMachineConfiguration: {
        imageReference: { publisher: 'canonical', offer: '0001-com-ubuntu-server-jammy', sku: '22_04-lts' },
        nodeAgentSKUId: 'batch.node.ubuntu 22.04',
      },
    });
    await bc.job.add({ id: `job-${round}`, poolInfo: { poolId } });
    await bc.task.add(`job-${round}`, { id: 'waiting', commandLine: '/bin/true' });
    const registry = s.runtime().registry;
    const manifest = await fetch(`${registry.url}/v2/hpc/mpi-demo/manifests/1.0`, { headers: { accept: 'application/vnd.oci.image.manifest.v1+json' } });
    expect(manifest.status).toBe(200);
    const digest = manifest.headers.get('docker-content-digest');

    await writeBurst(c, round);
    // Stop at once: well inside Azurite's 5 s autosave, so only the save on stop can keep the burst.
    expect(await fx.stop(...signals)).toEqual({ code: 0, signal: null });

    const restarted = await fx.start();
    const c2 = restarted.client();
    expect(await countBurst(c2, round)).toEqual(everyAccount({ entities: BURST, blobs: BURST, messages: BURST }));
    const bc2 = batchClient(c2);
    expect((await bc2.pool.get(poolId)).id).toBe(poolId);
    expect((await bc2.task.get(`job-${round}`, 'waiting')).state).toBe('active');
    const again = await fetch(`${restarted.runtime().registry.url}/v2/hpc/mpi-demo/manifests/${digest}`, {
      headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
    });
    expect(again.status).toBe(200);
  },
  240_000,
);

test('a SIGKILL of the Functions host alone loses none of the jobs it accepted', async () => {
  const s = fx.current;
  const c = s.client();
  const before = s.runtime();
  // Jobs that could run (valid specs) but are cancelled below; one node each, no image, no data.
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) {
    ids.push(
      await submitSpec(
        c,
        stringify({
          id: `accepted-${i}`,
          name: 'accepted',
          pool: { vmSize: 'Standard_D2s_v5', nodes: 1 },
          container: { runtime: 'none' },
          mpi: { runtime: 'openmpi', processesPerNode: 1, fabric: 'tcp', command: '/bin/true' },
        }),
      ),
    );
  }
  process.kill(before.host.pid, 'SIGKILL');
  await waitGone(before.host, 10_000);
  await s.waitForOutput(/the Functions host is back/, 120_000);
  for (const id of ids) {
    const res = await fetch(`${c.baseUrl}/api/jobs/${id}`, { headers: { 'x-functions-key': c.host.keys.functionKey } });
    expect({ id, status: res.status }).toEqual({ id, status: 200 });
    const view = (await res.json()) as JobViewLite;
    expect(view.orchestrationStatus).toBeDefined();
    const cancel = await fetch(`${c.baseUrl}/api/jobs/${id}`, { method: 'DELETE', headers: { 'x-functions-key': c.host.keys.functionKey } });
    expect([200, 202]).toContain(cancel.status);
  }
  expect(isRunning(before.azurite)).toBe(true);
}, 240_000);

test('a SIGKILL of the supervisor: Azurite, in its own process group, still saves every acknowledged write', async () => {
  const c = fx.current.client();
  const before = fx.current.runtime();
  await writeBurst(c, 'killed');
  expect(await fx.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
  // The new supervisor waits for the old Azurite to finish saving before it takes the folder.
  const restarted = await fx.start();
  expect(isRunning(before.azurite)).toBe(false);
  expect(isRunning(before.host)).toBe(false);
  expect(await countBurst(restarted.client(), 'killed')).toEqual(everyAccount({ entities: BURST, blobs: BURST, messages: BURST }));
}, 240_000);
