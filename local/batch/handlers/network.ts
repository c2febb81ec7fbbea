/**
 * A pool's networkConfiguration, checked as Batch checks it: the subnet is an ARM resource id of a subnet
 * (InvalidPropertyValue naming networkConfiguration.subnetId otherwise), public IP addresses are given with
 * "usermanaged" only and are ARM ids of public IP addresses, and a pool without public IP addresses needs a subnet.
 * The provisioning type is compared case-insensitively: the management plane spells it NoPublicIPAddresses and the
 * data plane nopublicipaddresses, and both reach this check (arm/poolModel.ts passes it through). What the emulator
 * does not model (per-job VNet assignment, inbound NAT endpoints) is 501.
 */
import type { Json } from '../model/types';
import { BatchHttpError, errors } from './errors';

/** As rules.ts's notEmulated (not imported: rules.ts imports this file). */
const notEmulated = (property: string, what: string) =>
  new BatchHttpError(501, 'NotImplemented', `The local Batch emulator does not implement ${what}.`, [{ key: 'PropertyName', value: property }]);

const GUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const RG = String.raw`[-\w._()]{0,89}[-\w_()]`;
const NAME = String.raw`[A-Za-z0-9](?:[A-Za-z0-9._-]{0,78}[A-Za-z0-9_])?`;
export const SUBNET_ID = new RegExp(`^/subscriptions/${GUID}/resourceGroups/${RG}/providers/Microsoft\\.Network/virtualNetworks/${NAME}/subnets/${NAME}$`, 'i');
const PUBLIC_IP_ID = new RegExp(`^/subscriptions/${GUID}/resourceGroups/${RG}/providers/Microsoft\\.Network/publicIPAddresses/${NAME}$`, 'i');

const present = (v: unknown) => v !== undefined && v !== null;

export function checkNetworkConfiguration(nc: unknown): void {
  if (!present(nc)) return;
  const n = nc as Json;
  const subnetId = n.subnetId;
  if (present(subnetId) && (typeof subnetId !== 'string' || !SUBNET_ID.test(subnetId))) {
    throw errors.invalid(
      'networkConfiguration.subnetId',
      subnetId,
      'The subnet id must be the ARM resource id of a subnet: /subscriptions/{subscription}/resourceGroups/{group}/providers/Microsoft.Network/virtualNetworks/{vnet}/subnets/{subnet}',
    );
  }
  const scope = String(n.dynamicVNetAssignmentScope ?? n.dynamicVnetAssignmentScope ?? 'none').toLowerCase();
  if (scope !== 'none') throw notEmulated('networkConfiguration.dynamicVNetAssignmentScope', 'per-job virtual network assignment');
  if (present(n.endpointConfiguration)) throw notEmulated('networkConfiguration.endpointConfiguration', 'inbound NAT pools');
  const pip = n.publicIPAddressConfiguration as Json | undefined;
  if (!present(pip)) return;
  const provision = String(pip?.provision ?? 'batchmanaged').toLowerCase();
  const ids = pip?.ipAddressIds;
  const where = 'networkConfiguration.publicIPAddressConfiguration';
  if (provision === 'usermanaged') {
    if (!Array.isArray(ids) || ids.length === 0) throw errors.missing(`${where}.ipAddressIds`);
    ids.forEach((id, i) => {
      if (typeof id !== 'string' || !PUBLIC_IP_ID.test(id))
        throw errors.invalid(`${where}.ipAddressIds[${i}]`, id, 'The id must be the ARM resource id of a public IP address');
    });
  } else if (Array.isArray(ids) && ids.length > 0) {
    throw errors.invalid(`${where}.ipAddressIds`, '(list)', `ipAddressIds are given only with provision usermanaged (got ${provision})`);
  }
  if (provision === 'nopublicipaddresses' && !present(subnetId)) {
    throw errors.invalid(
      `${where}.provision`,
      pip?.provision,
      'A pool without public IP addresses must be in a virtual network (give networkConfiguration.subnetId)',
    );
  }
}

/** The subnet a pool's nodes are in ('' when the pool has no virtual network), normalized for comparison. */
export function poolSubnet(spec: Json): string {
  const nc = spec.networkConfiguration as Json | undefined;
  return typeof nc?.subnetId === 'string' ? nc.subnetId.toLowerCase() : '';
}
