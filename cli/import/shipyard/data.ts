/**
 * Shipyard's data settings into the spec's data sections (shared/core/spec/sections/files.ts, storage.ts, outputs.ts):
 *
 * - `resource_files` (task, multi_instance, pool) and `input_data.azure_storage` → `files`: every node gets them in the
 *   MPI task's working directory before any rank starts (https URLs as they are; blobs of data accounts by account,
 *   container and blob or prefix, read through a SAS the pipeline mints: a SAS in the Shipyard file is dropped).
 * - `auto_scratch` → `scratch` (an NFS export of the master's local disk instead of BeeOND over every node).
 * - `shared_data_volumes` (azureblob, azurefile, storage_cluster, custom_linux_mount) → `mounts`, made by Batch on every
 *   node at $AZ_BATCH_NODE_MOUNTS_DIR/<name> (inside the container too: the node root is bound).
 * - `output_data.azure_storage` → `outputs`.
 * Pure.
 */
import * as P from '../../../shared/core/spec/patterns';
import {
  FILE_MODE_RE,
  GLOB_RE,
  MOUNT_OPTIONS_RE,
  NFS_SOURCE_RE,
  CIFS_SOURCE_RE,
  RELATIVE_PATH_RE,
  httpsUrlProblem,
} from '../../../shared/core/spec/sections/storageFields';
import { getIn, isObj, setIn, type MappingContext, type Obj, type SpecDraft } from './context';
import type { VolumeRef } from './globalResources';
import { joinIndex, joinKey, type MappingStatus } from './report';
import type { ShipyardFileRole } from './source';
import { blobUrlParts, resolveStorageAlias } from './storage';

type Role = ShipyardFileRole;

/** How a Shipyard storage alias became an account of the spec: named by credentials.yaml, or taken as the name. */
function accountNote(account: { account?: string; assumed: boolean }): string {
  return account.assumed
    ? `the alias is taken as the account name ${account.account} (no credentials.yaml names it); it must be one of DATA_ACCOUNTS`
    : `account ${account.account} (one of DATA_ACCOUNTS)`;
}

function push(d: SpecDraft, key: 'files' | 'mounts', value: Obj): number {
  const list = (getIn(d.spec, [key]) as unknown[] | undefined) ?? [];
  setIn(d.spec, [key], [...list, value]);
  return list.length;
}

/** Where Shipyard said a file goes, as a path relative to the MPI task's working directory, if it can be one. */
function relativeTarget(path: string): { path?: string; how: 'same' | 'moved' | 'invalid' } {
  const trimmed = path.replace(/^\$\{?AZ_BATCH_TASK_WORKING_DIR\}?\/?/, '');
  if (trimmed === '') return { how: 'same' };
  if (RELATIVE_PATH_RE.test(trimmed)) return { path: trimmed, how: trimmed === path || path.startsWith('$') ? 'same' : 'moved' };
  const base = trimmed.replace(/\/+$/, '').split('/').pop() ?? '';
  return RELATIVE_PATH_RE.test(base) ? { path: base, how: 'moved' } : { how: 'invalid' };
}

/**
 * One `resource_files` entry into `files`. `where` says whose file it was in Shipyard: the master's (a task's own
 * resource files: Batch downloads them for the primary only), every node's (multi_instance common files, which Batch
 * puts in the task directory, one level above the working directory), or the start task's (not carried: see pool.ts).
 */
