/**
 * Pool mounts, from the references a job spec holds to what Batch's mountConfiguration needs: secrets read from the
 * app settings MOUNT_SECRET_<name> (never in the spec, the history or a log), a SAS minted for blobfuse, and the
 * data-access policy checked again (an orchestration's input is not only written by intake).
 */
import type { MountSpec } from '../../shared/adapters/batch';
import type { MountRequest } from '../../shared/core/planning/workloadData';
import type { BlobAccount } from '../../shared/adapters/storage/clients';
import { containerSasUrl } from '../../shared/adapters/storage/sas';
import { batchMountRequests, blobfusePermissions, mountSpec } from '../../shared/core/planning/batchRequests';
import { mountServerSource } from '../../shared/core/planning/nodeFilesystems';

export interface MountDeps {
  /** The MOUNT_SECRET_<name> settings, by name. */
  secrets: Readonly<Record<string, string>>;
  /** A data account for one of its containers (or file shares); throws when the policy refuses it. */
  dataAccount(account: string, container: string): BlobAccount;
  /** Refuses a file server the deployment does not list (NFS and SMB sources not on a data account). */
  checkSource(source: string): void;
  /** When a blobfuse SAS expires. */
  sasExpiresOn: Date;
}

/** Thrown for a mount that cannot be made (a missing secret, a refused source): the job fails with this message. */
export class MountRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MountRefused';
  }
}

function secret(deps: MountDeps, name: string, mount: string): string {
  const value = deps.secrets[name];
  if (value === undefined) throw new MountRefused(`mount ${mount}: secretRef "${name}" names no app setting MOUNT_SECRET_${name} on this deployment`);
  return value;
}

/** The Azure Files URL of a share: the account's file endpoint (from its blob endpoint) and the share. */
export function azureFileUrl(account: BlobAccount, share: string): string {
  const blob = new URL(account.service.url);
  // https://<account>.blob.<suffix>/ → https://<account>.file.<suffix>/<share>; a local endpoint keeps its host.
  const host = blob.host.replace(/^([a-z0-9]+)\.blob\./, '$1.file.');
  const path = blob.pathname.replace(/\/+$/, '');
  return `${blob.protocol}//${host}${path}/${share}`;
}

export async function resolveMounts(requests: readonly MountRequest[], deps: MountDeps): Promise<MountSpec[]> {
  const out: MountSpec[] = [];
  // Lustre is mounted by the start task (no Batch mount), from a source the deployment lists all the same.
  for (const m of requests) if (m.lustre) deps.checkSource(mountServerSource(m) as string);
  for (const m of batchMountRequests(requests)) {
    if (m.nfs || m.azureFilesNfs || m.netappFiles) {
      deps.checkSource(mountServerSource(m) as string);
      out.push(mountSpec(m, {}));
    } else if (m.cifs) {
      deps.checkSource(m.cifs.source);
      out.push(mountSpec(m, { secret: secret(deps, m.cifs.secretRef, m.name) }));
    } else if (m.azureFiles) {
      const account = deps.dataAccount(m.azureFiles.account, m.azureFiles.share);
      out.push(mountSpec(m, { azureFileUrl: azureFileUrl(account, m.azureFiles.share), secret: secret(deps, m.azureFiles.secretRef, m.name) }));
    } else if (m.blobfuse) {
      const account = deps.dataAccount(m.blobfuse.account, m.blobfuse.container);
      const url = await containerSasUrl(account, m.blobfuse.container, blobfusePermissions(m), deps.sasExpiresOn);
      // Batch takes the SAS token itself, without the "?".
      out.push(mountSpec(m, { sasToken: url.slice(url.indexOf('?') + 1) }));
    } else {
      throw new MountRefused(`mount ${m.name}: names no file system (nfs, azureFiles, blobfuse or cifs)`);
    }
  }
  return out;
}
