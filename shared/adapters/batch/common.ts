/**
 * Small pieces the adapter modules share: ownership metadata, plain-JSON shapes for resource files
 * and environment, and conversions from SDK models (which carry Date objects) to JSON.
 */
import type { BatchServiceModels } from '@azure/batch';
import { BatchError } from './errors';
import { callWithRetry, type RetryRuntime } from './retry';

/** Metadata that marks Batch resources as created by this control plane, and for which job. */
export const OWNER_KEY = 'hpc-cp-owner';
export const OWNER_VALUE = 'hpc-mpi-control-plane';
export const JOB_KEY = 'hpc-cp-job';
/**
 * On pools: the owner id of whoever submitted the job that created the pool (the principal's `<tid>/<oid>`,
 * "operator", "queue"), stored as-is: Batch sets no length limit on a metadata value (REST spec, MetadataItem) and an
 * owner id is at most 73 characters. Who may run jobs on a kept pool is decided from it (shared/core/intake/poolAccess.ts).
 */
export const SUBMITTER_KEY = 'hpc-cp-submitter';

export interface NameValue {
  name: string;
  value: string;
}

/** A file Batch downloads to the node before the task runs. */
export interface ResourceFileSpec {
  /** Exactly one source: an http(s) URL (e.g. a blob with a read-only SAS) or a container URL (+ prefix). */
  httpUrl?: string;
  storageContainerUrl?: string;
  blobPrefix?: string;
  /** Where to put it, relative to the task working directory. */
  filePath?: string;
  /** Octal mode on Linux, e.g. "0755". */
  fileMode?: string;
  /** Read with this user-assigned identity of the pool (a URL without SAS), instead of a SAS in the URL. */
  identityResourceId?: string;
}

/**
 * A file (or glob) Batch uploads to a blob container after the task process ended. `filePattern` is relative to the
 * task working directory or absolute, and Batch expands `$VAR` from the task's environment first.
 */
export interface OutputFileSpec {
  filePattern: string;
  /** The container's URL with a SAS granting write (create) permission. */
  containerUrl: string;
  /** The blob (pattern without wildcards) or virtual directory (with wildcards) the files go to. */
  path?: string;
  uploadCondition: 'taskSuccess' | 'taskFailure' | 'taskCompletion';
}

export function toOutputFiles(files: OutputFileSpec[] | undefined): BatchServiceModels.OutputFile[] | undefined {
  if (!files || files.length === 0) return undefined;
  return files.map((f) => ({
    filePattern: f.filePattern,
    destination: { container: stripUndefined({ containerUrl: f.containerUrl, path: f.path }) },
    uploadOptions: { uploadCondition: f.uploadCondition.toLowerCase() as BatchServiceModels.OutputFileUploadCondition },
  }));
}

export interface ContainerSettingsSpec {
  imageName: string;
  /** Extra `docker create` options, e.g. "--network host --ipc host". */
  containerRunOptions?: string;
  registry?: { registryServer: string; userName?: string; password?: string; identityResourceId?: string };
  workingDirectory?: 'taskWorkingDirectory' | 'containerImageDefault';
}

/** Marks a Batch job the control plane made for housekeeping (e.g. "container-cleanup"), not to run a job. */
export const PURPOSE_KEY = 'hpc-cp-purpose';

export function ownershipMetadata(jobId: string, purpose?: string): BatchServiceModels.MetadataItem[] {
  return [{ name: OWNER_KEY, value: OWNER_VALUE }, { name: JOB_KEY, value: jobId }, ...(purpose ? [{ name: PURPOSE_KEY, value: purpose }] : [])];
}

/** The metadata of a pool created for `jobId`, submitted by `owner` (absent only in callers that predate owners). */
export function poolOwnershipMetadata(jobId: string, owner: string | undefined): BatchServiceModels.MetadataItem[] {
  return [...ownershipMetadata(jobId), ...(owner !== undefined ? [{ name: SUBMITTER_KEY, value: owner }] : [])];
}

/** The submitter recorded on a pool this control plane created, or undefined (not ours, or created before owners). */
export function submitterOf(metadata: BatchServiceModels.MetadataItem[] | undefined): string | undefined {
  if (ownerJobOf(metadata) === undefined) return undefined;
  return (metadata ?? []).find((m) => m.name === SUBMITTER_KEY)?.value;
}