export function resourceFile(ctx: MappingContext, role: Role, item: unknown, path: string, drafts: SpecDraft[], where: 'master' | 'common'): void {
  const i = isObj(item) ? item : {};
  const src = typeof i.blob_source === 'string' ? i.blob_source : undefined;
  const filePath = typeof i.file_path === 'string' ? i.file_path : undefined;
  const sas = ctx.secrets.within(role, joinKey(path, 'blob_source'));
  const blob = src ? blobUrlParts(src) : undefined;
  const urlProblem = src && !blob ? httpsUrlProblem(src) : undefined;
  const mode = i.file_mode;
  const modeOk = mode === undefined || mode === null || (typeof mode === 'string' && FILE_MODE_RE.test(mode));
  const pathOk = filePath !== undefined && RELATIVE_PATH_RE.test(filePath);
  const entry: Obj | undefined = !pathOk
    ? undefined
    : blob
      ? { account: blob.account, container: blob.container, blob: blob.blob, path: filePath }
      : src && !urlProblem
        ? { url: src, path: filePath }
        : undefined;
  if (entry && typeof mode === 'string' && modeOk) entry.mode = mode.padStart(4, '0');
  if (entry) for (const d of drafts) push(d, 'files', { ...entry });
  const target = entry ? 'files' : undefined;
  const how =
    where === 'master'
      ? "every node gets it in the working directory before any rank starts (Batch gave a task's own files to the master only)"
      : 'every node gets it, in the working directory ($AZ_BATCH_TASK_WORKING_DIR/<file_path>; Batch put common files one level up, in the task directory)';
  ctx.visit(
    role,
    path,
    item,
    {
      blob_source: (_s, q) => {
        if (!entry) {
          if (sas)
            return ctx.secret(
              role,
              q,
              'unsupported',
              'a URL with a SAS that is not a blob of a storage account: not carried (reported, never written); put the file in a data account',
              drafts,
            );
          return ctx.unsupported(
            role,
            q,
            !pathOk
              ? 'its file_path is not a relative path in the working directory'
              : `${urlProblem ?? 'not a URL'}: not carried (files take https URLs without a query, or blobs of data accounts)`,
            drafts,
          );
        }
        // Approximated either way: the master's file reaches every node, a common file lands one directory lower.
        const status: MappingStatus = 'approximated';
        if (sas)
          ctx.secret(
            role,
            q,
            status,
            `the SAS in the URL is dropped (reported, never written): the blob is read through a short-lived SAS the pipeline mints (the account must be one of the deployment's DATA_ACCOUNTS); ${how}`,
            drafts,
            'files',
          );
        else
          ctx.entry(
            role,
            {
              path: q,
              status,
              target: 'files',
              note: `${blob ? `blob ${blob.account}/${blob.container}/${blob.blob} (a data account: DATA_ACCOUNTS)` : 'https URL'}: ${how}`,
            },
            drafts,
            { commentAt: 'files' },
          );
      },
      file_path: (_f, q) =>
        entry
          ? ctx.mapped(role, q, target, 'its path in the working directory', drafts, { noComment: true })
          : ctx.unsupported(role, q, 'not carried with its file (see blob_source)', drafts),
      file_mode: (_m, q) =>
        entry && modeOk
          ? ctx.mapped(role, q, target, 'its mode on the nodes', drafts, { noComment: true })
          : ctx.unsupported(role, q, modeOk ? 'not carried with its file' : 'not an octal mode such as "0755"', drafts),
    },
    {},
    drafts,
  );
}

/**
 * `input_data` (pool, job or task level): `azure_storage` entries that name blobs become `files` by prefix, every
 * node getting every blob (as Shipyard's job-level input did on each node); `azure_batch` (files of another task) has
 * no counterpart.
 */
export function inputData(ctx: MappingContext, role: Role, value: unknown, path: string, drafts: SpecDraft[], level: 'pool' | 'job' | 'task'): void {
  const when = level === 'pool' ? 'at pool start (start task)' : level === 'job' ? 'in the job preparation task' : 'on the master before the command';
  ctx.visit(
    role,
    path,
    value,
    {
      azure_storage: (list, p) => {
        if (!Array.isArray(list)) return ctx.unsupported(role, p, 'must be a list', drafts);
        list.forEach((item, i) => azureStorageInput(ctx, role, item, joinIndex(p, i), drafts, when));
      },
      azure_batch: (_l, p) =>
        ctx.unsupported(
          role,
          p,
          "files of another Batch task's node cannot be fetched: have that job upload them (outputs) and name the blobs in files",
          drafts,
        ),
    },
    {},
    drafts,
  );
}

