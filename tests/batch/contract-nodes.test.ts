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
    await client.pool.add({
      id: 'nodes-b',
      vmSize: 'standard_d2s_v3',
      virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
      targetDedicatedNodes: 1,
      startTask: { commandLine: "/bin/sh -c 'echo booted >> $AZ_BATCH_NODE_SHARED_DIR/boots'", waitForSuccess: true },
    });
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
    const r = await signedFetch(emu, 'POST', `/pools/nodes-a/nodes/${String(node.id)}/uploadbatchservicelogs`, {
      containerUrl: 'https://a.blob.core.windows.net/c?sig=x',
      startTime: '2026-01-01T00:00:00Z',
    });
    expect(r.status).toBe(501);
  });

  describe('node users', () => {
    const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO0x3kDq3N0pZ0J6wJ4tJgk2M1Qm3bq0Zb0yq8bH3j5c test@local';
    const codeOf = async (p: Promise<unknown>) => {
      try {
        await p;
        return 'ok';
      } catch (e) {
        return `${(e as { statusCode?: number }).statusCode} ${(e as { code?: string }).code}`;
      }
    };

    it('adds, updates and deletes a user; a duplicate is 409 NodeUserExists, an unknown one 404 NodeUserNotFound', async () => {
      const [node] = await client.computeNode.list('nodes-a');
      const id = String(node.id);
      expect(await codeOf(client.computeNode.addUser('nodes-a', id, { name: 'alice', password: 'S3cret!pass', isAdmin: true }))).toBe('ok');
      expect(await codeOf(client.computeNode.addUser('nodes-a', id, { name: 'ALICE', sshPublicKey: KEY }))).toBe('409 NodeUserExists');
      expect(await codeOf(client.computeNode.updateUser('nodes-a', id, 'alice', { sshPublicKey: KEY }))).toBe('ok');
      expect(await codeOf(client.computeNode.updateUser('nodes-a', id, 'bob', { password: 'x' }))).toBe('404 NodeUserNotFound');
      const login = await client.computeNode.getRemoteLoginSettings('nodes-a', id);
      expect(login).toMatchObject({ remoteLoginIPAddress: node.ipAddress, remoteLoginPort: 22 });
      expect(await codeOf(client.computeNode.deleteUser('nodes-a', id, 'alice'))).toBe('ok');
      expect(await codeOf(client.computeNode.deleteUser('nodes-a', id, 'alice'))).toBe('404 NodeUserNotFound');
      // The name is free again.
      expect(await codeOf(client.computeNode.addUser('nodes-a', id, { name: 'alice', sshPublicKey: KEY }))).toBe('ok');
    });

    it.each([
      ['no name', { password: 'p' }, '400 MissingRequiredProperty'],
      ['a name too long', { name: 'a'.repeat(21), password: 'p' }, '400 InvalidPropertyValue'],
      ['a name with a slash', { name: 'a/b', password: 'p' }, '400 InvalidPropertyValue'],
      ['neither password nor key on Linux', { name: 'nokey' }, '400 MissingRequiredProperty'],
      ['a malformed SSH key', { name: 'badkey', sshPublicKey: 'not a key' }, '400 InvalidPropertyValue'],
      ['a malformed expiryTime', { name: 'badexp', password: 'p', expiryTime: 'tomorrow' }, '400 InvalidPropertyValue'],
    ])('refuses %s', async (_what, user, expected) => {
      const [node] = await client.computeNode.list('nodes-a');
      const r = await signedFetch(emu, 'POST', `/pools/nodes-a/nodes/${String(node.id)}/users`, user);
      expect(`${r.status} ${(r.json as { code?: string }).code}`).toBe(expected);
    });

    it('a reimage drops the node users (they lived on the OS disk)', async () => {
      const [node] = await client.computeNode.list('nodes-b');
      const id = String(node.id);
      await waitForNodes(client, 'nodes-b', 1, ['idle']);
      await client.computeNode.addUser('nodes-b', id, { name: 'carol', sshPublicKey: KEY });
      await client.computeNode.reimage('nodes-b', id);
      await waitForNodes(client, 'nodes-b', 1, ['idle']);
      expect(await codeOf(client.computeNode.deleteUser('nodes-b', id, 'carol'))).toBe('404 NodeUserNotFound');
    });

    it('answers 404 NodeNotFound for a user on a node that does not exist', async () => {
      expect(await codeOf(client.computeNode.addUser('nodes-a', 'nope', { name: 'x', password: 'p' }))).toBe('404 NodeNotFound');
    });
  });
});
