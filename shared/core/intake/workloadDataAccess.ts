/**
 * The data-access policy for the data sections of a spec: files for every node, outputs and pool mounts. Blob
 * sources and destinations, Azure Files shares and blobfuse containers must be the data accounts' (checked like
 * inputs); NFS on a storage account counts as that account; any other file server must be listed in
 * DATA_MOUNT_SOURCES; an https URL must not name an internal host or the app's own storage (addressPolicy.ts).
 */
import type { JobSpec, SpecError } from '../spec';
import { urlRefusal } from './addressPolicy';
import { mountServerSource } from '../planning/nodeFilesystems';

/** The policy's verdict on one container (or file share) of an account: why not, or undefined. */
export type Refusal = (account: string, container: string) => string | undefined;

export interface WorkloadPolicy {
  /** The data accounts jobs may name. */
  accounts: readonly string[];
  /** The app's own accounts (host and staging storage). */
  ownAccounts?: readonly string[];
  /** Internal hosts jobs may name anyway (ALLOWED_INTERNAL_HOSTS). */
  allowedInternalHosts?: readonly string[];
  /** File servers jobs may mount, exact or "prefix*". */
  mountSources?: readonly string[];
  /** The mount secrets the deployment publishes, by name (unset: not checked). */
  mountSecretNames?: readonly string[];
}

/** `<account>.blob.<suffix>:/<account>/<container>` or `<account>.file.<suffix>:/<account>/<share>`: NFS served by a storage account. */
const STORAGE_NFS_RE = /^([a-z0-9]{3,24})\.(?:privatelink\.)?(?:blob|file)\.[a-z0-9.-]+:\/([a-z0-9]{3,24})\/([a-z0-9-]{3,63})(?:\/.*)?$/;

/** The data account and container (or share) an NFS export on Azure Storage names, or undefined for another server. */
export function storageNfsTarget(source: string): { account: string; exportAccount: string; container: string } | undefined {
  const m = STORAGE_NFS_RE.exec(source);
  return m ? { account: m[1], exportAccount: m[2], container: m[3] } : undefined;
}

/** True when `source` is one of the allowed entries (exact, or a prefix ending in "*"). */
export function mountSourceAllowed(allowed: readonly string[], source: string): boolean {
  return allowed.some((a) => (a.endsWith('*') ? source.startsWith(a.slice(0, -1)) : source === a));
}

export function checkWorkloadDataAccess(spec: JobSpec, policy: WorkloadPolicy, refusal: Refusal): SpecError[] {
  const errors: SpecError[] = [];
  const sources = policy.mountSources ?? [];
  /** A refused container is reported at `<path>.container` (`containerKey`), a refused account at `<path>.account`. */
  const check = (path: string, account: string, container: string, containerKey = 'container') => {
    const why = refusal(account, container);
    if (why) errors.push({ path: policy.accounts.includes(account) ? `${path}.${containerKey}` : `${path}.account`, message: why });
  };

  (spec.files ?? []).forEach((f, i) => {
    if (f.account !== undefined && f.container !== undefined) check(`files[${i}]`, f.account, f.container);
    if (f.url !== undefined) {
      const why = urlRefusal(policy, f.url);
      if (why) errors.push({ path: `files[${i}].url`, message: why });
    }
  });
  if (spec.outputs) check('outputs', spec.outputs.account, spec.outputs.container);

  (spec.mounts ?? []).forEach((m, i) => {
    const at = `mounts[${i}]`;
    if (m.azureFiles) check(`${at}.azureFiles`, m.azureFiles.account, m.azureFiles.share, 'share');
    if (m.blobfuse) check(`${at}.blobfuse`, m.blobfuse.account, m.blobfuse.container);
    if (m.nfs) {
      const onStorage = storageNfsTarget(m.nfs.source);
      const why = onStorage
        ? onStorage.account !== onStorage.exportAccount
          ? `names storage account "${onStorage.account}" but its export path is of account "${onStorage.exportAccount}"`
          : refusal(onStorage.account, onStorage.container)
        : mountSourceAllowed(sources, m.nfs.source)
          ? undefined
          : notListed(m.nfs.source, sources);
      if (why) errors.push({ path: `${at}.nfs.source`, message: why });
    }
    if (m.azureFilesNfs) check(`${at}.azureFilesNfs`, m.azureFilesNfs.account, m.azureFilesNfs.share, 'share');
    // NetApp Files and Lustre are servers by address: the deployment lists them like any file server.
    for (const [kind, field] of [
      ['netappFiles', 'address'],
      ['lustre', 'mgs'],
    ] as const) {
      const source = m[kind] ? mountServerSource(m) : undefined;
      if (source && !mountSourceAllowed(sources, source)) errors.push({ path: `${at}.${kind}.${field}`, message: notListed(source, sources) });
    }
    if (m.cifs && !mountSourceAllowed(sources, m.cifs.source)) errors.push({ path: `${at}.cifs.source`, message: notListed(m.cifs.source, sources) });
    const names = policy.mountSecretNames;
    for (const [kind, ref] of [
      ['azureFiles', m.azureFiles?.secretRef],
      ['cifs', m.cifs?.secretRef],
    ] as const) {
      if (names && ref !== undefined && !names.includes(ref)) {
        errors.push({ path: `${at}.${kind}.secretRef`, message: `names no mount secret of this deployment: the app setting MOUNT_SECRET_${ref} is not set` });
      }
    }
  });
  return errors;
}

function notListed(source: string, allowed: readonly string[]): string {
  return allowed.length
    ? `"${source}" is not a file server jobs may mount on this deployment (DATA_MOUNT_SOURCES: ${allowed.join(', ')})`
    : `"${source}" is not allowed: this deployment lets jobs mount no file servers (DATA_MOUNT_SOURCES is empty); NFS on the data accounts' Blob or Files storage needs no entry`;
}