function azureStorageInput(ctx: MappingContext, role: Role, item: unknown, path: string, drafts: SpecDraft[], when: string): void {
  const i = isObj(item) ? item : {};
  const account = resolveStorageAlias(i.storage_account_settings, ctx.sources.credentials?.value);
  const remote = typeof i.remote_path === 'string' ? i.remote_path.replace(/^\/+/, '') : '';
  const [container, ...rest] = remote.split('/');
  const prefix = rest.join('/');
  const fileShare = i.is_file_share === true;
  const local = typeof i.local_path === 'string' ? relativeTarget(i.local_path) : { how: 'same' as const };
  const usable = !fileShare && account.account && P.BLOB_CONTAINER_RE.test(container ?? '') && P.BLOB_PREFIX_RE.test(prefix) && local.how !== 'invalid';
  const entry: Obj | undefined = usable ? { account: account.account, container, prefix, ...(local.path ? { path: local.path } : {}) } : undefined;
  if (entry) for (const d of drafts) push(d, 'files', { ...entry });
  const reason = fileShare
    ? 'an Azure Files share: name it as a mount (mounts: azureFiles) instead'
    : !account.account
      ? 'its storage account is not known: give credentials.yaml, or name the blobs in files'
      : local.how === 'invalid'
        ? 'local_path is not a directory the spec can name'
        : 'remote_path is not "<container>/<prefix>" of blob names the spec accepts';
  const note = `every node gets every blob under ${container}/${prefix} in the working directory${local.path ? ` at ${local.path}/` : ''} before any rank starts (Shipyard copied it ${when} with blobxfer); each blob keeps its full name (${prefix}…) below that directory: check the paths your commands expect`;
  ctx.visit(
    role,
    path,
    item,
    {
      storage_account_settings: (_v, p) =>
        entry
          ? ctx.entry(
              role,
              {
                path: p,
                status: account.assumed ? 'approximated' : 'mapped',
                target: 'files',
                note: accountNote(account),
              },
              drafts,
              { noComment: true },
            )
          : ctx.unsupported(role, p, reason, drafts),
      remote_path: (_v, p) =>
        entry
          ? ctx.entry(role, { path: p, status: 'approximated', target: 'files', note }, drafts, { commentAt: 'files' })
          : ctx.unsupported(role, p, reason, drafts),
      local_path: (_v, p) =>
        entry
          ? ctx.entry(
              role,
              {
                path: p,
                status: local.how === 'same' ? 'mapped' : 'approximated',
                target: 'files',
                note:
                  local.how === 'same'
                    ? 'the directory in the working directory'
                    : `delivered under the working directory at ${local.path} instead: point the commands there`,
              },
              drafts,
              { noComment: true },
            )
          : ctx.unsupported(role, p, reason, drafts),
      is_file_share: (_v, p) =>
        fileShare ? ctx.unsupported(role, p, reason, drafts) : ctx.mapped(role, p, undefined, 'blob storage', drafts, { noComment: true }),
      include: (_v, p) =>
        ctx.entry(
          role,
          {
            path: p,
            status: entry ? 'approximated' : 'unsupported',
            note: entry ? 'every blob under the prefix is delivered: the filter is not applied (narrow the prefix, or list blobs in files)' : reason,
          },
          drafts,
        ),
      exclude: (_v, p) =>
        ctx.entry(
          role,
          {
            path: p,
            status: entry ? 'approximated' : 'unsupported',
            note: entry ? 'every blob under the prefix is delivered: the filter is not applied' : reason,
          },
          drafts,
        ),
      blobxfer_extra_options: (_v, p) => ctx.unsupported(role, p, 'blobxfer is not used: Batch downloads the files', drafts),
    },
    {},
    drafts,
  );
}

/** Shipyard's output conditions → outputs.when. */
const WHEN: Record<string, 'success' | 'failure' | 'always'> = { tasksuccess: 'success', taskfailure: 'failure', taskcompletion: 'always' };

/**
 * `output_data.azure_storage` → `outputs`: one destination per job (the first entry's); further entries to the same
 * destination add their patterns, others are unsupported.
 */
export function outputData(ctx: MappingContext, value: unknown, path: string, drafts: SpecDraft[]): void {
  const role = 'jobs' as const;
  ctx.visit(
    role,
    path,
    value,
    {
      azure_storage: (list, p) => {
        if (!Array.isArray(list)) return ctx.unsupported(role, p, 'must be a list', drafts);
        list.forEach((item, i) => azureStorageOutput(ctx, item, joinIndex(p, i), drafts));
      },
    },
    {},
    drafts,
  );
}

