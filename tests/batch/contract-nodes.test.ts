/**
 * Nodes (issue 29): reimage and per-pool node counts, which answered 501 before, through the real @azure/batch SDK.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { BatchServiceClient } from '@azure/batch';
import { FAST_TIMING } from './batchRefusal';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { LINUX_VM_CONFIGURATION, sdkClient, signedFetch, waitFor, waitForNodes } from '../../local/batch/testing/sdkHelpers';


describe('node contract', () => {
  let emu: BatchEmulatorHandle;
  let client: BatchServiceClient;
  beforeAll(async () => {
    emu = await startBatchEmulator({ timing: FAST_TIMING });
    client = sdkClient(emu);
    await client.pool.add({ id: 'nodes-a', vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 2 });
    await client.pool.add({ id: 'nodes-b', vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 1, startTask: { commandLine: "/bin/sh -c 'echo booted >> $AZ_BATCH_NODE_SHARED_DIR/boots'", waitForSuccess: true } });
    await waitForNodes(client, 'nodes-a', 2);
    await waitForNodes(client, 'nodes-b', 1);
  });
  afterAll(async () => {
    await emu?.stop();
  });

  it('lists node counts per pool, by state, filtered by poolId', async () => {
    const counts = await client.account.listPoolNodeCounts();
    const byPool = Object.fromEntries(counts.map((c) => [c.poolId, c]));
    expect(byPool['nodes-a']?.dedicated).toMatchObject({ idle: 2, total: 2, running: 0 });
    expect(byPool['nodes-b']?.dedicated).toMatchObject({ idle: 1, total: 1 });
    expect(byPool['nodes-a']?.lowPriority).toMatchObject({ total: 0 });
    const filtered = await client.account.listPoolNodeCounts({ accountListPoolNodeCountsOptions: { filter: "poolId eq 'nodes-b'" } });
    expect(filtered.map((c) => c.poolId)).toEqual(['nodes-b']);
  });

  it('reimages a node: 202, reimaging, then the start task again on a wiped disk', async () => {
    const [node] = await client.computeNode.list('nodes-b');
    const shared = path.join(String(emu.nodes('nodes-b').find((n) => n.id === node.id)?.sharedDir), 'boots');
    await waitFor('the first boot', async () => (existsSync(shared) ? true : undefined));
    await client.computeNode.reimage('nodes-b', String(node.id));
    await waitForNodes(client, 'nodes-b', 1, ['idle']);
    const after = await client.computeNode.get('nodes-b', String(node.id));
    expect(after.lastBootTime?.getTime()).toBeGreaterThan(node.lastBootTime?.getTime() ?? 0);
    // One line: the shared folder of the first boot was wiped with the disk, then the start task wrote again.
    expect(readFileSync(shared, 'utf8')).toBe('booted\n');
  });

  it('refuses an unknown nodeReimageOption and a node that does not exist', async () => {
    const [node] = await client.computeNode.list('nodes-a');
    const bad = await signedFetch(emu, 'POST', `/pools/nodes-a/nodes/${String(node.id)}/reimage`, { nodeReimageOption: 'sideways' });
    expect(bad.status).toBe(400);
    expect((await signedFetch(emu, 'POST', '/pools/nodes-a/nodes/nope/reimage', {})).status).toBe(404);
  });

  it('still answers 501 for node operations it does not emulate', async () => {
    const [node] = await client.computeNode.list('nodes-a');
    expect((await signedFetch(emu, 'GET', `/pools/nodes-a/nodes/${String(node.id)}/remoteloginsettings`)).status).toBe(501);
  });
});
