/**
 * The network of infra/main.bicep (infra/README.md, "Network"), read without a Bicep compiler (tests/deploy/bicep.ts):
 * a virtual network with a compute subnet the app names as POOL_SUBNET_ID, private endpoints for the storage
 * accounts, the registry, Key Vault and Batch's node management, each in a private DNS zone linked to the network,
 * and a README row for each piece.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { BicepFile } from './bicep';

const ROOT = path.resolve(__dirname, '..', '..');
const bicep = new BicepFile(readFileSync(path.join(ROOT, 'infra', 'main.bicep'), 'utf8'));
const readme = readFileSync(path.join(ROOT, 'infra', 'README.md'), 'utf8');

describe('infra/main.bicep: the network', () => {
  it('has a virtual network with a compute and an endpoints subnet', () => {
    const vnet = bicep.resource('vnet');
    expect(vnet.type).toBe('Microsoft.Network/virtualNetworks');
    expect(vnet.body).toMatch(/name: 'compute'[\s\S]*addressPrefix: computeSubnetPrefix/);
    expect(vnet.body).toMatch(/name: 'endpoints'[\s\S]*privateEndpointNetworkPolicies: 'Disabled'/);
    expect(bicep.resource('computeSubnet').body).toMatch(/parent: vnet[\s\S]*name: 'compute'/);
  });

  it('tells the app the compute subnet (POOL_SUBNET_ID) and outputs it', () => {
    expect(bicep.appSettings('app').find((s) => s.name === 'POOL_SUBNET_ID')?.value).toBe('computeSubnet.id');
    expect(bicep.code).toMatch(/^output POOL_SUBNET_ID string = computeSubnet\.id$/m);
  });

  it('has a private endpoint for the data and staging accounts, the registry, Key Vault and Batch node management, each with its DNS zone', () => {
    const code = bicep.code;
    expect(code).toMatch(/\{ name: 'pe-data-blob', id: dataAccount\.id, group: 'blob', zone: 0 \}/);
    expect(code).toMatch(/\[for \(name, i\) in stagingAccountNames: \{ name: 'pe-\$\{name\}-blob', id: staging\[i\]\.id, group: 'blob', zone: 0 \}\]/);
    expect(code).toMatch(/\{ name: 'pe-acr', id: acr\.id, group: 'registry', zone: 1 \}/);
    expect(code).toMatch(/\{ name: 'pe-vault', id: vault\.id, group: 'vault', zone: 2 \}/);
    expect(code).toMatch(/\{ name: 'pe-batch-nodemanagement', id: batch\.id, group: 'nodeManagement', zone: 3 \}/);
    // The zones, in the order the endpoints index them.
    const zones = /var privateZones = \[([\s\S]*?)\n\]/
      .exec(code)?.[1]
      .trim()
      .split('\n')
      .map((l) => l.trim());
    expect(zones).toEqual([
      "'privatelink.blob.${environment().suffixes.storage}'",
      "'privatelink.azurecr.io'",
      "'privatelink.vaultcore.azure.net'",
      "'privatelink.batch.azure.com'",
    ]);
    expect(bicep.resource('privateEndpoints').body).toMatch(/subnet: \{ id: endpointsSubnet\.id \}/);
    expect(bicep.resource('privateEndpointZones').body).toMatch(/privateDnsZoneId: zones\[ep\.zone\]\.id/);
    expect(bicep.resource('zoneLinks').body).toMatch(/virtualNetwork: \{ id: vnet\.id \}/);
  });

  it('infra/README.md has a row for each network piece', () => {
    const section = readme.slice(readme.indexOf('## Network'), readme.indexOf('## Not done yet'));
    for (const piece of [
      '`vnet`',
      'subnet `compute`',
      'subnet `endpoints`',
      '`pe-data-blob`',
      '`pe-acr`',
      '`pe-vault`',
      '`pe-batch-nodemanagement`',
      '`zones`',
      '`privateEndpointZones`',
    ]) {
      expect(section).toContain(piece);
    }
  });
});