function azureStorageOutput(ctx: MappingContext, item: unknown, path: string, drafts: SpecDraft[]): void {
  const out = storageOutput(ctx, item);
  const status = out.valid ? addOutput(drafts, out) : 'new';
  const ok = out.valid && status !== 'conflict';
  const why = status === 'conflict' ? 'a second destination: a job uploads its outputs to one container and prefix' : out.reason;
  reportStorageOutput(ctx, item, path, drafts, out, ok, why);
}

/** One azure_storage output as the outputs section would name it, whether it can, and why not. */
interface StorageOutput {
  account: ReturnType<typeof resolveStorageAlias>;
  container: string;
  prefix: string;
  local: ReturnType<typeof relativeTarget>;
  patterns: string[];
  when: string | undefined;
  fileShare: boolean;
  valid: boolean;
  /** Why it is not carried, when it is not valid. */
  reason: string;
}

function storageOutput(ctx: MappingContext, item: unknown): StorageOutput {
  const i = isObj(item) ? item : {};
  const account = resolveStorageAlias(i.storage_account_settings, ctx.sources.credentials?.value);
  const remote = typeof i.remote_path === 'string' ? i.remote_path.replace(/^\/+|\/+$/g, '') : '';
  const [container, ...rest] = remote.split('/');
  const prefix = rest.join('/');
  const local = typeof i.local_path === 'string' ? relativeTarget(i.local_path) : { how: 'same' as const };
  const includes = Array.isArray(i.include) && i.include.length ? i.include.map(String) : ['**/*'];
  const patterns = includes.map((g) => (local.path ? `${local.path}/${g}` : g));
  const when = typeof i.condition === 'string' ? WHEN[i.condition.toLowerCase()] : 'always';
  const fileShare = i.is_file_share === true;
  const valid =
    !fileShare &&
    !!account.account &&
    P.BLOB_CONTAINER_RE.test(container ?? '') &&
    (prefix === '' || P.BLOB_PREFIX_RE.test(prefix)) &&
    local.how !== 'invalid' &&
    when !== undefined &&
    patterns.every((g) => GLOB_RE.test(g));
  const reason = fileShare
    ? 'Azure Files destinations are not supported: outputs go to blob storage'
    : !account.account
      ? 'its storage account is not known: give credentials.yaml'
      : when === undefined
        ? `condition ${JSON.stringify(i.condition)} is none of tasksuccess, taskfailure, taskcompletion`
        : 'remote_path, local_path or include is not something the outputs section can name';
  return { account, container, prefix, local, patterns, when, fileShare, valid, reason };
}

/** The output into every job's outputs: a new section, files added to the same destination, or a second destination. */
function addOutput(drafts: SpecDraft[], out: StorageOutput): 'new' | 'added' | 'conflict' {
  const { account, container, prefix, when, patterns } = out;
  let status: 'new' | 'added' | 'conflict' = 'new';
  for (const d of drafts) {
    const existing = getIn(d.spec, ['outputs']) as Obj | undefined;
    const files = patterns.map((pattern) => ({ pattern, from: 'workdir' }));
    if (!existing) {
      setIn(d.spec, ['outputs'], { account: account.account, container, ...(prefix ? { prefix } : {}), when, files });
    } else if (existing.account === account.account && existing.container === container && (existing.prefix ?? '') === prefix && existing.when === when) {
      existing.files = [...(existing.files as unknown[]), ...files];
      status = 'added';
    } else status = 'conflict';
  }
  return status;
}

