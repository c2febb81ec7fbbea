/**
 * pool.network: the subnet a new pool joins, its public IPs and accelerated networking, from the spec (validated as
 * Azure resource ids, refused with field paths, forbidden with pool.poolId) and the deployment's default subnet
 * (POOL_SUBNET_ID), to Batch's networkConfiguration on both planes, and in the explain document.
 */
import { loadConfig, ConfigError } from '../../shared/adapters/config';
import { buildPoolAddParameter } from '../../shared/adapters/batch/pools';
import { buildArmPool } from '../../shared/adapters/batch/armPools';
import { jobPoolSpec } from '../../shared/core/planning/batchRequests';
import { planJob } from '../../shared/core/planning/jobPlan';
import { explainJob } from '../../shared/adapters/intake/explain';
import { defaultExplainSettings } from '../../shared/adapters/intake/settings';
import { checkContainerPolicy, containerPolicy } from '../../shared/core/intake/containerPolicy';
import { checkNetworkPolicy } from '../../shared/core/intake/networkPolicy';
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';

const SUB = '00000000-1111-2222-3333-444444444444';
const SUBNET = `/subscriptions/${SUB}/resourceGroups/rg-hpc/providers/Microsoft.Network/virtualNetworks/vnet-hpc/subnets/compute`;
const OTHER_SUBNET = `/subscriptions/${SUB}/resourceGroups/rg-hpc/providers/Microsoft.Network/virtualNetworks/vnet-hpc/subnets/other`;
const IP = (n: number) => `/subscriptions/${SUB}/resourceGroups/rg-hpc/providers/Microsoft.Network/publicIPAddresses/ip-${n}`;
const IDENTITY = `/subscriptions/${SUB}/resourceGroups/rg-hpc/providers/Microsoft.ManagedIdentity/userAssignedIdentities/pool-id`;

const yaml = (network: string, extra = 'vmSize: Standard_HB120rs_v3') => `
name: net
pool: { ${extra}, nodes: 2${network ? `, network: ${network}` : ''} }
container: { runtime: none }
mpi: { runtime: openmpi, command: ./solver }
`;
function spec(text: string): JobSpec {
  const r = parseJobSpec(text, 'application/yaml');
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
}
function errorsOf(text: string): { path: string; message: string }[] {
  const r = parseJobSpec(text, 'application/yaml');
  if (r.ok) throw new Error('expected the spec to be refused');
  return r.errors.map((e) => ({ path: e.path, message: e.message }));
}

