/**
 * Pool add against what the account offers (model/catalog.ts): the VM size, the marketplace image and the node agent
 * SKU, and taskSlotsPerNode within the size's limit. Batch answers each with 400 InvalidPropertyValue naming the
 * property: an unknown size ("Invalid property value for vmSize", Batch service log quoted in
 * Azure/azure-batch-cli-extensions#119; Azure/batch-shipyard#53), an image with another release's agent SKU
 * (hashicorp/terraform#36698: ubuntu-server-container 20.04 with batch.node.ubuntu 24.04 → 400 InvalidPropertyValue).
 * Shared by the data plane's Pool_Add and the management plane's Pools_Create (one account, two doors).
 */
import { CATALOG_IMAGES, catalogImages, catalogSize, maxTaskSlots, NODE_AGENT_SKUS } from '../model/catalog';
import type { Json } from '../model/types';
import { errors } from './errors';

const VMC = 'virtualMachineConfiguration';

export function checkPoolCatalog(b: Json): void {
  const vmSize = String(b.vmSize);
  const size = catalogSize(vmSize);
  if (!size) throw errors.invalid('vmSize', vmSize, 'the VM size is not supported by the Batch service in this region');
  const slots = b.taskSlotsPerNode;
  if (typeof slots === 'number' && slots > maxTaskSlots(size)) {
    throw errors.invalid('taskSlotsPerNode', slots, `${size.name} allows at most ${maxTaskSlots(size)} task slots per node (4 × vCPUs, at most 256)`);
  }
  const vmc = (b[VMC] ?? {}) as Json;
  const agent = typeof vmc.nodeAgentSKUId === 'string' ? vmc.nodeAgentSKUId : '';
  if (!NODE_AGENT_SKUS.some((a) => a.toLowerCase() === agent.trim().toLowerCase())) {
    throw errors.invalid(`${VMC}.nodeAgentSKUId`, agent, `not a node agent SKU of this account (${NODE_AGENT_SKUS.join(', ')})`);
  }
  const ref = (vmc.imageReference ?? {}) as Json;
  // A Shared Image Gallery image is the customer's own: Batch cannot list it, only the agent SKU is checked.
  if (typeof ref.virtualMachineImageId === 'string' && ref.virtualMachineImageId) return;
  const images = catalogImages(ref);
  const urn = [ref.publisher, ref.offer, ref.sku].map((v) => String(v ?? '')).join(':');
  if (images.length === 0)
    throw errors.invalid(`${VMC}.imageReference`, urn, 'the image is not one of the images the Batch service supports (GET /supportedimages)');
  if (!images.some((i) => i.nodeAgentSKUId.toLowerCase() === agent.trim().toLowerCase())) {
    throw errors.invalid(`${VMC}.nodeAgentSKUId`, agent, `the image ${urn} needs the node agent SKU ${images.map((i) => i.nodeAgentSKUId).join(' or ')}`);
  }
}

/** For docs and tests: every supported image as publisher:offer:sku → agent. */
export const supportedImageUrns = (): string[] =>
  CATALOG_IMAGES.map((i) => `${i.imageReference.publisher}:${i.imageReference.offer}:${i.imageReference.sku} → ${i.nodeAgentSKUId}`);