/** How each key of the output was carried (or why not). */
function reportStorageOutput(ctx: MappingContext, item: unknown, path: string, drafts: SpecDraft[], out: StorageOutput, ok: boolean, why: string): void {
  const role = 'jobs' as const;
  const { account, container, prefix, local, when, fileShare } = out;
  ctx.visit(
    role,
    path,
    item,
    {
      storage_account_settings: (_v, p) =>
        ok
          ? ctx.entry(
              role,
              {
                path: p,
                status: account.assumed ? 'approximated' : 'mapped',
                target: 'outputs.account',
                note: accountNote(account),
              },
              drafts,
            )
          : ctx.unsupported(role, p, why, drafts),
      remote_path: (_v, p) =>
        ok
          ? ctx.entry(
              role,
              {
                path: p,
                status: 'approximated',
                target: 'outputs.container, outputs.prefix',
                note: `uploaded to ${container}/${prefix || '<job id>'}/workdir/<path> (the spec keeps the working directory's files under workdir/, and every rank's logs under logs/)${prefix ? '' : "; Shipyard wrote to the container's root"}`,
              },
              drafts,
              { commentAt: 'outputs.container' },
            )
          : ctx.unsupported(role, p, why, drafts),
      local_path: (_v, p) =>
        ok
          ? ctx.entry(
              role,
              {
                path: p,
                status: local.how === 'same' ? 'mapped' : 'approximated',
                target: 'outputs.files',
                note: local.how === 'same' ? 'the directory below the working directory' : `taken as ${local.path} below the working directory`,
              },
              drafts,
            )
          : ctx.unsupported(role, p, why, drafts),
      include: (_v, p) => (ok ? ctx.mapped(role, p, 'outputs.files', 'glob patterns below the directory', drafts) : ctx.unsupported(role, p, why, drafts)),
      exclude: (_v, p) =>
        ctx.entry(
          role,
          { path: p, status: ok ? 'approximated' : 'unsupported', note: ok ? 'exclusions are not applied: every file the patterns match is uploaded' : why },
          drafts,
        ),
      condition: (_v, p) => (ok ? ctx.mapped(role, p, 'outputs.when', when as string, drafts) : ctx.unsupported(role, p, why, drafts)),
      is_file_share: (_v, p) =>
        fileShare || !ok ? ctx.unsupported(role, p, why, drafts) : ctx.mapped(role, p, undefined, 'blob storage', drafts, { noComment: true }),
      blobxfer_extra_options: (_v, p) => ctx.unsupported(role, p, 'blobxfer is not used: Batch uploads the files', drafts),
    },
    {},
    drafts,
  );
}

/**
 * A shared data volume a job names → a pool mount. Batch mounts it at $AZ_BATCH_NODE_MOUNTS_DIR/<name> on every node
 * (inside the container too: the node root is bound), not at the volume's container_path: commands that use that
 * path must change, which the spec's header says.
 */
export function sharedVolumeMount(ctx: MappingContext, name: string, vol: VolumeRef, refPath: string, drafts: SpecDraft[]): void {
  const v = vol.value;
  const account = resolveStorageAlias(v.storage_account_settings, ctx.sources.credentials?.value);
  const readOnly = typeof v.bind_options === 'string' && v.bind_options.split(',').includes('ro');
  const mountOptions = Array.isArray(v.mount_options)
    ? v.mount_options.map(String).join(' ')
    : typeof v.mount_options === 'string'
      ? v.mount_options
      : undefined;
  const options = mountOptions && MOUNT_OPTIONS_RE.test(mountOptions) ? mountOptions : undefined;
  const vm: VolumeMount = { why: '', status: 'approximated', notes: [] };
  driverMount(ctx, { name, vol, account, readOnly, options }, drafts, vm);
  const { mount, notes } = vm;
  if (mount) for (const d of drafts) push(d, 'mounts', { ...mount });
  const containerPath = typeof v.container_path === 'string' ? v.container_path : undefined;
  if (mount && containerPath) {
    notes.push(`mounted at $AZ_BATCH_NODE_MOUNTS_DIR/${name} (inside the container too), not at ${containerPath}: TODO point the commands there`);
    for (const d of drafts)
      d.header.push(`TODO: the volume "${name}" is at $AZ_BATCH_NODE_MOUNTS_DIR/${name}, not ${containerPath}: change the paths in the commands`);
    vm.status = 'approximated';
  }
  if (mount) {
    ctx.entry('jobs', { path: refPath, status: vm.status, target: 'mounts', note: notes.join('; ') }, drafts, { commentAt: 'mounts' });
    reportMountedVolume(ctx, { name, vol, account, readOnly, options }, { mountOptions, containerPath }, drafts);
  } else {
    ctx.unsupported('jobs', refPath, `shared data volume "${name}": ${vm.why}`, drafts);
    ctx.unsupported('config', vol.path, vm.why, drafts);
  }
}

/** A shared data volume as a mount: what it is, or why it cannot be one; the notes and status of its mapping. */
interface VolumeMount {
  mount?: Obj;
  why: string;
  status: MappingStatus;
  notes: string[];
}

