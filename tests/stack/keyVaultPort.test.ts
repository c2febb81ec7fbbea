/**
 * Issue 28 item 7: the Key Vault stand-in's port survives a restart of a stack that keeps its data, like every other
 * service's (local/supervisor/ports.ts): KEY_VAULT_URL_TEMPLATE names it, and a running host's settings carry it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { choosePorts, PORT_OWNER, readPorts, recordPorts } from '../../local/supervisor/ports';

test('the Key Vault port is recorded and asked for again on the next start', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'kv-port-'));
  try {
    recordPorts(dir, { keyVault: 41234, blob: 41000 });
    expect(readPorts(dir)).toEqual({ keyVault: 41234, blob: 41000 });
    expect(choosePorts({}, readPorts(dir))).toEqual({ keyVault: 41234, blob: 41000 });
    expect(PORT_OWNER.keyVault).toBe('Key Vault stand-in');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