/** The housekeeping purpose a Batch job was made for, or undefined for a job's own Batch job. */
export function purposeOf(metadata: BatchServiceModels.MetadataItem[] | undefined): string | undefined {
  return (metadata ?? []).find((m) => m.name === PURPOSE_KEY)?.value;
}

/** The control-plane job id a resource was created for, or undefined when we did not create it. */
export function ownerJobOf(metadata: BatchServiceModels.MetadataItem[] | undefined): string | undefined {
  const map = new Map((metadata ?? []).map((m) => [m.name, m.value]));
  return map.get(OWNER_KEY) === OWNER_VALUE ? map.get(JOB_KEY) : undefined;
}

export function toEnvironmentSettings(env: NameValue[] | undefined): BatchServiceModels.EnvironmentSetting[] | undefined {
  return env && env.length ? env.map((e) => ({ name: e.name, value: e.value })) : undefined;
}

export function toResourceFiles(files: ResourceFileSpec[] | undefined): BatchServiceModels.ResourceFile[] | undefined {
  if (!files || files.length === 0) return undefined;
  return files.map((f, i) => {
    const sources = [f.httpUrl, f.storageContainerUrl].filter(Boolean).length;
    if (sources !== 1) {
      throw new BatchError({
        code: 'InvalidResourceFile',
        operation: 'build resource files',
        resource: `resource file ${i}`,
        message: 'exactly one of httpUrl or storageContainerUrl must be given',
      });
    }
    return stripUndefined({
      httpUrl: f.httpUrl,
      storageContainerUrl: f.storageContainerUrl,
      blobPrefix: f.blobPrefix,
      filePath: f.filePath,
      fileMode: f.fileMode,
      identityReference: f.identityResourceId ? { resourceId: f.identityResourceId } : undefined,
    });
  });
}

export function toContainerSettings(c: ContainerSettingsSpec | undefined): BatchServiceModels.TaskContainerSettings | undefined {
  if (!c) return undefined;
  return stripUndefined({
    imageName: c.imageName,
    containerRunOptions: c.containerRunOptions,
    workingDirectory: c.workingDirectory,
    registry: c.registry
      ? stripUndefined({
          registryServer: c.registry.registryServer,
          userName: c.registry.userName,
          password: c.registry.password,
          identityReference: c.registry.identityResourceId ? { resourceId: c.registry.identityResourceId } : undefined,
        })
      : undefined,
  });
}

/** Whole seconds as the ISO 8601 duration Batch takes (PT90S). */
export function secondsToDuration(seconds: number | undefined): string | undefined {
  if (seconds === undefined) return undefined;
  if (!Number.isFinite(seconds) || seconds <= 0) throw new RangeError(`duration must be positive seconds, got ${seconds}`);
  return `PT${Math.ceil(seconds)}S`;
}

export function iso(date: Date | string | undefined): string | undefined {
  if (date === undefined || date === null) return undefined;
  return typeof date === 'string' ? date : date.toISOString();
}

/** Drops undefined fields so request bodies stay minimal and snapshots stay plain JSON. */
export function stripUndefined<T extends object>(value: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = v;
  return out as T;
}

/** Follows odata.nextLink pages until done, each page fetched through callWithRetry. */
export async function collectPages<T>(
  retry: RetryRuntime,
  what: { operation: string; resource: string },
  first: () => Promise<T[] & { odatanextLink?: string }>,
  next: (link: string) => Promise<T[] & { odatanextLink?: string }>,
): Promise<T[]> {
  const items: T[] = [];
  let page = await callWithRetry(retry, what, first);
  items.push(...page);
  while (page.odatanextLink) {
    const link = page.odatanextLink;
    page = await callWithRetry(retry, what, () => next(link));
    items.push(...page);
  }
  return items;
}

/** True for the Batch "is gone" answers that make a delete or terminate already done. */
export function isGone(err: unknown, codes: string[]): boolean {
  return err instanceof BatchError && (err.status === 404 || codes.includes(err.code));
}
