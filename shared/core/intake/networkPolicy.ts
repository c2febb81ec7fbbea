/**
 * What pool.network may ask for on this deployment, checked at the door with field paths: publicIp and accelerated
 * networking need a subnet (the spec's or the deployment's POOL_SUBNET_ID), and accelerated networking needs the
 * management plane (a pool identity): the data plane API the control plane speaks (2022-10-01) has no such field, and
 * a field the request cannot carry is refused, never dropped.
 */
import type { JobSpec, SpecError } from '../spec';

export interface NetworkPolicy {
  /** The deployment's default subnet (POOL_SUBNET_ID). */
  poolSubnetId?: string;
  /** Whether pools come from the management plane (the deployment has a pool identity). */
  managementPlane: boolean;
}

export function checkNetworkPolicy(spec: JobSpec, policy: NetworkPolicy): SpecError[] {
  const network = spec.pool.network;
  if (!network) return [];
  const errors: SpecError[] = [];
  if (!network.subnetId && !policy.poolSubnetId && (network.publicIp !== undefined || network.acceleratedNetworking !== undefined)) {
    errors.push({
      path: 'pool.network.subnetId',
      message: 'is required: this deployment has no default subnet (POOL_SUBNET_ID), and publicIp / acceleratedNetworking apply to a pool in a virtual network',
    });
  }
  if (network.acceleratedNetworking !== undefined && !policy.managementPlane) {
    errors.push({
      path: 'pool.network.acceleratedNetworking',
      message:
        'this deployment creates pools through the Batch data plane (no pool identity, POOL_IDENTITY_RESOURCE_ID), whose API has no accelerated networking setting; leave it out',
    });
  }
  return errors;
}
