/**
 * Which node images can run BeeOND (scratch.kind "beeond"). BeeOND needs the BeeGFS client kernel module built for
 * the node's kernel, so the pool's start task installs the BeeGFS packages from the BeeGFS repository with the
 * kernel headers (shared/core/planning/nodeFilesystems.ts, as Batch Shipyard's node preparation did). That works where
 * the BeeGFS 7.4 packages are published for the distribution and its package mirrors are live; the catalog's OS
 * says which. Custom images are the deployment's: the start task checks for `beeond` and says so when it is missing.
 */
import type { NodeImage } from './catalog';

/** The BeeGFS release whose repository the start task adds. */
export const BEEGFS_RELEASE = '7.4.6';

/** Distributions (as the catalog spells NodeImage.os) that BeeGFS 7.4 packages. */
const SUPPORTED_OS = /^(Ubuntu (20\.04|22\.04|24\.04)|AlmaLinux [89]|RHEL [89]|Rocky Linux [89])$/;

/** Why the image cannot run BeeOND, or undefined when it can (custom images: decided on the node). */
export function beeondProblem(image: NodeImage): string | undefined {
  if (image.id.startsWith('custom:')) return undefined;
  if (SUPPORTED_OS.test(image.os)) return undefined;
  if (/^CentOS 7/.test(image.os)) {
    return `${image.title} (${image.os}) cannot run BeeOND: CentOS 7 is end of life, its package mirrors are archived and BeeGFS ${BEEGFS_RELEASE} publishes no packages for it, so the start task cannot install the client module; use almalinux-hpc or ubuntu-hpc, or scratch.kind "masterNfs"`;
  }
  return `${image.title} (${image.os}) cannot run BeeOND: BeeGFS ${BEEGFS_RELEASE} publishes no packages for it; use an Ubuntu 20.04/22.04/24.04 or AlmaLinux 8/9 image, or scratch.kind "masterNfs"`;
}
