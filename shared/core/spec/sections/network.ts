/**
 * pool.network: the virtual network a new pool joins (Batch networkConfiguration). The subnet and public IP
 * addresses are Azure resource ids, checked here by shape so a typo is refused at the door with the field path
 * instead of by Batch at pool creation; whether they exist is Batch's to say. A deployment may give a default
 * subnet (POOL_SUBNET_ID) so users need not know the ids: the spec's subnetId wins.
 */
import { z } from 'zod';

const GUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
/** Resource group: 1–90 of letters, digits, "._-()", not ending in "." (Azure's rule). */
const RG = String.raw`[-\w._()]{0,89}[-\w_()]`;
/** Virtual network and subnet names: 1–80 of letters, digits, "._-", starting with a letter or digit, ending in a letter, digit or "_". */
const NET_NAME = String.raw`[A-Za-z0-9](?:[A-Za-z0-9._-]{0,78}[A-Za-z0-9_])?`;
/** Public IP address names: 1–80, the same characters. */
const IP_NAME = NET_NAME;

/** `/subscriptions/<guid>/resourceGroups/<rg>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>` */
export const SUBNET_ID_RE = new RegExp(
  `^/subscriptions/${GUID}/resourceGroups/${RG}/providers/Microsoft\\.Network/virtualNetworks/${NET_NAME}/subnets/${NET_NAME}$`,
  'i',
);
/** `/subscriptions/<guid>/resourceGroups/<rg>/providers/Microsoft.Network/publicIPAddresses/<name>` */
export const PUBLIC_IP_ID_RE = new RegExp(`^/subscriptions/${GUID}/resourceGroups/${RG}/providers/Microsoft\\.Network/publicIPAddresses/${IP_NAME}$`, 'i');

export const SUBNET_ID_HINT =
  "a subnet's Azure resource id: /subscriptions/<subscription guid>/resourceGroups/<group>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>";

export const SubnetIdSchema = z.string({ error: `must be ${SUBNET_ID_HINT}` }).regex(SUBNET_ID_RE, { error: `must be ${SUBNET_ID_HINT}` });

export const PublicIpSchema = z
  .union(
    [
      z.enum(['none', 'batchManaged']),
      z.strictObject({
        userManaged: z
          .array(
            z.string({ error: "must be a public IP address's Azure resource id" }).regex(PUBLIC_IP_ID_RE, {
              error:
                "must be a public IP address's Azure resource id: /subscriptions/<guid>/resourceGroups/<group>/providers/Microsoft.Network/publicIPAddresses/<name>",
            }),
          )
          .min(1, { error: 'must list at least one public IP address id' })
          .max(16),
      }),
    ],
    { error: 'must be "none", "batchManaged" or { userManaged: [<public IP address id>, …] }' },
  )
  .meta({
    description:
      '"none": nodes get no public IP (reached through the subnet; needs the Batch account\'s simplified node communication, see infra/README.md). "batchManaged" (Batch\'s default): Batch creates the addresses. { userManaged: [ids] }: your public IP addresses (Batch uses one per 100 nodes; an MPI pool has at most 100).',
  });

export const PoolNetworkSchema = z
  .strictObject({
    subnetId: SubnetIdSchema.optional().meta({
      description:
        "The subnet the nodes join. Default: the deployment's POOL_SUBNET_ID; without either, the pool has no virtual network (and then publicIp and acceleratedNetworking are refused).",
    }),
    publicIp: PublicIpSchema.optional(),
    acceleratedNetworking: z.boolean({ error: 'must be true or false' }).optional().meta({
      description:
        'Accelerated networking (SR-IOV) on the nodes. Carried by the management plane only (pool identity deployments); the data plane API (2022-10-01) has no such field, so a data-plane deployment refuses it when the pool is created.',
    }),
  })
  .meta({
    description:
      'The virtual network of a new pool (Batch networkConfiguration): what makes a file server, NetApp Files, Azure Files NFS, Lustre or a licence server in your network reachable. Not allowed with pool.poolId (a reused pool keeps its network).',
  });

export type PoolNetwork = z.output<typeof PoolNetworkSchema>;

/** The pool's network as the pool create activity carries it: the spec's, with the deployment's default subnet. */
export interface PoolNetworkRequest {
  subnetId: string;
  publicIp?: 'none' | 'batchManaged' | { userManaged: string[] };
  acceleratedNetworking?: boolean;
}

/**
 * The network a new pool gets: the spec's section with the deployment's default subnet filled in; undefined when
 * neither names a subnet. Throws (as a planning error's message) when the section needs a subnet and has none.
 */
export function resolvePoolNetwork(network: PoolNetwork | undefined, defaultSubnetId: string | undefined): PoolNetworkRequest | { error: string } | undefined {
  const subnetId = network?.subnetId ?? defaultSubnetId;
  if (!subnetId) {
    if (network && (network.publicIp !== undefined || network.acceleratedNetworking !== undefined)) {
      return {
        error:
          'pool.network.subnetId is required (this deployment has no default subnet, POOL_SUBNET_ID): publicIp and acceleratedNetworking apply to a pool in a virtual network',
      };
    }
    return undefined;
  }
  return {
    subnetId,
    ...(network?.publicIp !== undefined ? { publicIp: network.publicIp } : {}),
    ...(network?.acceleratedNetworking !== undefined ? { acceleratedNetworking: network.acceleratedNetworking } : {}),
  };
}