/** What every volume driver reads. */
interface VolumeFacts {
  name: string;
  vol: VolumeRef;
  account: ReturnType<typeof resolveStorageAlias>;
  readOnly: boolean;
  /** The mount options the spec can carry. */
  options: string | undefined;
}

/** The mount of each volume driver Batch can mount (into `vm`). */
function driverMount(ctx: MappingContext, f: VolumeFacts, drafts: SpecDraft[], vm: VolumeMount): void {
  const driver = typeof f.vol.value.volume_driver === 'string' ? f.vol.value.volume_driver : '';
  if (driver === 'azureblob') blobMount(f, vm);
  else if (driver === 'azurefile') azureFilesMount(f, drafts, vm);
  else if (driver === 'storage_cluster') storageClusterMount(f, drafts, vm);
  else if (driver === 'custom_linux_mount') customLinuxMount(ctx, f, drafts, vm);
  else if (driver === 'glusterfs_on_compute')
    vm.why = 'GlusterFS across the compute nodes is not supported: use the shared scratch (scratch) or an NFS / Azure Files mount';
  else vm.why = `volume driver ${JSON.stringify(driver)} is not supported`;
}

function blobMount({ name, vol, account, readOnly, options }: VolumeFacts, vm: VolumeMount): void {
  const v = vol.value;
  const { notes } = vm;
  let mount: Obj | undefined;
  let why = '';
  const container = v.azure_blob_container_name;
  if (account.account && typeof container === 'string' && P.BLOB_CONTAINER_RE.test(container)) {
    mount = { name, blobfuse: { account: account.account, container, readOnly, ...(options ? { options } : {}) } };
    notes.push('blobfuse with a SAS the pipeline mints (no account key)');
  } else
    why = !account.account
      ? 'its storage account is not known: give credentials.yaml'
      : typeof container === 'string' && /^<.*>$/.test(container)
        ? `azure_blob_container_name is the recipe's placeholder ${container}: fill it in and import again (or add the mount to the spec)`
        : 'azure_blob_container_name is not a blob container name';
  vm.mount = mount;
  vm.why = why;
}

function azureFilesMount({ name, vol, account, options }: VolumeFacts, drafts: SpecDraft[], vm: VolumeMount): void {
  const v = vol.value;
  const { notes } = vm;
  let mount: Obj | undefined;
  let why = '';
  const share = v.azure_file_share_name;
  if (account.account && typeof share === 'string' && P.BLOB_CONTAINER_RE.test(share)) {
    const secretRef = `${account.account.toUpperCase()}_KEY`;
    mount = { name, azureFiles: { account: account.account, share, secretRef, ...(options ? { options } : {}) } };
    notes.push(`Azure Files needs the account key: TODO publish it as the app setting MOUNT_SECRET_${secretRef} (a Key Vault reference in Azure)`);
    for (const d of drafts)
      d.header.push(
        `TODO: mounts "${name}" (Azure Files) reads the account key from the app setting MOUNT_SECRET_${secretRef}: publish it (a Key Vault reference in Azure)`,
      );
  } else why = account.account ? 'azure_file_share_name is not a share name' : 'its storage account is not known: give credentials.yaml';
  vm.mount = mount;
  vm.why = why;
}

function storageClusterMount({ name, options }: VolumeFacts, drafts: SpecDraft[], vm: VolumeMount): void {
  const { notes } = vm;
  const host = `${name.toLowerCase().replace(/[^a-z0-9-]/g, '-')}-nfs-server-todo`;
  vm.mount = { name, nfs: { source: `${host}:/data`, ...(options ? { options: `-o ${options}` } : {}) } };
  notes.push(
    "a Shipyard storage cluster (fs.yaml) is mounted as NFS: TODO set its export (host:/path, from `shipyard fs cluster status`) and list it in the deployment's DATA_MOUNT_SOURCES; a GlusterFS cluster cannot be mounted by Batch",
  );
  for (const d of drafts)
    d.header.push(`TODO: mounts "${name}" nfs.source is a placeholder: set the storage cluster's NFS export (host:/path) and list it in DATA_MOUNT_SOURCES`);
}