describe('the spec section', () => {
  it('accepts a subnet id, the public IP choices and accelerated networking', () => {
    expect(spec(yaml(`{ subnetId: "${SUBNET}", publicIp: none, acceleratedNetworking: true }`)).pool.network).toEqual({
      subnetId: SUBNET,
      publicIp: 'none',
      acceleratedNetworking: true,
    });
    expect(spec(yaml(`{ subnetId: "${SUBNET}", publicIp: { userManaged: ["${IP(1)}"] } }`)).pool.network?.publicIp).toEqual({ userManaged: [IP(1)] });
    expect(spec(yaml('{ publicIp: batchManaged }')).pool.network).toEqual({ publicIp: 'batchManaged' });
    expect(spec(yaml('')).pool.network).toBeUndefined();
  });

  it.each([
    ['not a resource id', 'subnet-1'],
    ['a virtual network, not a subnet', `/subscriptions/${SUB}/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet`],
    ['a subscription that is no GUID', '/subscriptions/abc/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/s'],
    ['another provider', `/subscriptions/${SUB}/resourceGroups/rg/providers/Microsoft.Compute/virtualNetworks/v/subnets/s`],
    ['a trailing slash', `${SUBNET}/`],
  ])('refuses a subnet id that is %s, with the field path', (_why, id) => {
    expect(errorsOf(yaml(`{ subnetId: "${id}" }`))).toEqual([{ path: 'pool.network.subnetId', message: expect.stringMatching(/subnet's Azure resource id/) }]);
  });

  it('refuses bad public IP settings, unknown keys, and a network with pool.poolId', () => {
    expect(errorsOf(yaml(`{ subnetId: "${SUBNET}", publicIp: public }`))[0].path).toBe('pool.network.publicIp');
    expect(errorsOf(yaml(`{ subnetId: "${SUBNET}", publicIp: { userManaged: ["${SUBNET}"] } }`))[0].path).toBe('pool.network.publicIp.userManaged[0]');
    expect(errorsOf(yaml(`{ subnetId: "${SUBNET}", vnet: x }`))[0].path).toMatch(/^pool\.network/);
    expect(errorsOf(yaml(`{ subnetId: "${SUBNET}" }`, 'poolId: shared-pool'))).toEqual([
      { path: 'pool.network', message: expect.stringMatching(/not allowed together with pool.poolId/) },
    ]);
  });
});

describe('Batch networkConfiguration', () => {
  const poolSpec = (network: string, resolved: Parameters<typeof jobPoolSpec>[1] = {}) => {
    const s = spec(yaml(network));
    return jobPoolSpec(planJob('net-1', s).poolCreate, resolved);
  };

  it('data plane: the subnet and the public IP provisioning in its spelling', () => {
    expect(buildPoolAddParameter(poolSpec(`{ subnetId: "${SUBNET}", publicIp: none }`)).networkConfiguration).toEqual({
      subnetId: SUBNET,
      publicIPAddressConfiguration: { provision: 'nopublicipaddresses' },
    });
    expect(buildPoolAddParameter(poolSpec(`{ subnetId: "${SUBNET}", publicIp: { userManaged: ["${IP(1)}", "${IP(2)}"] } }`)).networkConfiguration).toEqual({
      subnetId: SUBNET,
      publicIPAddressConfiguration: { provision: 'usermanaged', ipAddressIds: [IP(1), IP(2)] },
    });
    expect(buildPoolAddParameter(poolSpec('')).networkConfiguration).toBeUndefined();
    // The data plane cannot carry accelerated networking: never silently dropped (intake refuses it first).
    expect(() => buildPoolAddParameter(poolSpec(`{ subnetId: "${SUBNET}", acceleratedNetworking: true }`))).toThrow(/management plane/);
  });

  it('management plane: its spelling, with accelerated networking', () => {
    const arm = buildArmPool(
      poolSpec(`{ subnetId: "${SUBNET}", publicIp: batchManaged, acceleratedNetworking: true }`, { identityResourceId: IDENTITY }),
      IDENTITY,
    );
    expect(arm.networkConfiguration).toEqual({
      subnetId: SUBNET,
      publicIPAddressConfiguration: { provision: 'BatchManaged' },
      enableAcceleratedNetworking: true,
    });
  });

  it("the deployment default subnet applies when the spec names none; the spec's wins; without either a publicIp is refused", () => {
    expect(poolSpec('', { defaultSubnetId: SUBNET }).network).toEqual({ subnetId: SUBNET });
    expect(poolSpec('{ publicIp: none }', { defaultSubnetId: SUBNET }).network).toEqual({ subnetId: SUBNET, publicIp: 'none' });
    expect(poolSpec(`{ subnetId: "${OTHER_SUBNET}" }`, { defaultSubnetId: SUBNET }).network).toEqual({ subnetId: OTHER_SUBNET });
    expect(() => poolSpec('{ publicIp: none }')).toThrow(/pool.network.subnetId is required/);
  });

  it("explain shows the pool's networkConfiguration, with the deployment default", () => {
    const settings = { ...defaultExplainSettings((w) => `<${w}>`), poolSubnetId: SUBNET };
    const doc = explainJob({ jobId: 'net-1', jobIdFrom: 'spec.id', spec: spec(yaml('{ publicIp: none }')), settings, policiesChecked: false });
    expect((doc.pool.request as { networkConfiguration?: unknown }).networkConfiguration).toEqual({
      subnetId: SUBNET,
      publicIPAddressConfiguration: { provision: 'nopublicipaddresses' },
    });
  });
});

describe('the deployment: POOL_SUBNET_ID and the door', () => {
  const env = {
    BATCH_ACCOUNT_URL: 'http://127.0.0.1:45123',
    BATCH_ACCOUNT_NAME: 'localbatch',
    BATCH_ACCOUNT_KEY: 'a2V5a2V5a2V5',
    AzureWebJobsStorage: 'UseDevelopmentStorage=true',
    STAGING_ACCOUNTS: 'DefaultEndpointsProtocol=http;AccountName=stage1;AccountKey=a2V5MQ==;BlobEndpoint=http://127.0.0.1:10000/stage1;',
  };

  it('POOL_SUBNET_ID is read as a subnet id, and refused by name when it is not one', () => {
    expect(loadConfig({ ...env, POOL_SUBNET_ID: SUBNET }).poolSubnetId).toBe(SUBNET);
    expect(loadConfig(env).poolSubnetId).toBeUndefined();
    try {
      loadConfig({ ...env, POOL_SUBNET_ID: 'vnet/compute' });
      throw new Error('expected a ConfigError');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems).toEqual([expect.stringMatching(/^POOL_SUBNET_ID: must be a subnet's Azure resource id/)]);
    }
  });

  it('refuses accelerated networking without the management plane, and publicIp without any subnet, with field paths', () => {
    const accel = spec(yaml(`{ subnetId: "${SUBNET}", acceleratedNetworking: true }`));
    expect(checkNetworkPolicy(accel, { managementPlane: false })).toEqual([
      { path: 'pool.network.acceleratedNetworking', message: expect.stringMatching(/data plane/) },
    ]);
    expect(checkNetworkPolicy(accel, { managementPlane: true })).toEqual([]);
    const noSubnet = spec(yaml('{ publicIp: none }'));
    expect(checkNetworkPolicy(noSubnet, { managementPlane: true })).toEqual([
      { path: 'pool.network.subnetId', message: expect.stringMatching(/POOL_SUBNET_ID/) },
    ]);
    expect(checkNetworkPolicy(noSubnet, { managementPlane: true, poolSubnetId: SUBNET })).toEqual([]);
    // Wired into the door's deployment checks (with the container policy, from the configuration).
    const config = loadConfig({ ...env, POOL_SUBNET_ID: SUBNET });
    const data = { accounts: [], containers: [] } as unknown as Parameters<typeof checkContainerPolicy>[2];
    expect(checkContainerPolicy(noSubnet, containerPolicy(config), data)).toEqual([]);
    expect(checkContainerPolicy(accel, containerPolicy(config), data).map((e) => e.path)).toEqual(['pool.network.acceleratedNetworking']);
  });
});
