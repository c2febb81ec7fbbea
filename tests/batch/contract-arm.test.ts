/**
 * The management plane (ARM) pool contract, raw REST with the app identity's token (issue 29): identity type None
 * with userAssignedIdentities is refused as Resource Manager refuses it, a stray property is refused, and an
 * operation the emulator does not carry out answers 501. The contract comes from @azure/arm-batch (no ../shared).
 */
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { startIdentityService, type IdentityService } from '../../local/identity';
import { localIdentityWiring, type LocalIdentityWiring } from '../../local/supervisor/identityWiring';

let identity: IdentityService;
let wiring: LocalIdentityWiring;
let emu: BatchEmulatorHandle;

beforeAll(async () => {
  identity = await startIdentityService();
  wiring = localIdentityWiring(identity);
  emu = await startBatchEmulator({
    timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 },
    identity: wiring.nodeIdentities,
    arm: wiring.arm,
  });
}, 60_000);

afterAll(async () => {
  await emu?.stop();
  await identity?.stop();
});

async function arm(method: string, pool: string, body?: unknown, suffix = '') {
  const token = await identity.resourceToken('https://management.azure.com/', { identity: identity.managedIdentities.byResourceId(wiring.app.resourceId)! });
  const url = `${String(emu.armUrl)}/subscriptions/${wiring.arm.subscriptionId}/resourceGroups/${wiring.arm.resourceGroup}/providers/Microsoft.Batch/batchAccounts/${emu.accountName}/pools/${pool}${suffix}?api-version=2023-11-01`;
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, error: text ? (JSON.parse(text) as { error?: { code?: string; message?: string; target?: string } }).error : undefined };
}

const properties = {
  vmSize: 'STANDARD_D2S_V3',
  deploymentConfiguration: {
    virtualMachineConfiguration: {
      imageReference: { publisher: 'canonical', offer: '0001-com-ubuntu-server-jammy', sku: '22_04-lts', version: 'latest' },
      nodeAgentSkuId: 'batch.node.ubuntu 22.04',
    },
  },
  scaleSettings: { fixedScale: { targetDedicatedNodes: 0 } },
};

describe('management pool contract', () => {
  it('refuses identity type None with userAssignedIdentities: 400 BadRequest, as Resource Manager answers', async () => {
    const r = await arm('PUT', 'none-with-ids', { identity: { type: 'None', userAssignedIdentities: { [wiring.pool.resourceId]: {} } }, properties });
    expect(r.status).toBe(400);
    expect(r.error?.code).toBe('BadRequest');
    expect(r.error?.message).toMatch(/non-UserAssigned identity type should not contain: userAssignedIdentities/);
  });

  it('accepts identity type None alone', async () => {
    expect((await arm('PUT', 'none-alone', { identity: { type: 'None' }, properties })).status).toBe(200);
  });

  it('refuses a property the model does not define, naming it', async () => {
    const r = await arm('PUT', 'stray', { properties: { ...properties, bogus: 1 } });
    expect(r.status).toBe(400);
    expect(r.error?.message).toMatch(/bogus/);
  });

  it('answers 501 for a management operation it does not carry out', async () => {
    expect((await arm('POST', 'none-alone', undefined, '/stopResize')).status).toBe(501);
  });
});