function customLinuxMount(ctx: MappingContext, { name, vol }: VolumeFacts, drafts: SpecDraft[], vm: VolumeMount): void {
  const v = vol.value;
  const { notes } = vm;
  let mount: Obj | undefined;
  let why = '';
  let status: MappingStatus = vm.status;
  const fstab = isObj(v.fstab_entry) ? v.fstab_entry : {};
  const spec = typeof fstab.fs_spec === 'string' ? fstab.fs_spec : '';
  const type = typeof fstab.fs_vfstype === 'string' ? fstab.fs_vfstype : '';
  const mntops = typeof fstab.fs_mntops === 'string' && fstab.fs_mntops !== 'defaults' ? fstab.fs_mntops : undefined;
  const secretInOptions = ctx.secrets.within('config', joinKey(vol.path, 'fstab_entry'));
  if (/^nfs4?$/.test(type) && NFS_SOURCE_RE.test(spec) && !secretInOptions) {
    mount = { name, nfs: { source: spec, ...(mntops && MOUNT_OPTIONS_RE.test(`-o ${mntops}`) ? { options: `-o ${mntops}` } : {}) } };
    notes.push("NFS: the server must be listed in the deployment's DATA_MOUNT_SOURCES");
    status = 'mapped';
  } else if (type === 'cifs' && CIFS_SOURCE_RE.test(spec)) {
    const user = /(?:^|,)(?:username|user)=([^,]+)/.exec(mntops ?? '')?.[1];
    const secretRef = `${name.toUpperCase().replace(/[^A-Z0-9]+/g, '_')}_PASSWORD`.replace(/^[^A-Z]+/, 'CIFS_');
    if (user && P.REGISTRY_USERNAME_RE.test(user)) {
      mount = { name, cifs: { source: spec, username: user, secretRef } };
      if (secretInOptions) {
        ctx.secret(
          'config',
          joinKey(joinKey(vol.path, 'fstab_entry'), 'fs_mntops'),
          'approximated',
          `a password in the mount options: reported by path, never written; the mount reads it from the app setting MOUNT_SECRET_${secretRef}`,
          drafts,
          'mounts',
        );
      }
      notes.push(
        `CIFS: TODO publish the password as the app setting MOUNT_SECRET_${secretRef}; the share must be listed in DATA_MOUNT_SOURCES; other mount options are not carried`,
      );
      for (const d of drafts) d.header.push(`TODO: mounts "${name}" (CIFS) reads its password from the app setting MOUNT_SECRET_${secretRef}: publish it`);
    } else why = 'a CIFS mount needs a username in fs_mntops';
  } else
    why = secretInOptions
      ? 'its mount options hold a credential (reported by path, never written): give the share as a mount with secretRef'
      : `file system "${type}" cannot be mounted by Batch (nfs and cifs can)`;
  vm.mount = mount;
  vm.why = why;
  vm.status = status;
}

/** Each key of a volume carried into its mount. */
function reportMountedVolume(
  ctx: MappingContext,
  { name, vol, account, readOnly, options }: VolumeFacts,
  { mountOptions, containerPath }: { mountOptions: string | undefined; containerPath: string | undefined },
  drafts: SpecDraft[],
): void {
  ctx.visit(
    'config',
    vol.path,
    vol.value,
    Object.fromEntries(
      [
        'volume_driver',
        'storage_account_settings',
        'azure_blob_container_name',
        'azure_file_share_name',
        'container_path',
        'bind_options',
        'mount_options',
        'fstab_entry',
        'volume_type',
        'volume_options',
      ].map((k) => [
        k,
        (_x: unknown, q: string) => {
          if (k === 'mount_options' && mountOptions && !options)
            return ctx.unsupported('config', q, 'mount options the spec can carry are words of letters, digits and ",=._/:+-"', drafts);
          if (k === 'storage_account_settings' && account.assumed)
            return ctx.approximated('config', q, 'mounts', accountNote(account), drafts, { noComment: true });
          if (k === 'container_path' && containerPath)
            return ctx.approximated('config', q, 'mounts', `mounted at $AZ_BATCH_NODE_MOUNTS_DIR/${name} instead`, drafts, { noComment: true });
          if (k === 'bind_options') return ctx.mapped('config', q, 'mounts', readOnly ? 'read-only' : 'read-write', drafts, { noComment: true });
          ctx.mapped('config', q, 'mounts', 'carried into the mount', drafts, { noComment: true });
        },
      ]),
    ),
    {},
    drafts,
  );
}
