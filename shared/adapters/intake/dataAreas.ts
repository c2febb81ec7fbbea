/**
 * Whose data a job may touch: every path a spec names in the deployment's data accounts (inputs, files, start-task
 * files, SIF images, outputs, mounts) must lie in the submitter's own area `users/<ownerKey>/` (shared/adapters/auth/dataArea.ts)
 * or in a shared area (SHARED_DATA_AREAS) the submitter's roles open, for reading, or for writing when the area
 * allows it. Admins (Jobs.Admin, the operator) may name any area. Paths are used as written: nothing is rewritten
 * behind the user's back, so a spec naming another owner's area is refused (403 DataAreaForbidden), never moved.
 * Checked after the data-access policy (dataAccess.ts: which accounts and containers at all). Pure.
 */
import type { SharedDataArea } from '../config';
import { ownerDataArea, type DataCaller } from '../auth/dataArea';
import type { JobSpec, SpecError } from '../../core/spec';
import { formatIsoDuration } from '../../core/spec/duration';
import { storageNfsTarget } from '../../core/intake/workloadDataAccess';

/** The error code of every refusal by the area rule (HTTP 403, the queue's rejected row). */
export const DATA_AREA_FORBIDDEN = 'DataAreaForbidden';

export type AreaAccess = 'read' | 'write';

/** One place a spec names in the data accounts: the blob name (or name prefix) as the pipeline will use it. */
export interface AreaPath {
  /** The spec field to report. */
  path: string;
  account: string;
  container: string;
  /** The blob name, or the prefix every blob read or written there starts with ("" = the whole container). */
  name: string;
  access: AreaAccess;
}

/** Every path of the spec in the data accounts, with the access the job needs there. */
export function dataAreaPaths(spec: JobSpec): AreaPath[] {
  const out: AreaPath[] = [];
  spec.data.inputs.forEach((input, i) =>
    out.push({ path: `data.inputs[${i}].prefix`, account: input.account, container: input.container, name: input.prefix, access: 'read' }),
  );
  (spec.files ?? []).forEach((f, i) => {
    if (f.account === undefined || f.container === undefined) return;
    if (f.blob !== undefined) out.push({ path: `files[${i}].blob`, account: f.account, container: f.container, name: f.blob, access: 'read' });
    else out.push({ path: `files[${i}].prefix`, account: f.account, container: f.container, name: f.prefix ?? '', access: 'read' });
  });
  spec.pool.startTask?.resourceFiles.forEach((f, i) =>
    out.push({ path: `pool.startTask.resourceFiles[${i}].blob`, account: f.account, container: f.container, name: f.blob, access: 'read' }),
  );
  (spec.container?.images ?? []).forEach((img, i) => {
    if (typeof img === 'object')
      out.push({ path: `container.images[${i}].blob`, account: img.account, container: img.container, name: img.blob, access: 'read' });
  });
  // Every output (and log) is `<prefix>/…`; without a prefix intake gives the owner's own (withIntakeDefaults).
  if (spec.outputs?.prefix !== undefined) {
    out.push({ path: 'outputs.prefix', account: spec.outputs.account, container: spec.outputs.container, name: `${spec.outputs.prefix}/`, access: 'write' });
  }
  // A mount exposes its whole container or share on every node: only an area that is the whole container covers it.
  // A read-only mount (mounts[].readOnly, blobfuse.readOnly) needs read access only.
  (spec.mounts ?? []).forEach((m, i) => {
    const access: AreaAccess = m.readOnly ? 'read' : 'write';
    if (m.blobfuse)
      out.push({
        path: `mounts[${i}].blobfuse.container`,
        account: m.blobfuse.account,
        container: m.blobfuse.container,
        name: '',
        access: m.blobfuse.readOnly ? 'read' : access,
      });
    if (m.azureFiles)
      out.push({ path: `mounts[${i}].azureFiles.share`, account: m.azureFiles.account, container: m.azureFiles.share, name: '', access: 'write' });
    if (m.azureFilesNfs)
      out.push({ path: `mounts[${i}].azureFilesNfs.share`, account: m.azureFilesNfs.account, container: m.azureFilesNfs.share, name: '', access });
    const nfs = m.nfs ? storageNfsTarget(m.nfs.source) : undefined;
    if (nfs) out.push({ path: `mounts[${i}].nfs.source`, account: nfs.account, container: nfs.container, name: '', access });
  });
  return out;
}

/** Whether `caller` may use the shared area at all (its roles). */
export function opensSharedArea(area: SharedDataArea, caller: Pick<DataCaller, 'roles'>): boolean {
  return area.roles === '*' || area.roles.some((r) => caller.roles.includes(r));
}

/** The area rule for one path: why the caller may not use it, or undefined when it may. */
export function areaRefusal(caller: DataCaller, shared: readonly SharedDataArea[], p: Omit<AreaPath, 'path'>): string | undefined {
  if (caller.admin) return undefined;
  const own = ownerDataArea(caller.owner);
  if (own !== undefined && p.name.startsWith(own)) return undefined;
  const covering = shared.filter((a) => a.account === p.account && a.container === p.container && p.name.startsWith(a.prefix));
  if (covering.some((a) => opensSharedArea(a, caller) && (p.access === 'read' || a.write))) return undefined;
  const where = `${p.account}/${p.container}/${p.name}`;
  const yours = own === undefined ? 'you have no data area of your own' : `your data area is "${own}" in any container jobs may use (GET /api/me: dataArea)`;
  if (covering.some((a) => opensSharedArea(a, caller))) return `"${where}" is in a shared area that is read-only: jobs may not write there; ${yours}`;
  return p.name === ''
    ? `names the whole container "${p.account}/${p.container}", which is no area you may ${p.access === 'read' ? 'read' : 'write'}: ${yours}, and no shared area (SHARED_DATA_AREAS) covers the whole container for you`
    : `"${where}" is outside your data area and outside every shared area you may ${p.access === 'read' ? 'read' : 'write'}: ${yours}`;
}

/** Every path of the spec the caller may not use, each at its field path (intake answers 403 DataAreaForbidden). */
export function checkDataAreas(spec: JobSpec, caller: DataCaller, shared: readonly SharedDataArea[]): SpecError[] {
  return dataAreaPaths(spec).flatMap(({ path, ...p }) => {
    const why = areaRefusal(caller, shared, p);
    return why ? [{ path, message: why }] : [];
  });
}

/** The default outputs prefix of a job: `users/<ownerKey>/jobs/<jobId>`, inside its owner's area. */
export function defaultOutputsPrefix(owner: string, jobId: string): string | undefined {
  const area = ownerDataArea(owner);
  return area === undefined ? undefined : `${area}jobs/${jobId}`;
}

export interface IntakeDefaults {
  owner: string;
  jobId: string;
  /** DEFAULT_MAX_WALL_CLOCK_HOURS × 60; unset: no wall clock is added. */
  defaultMaxWallClockMinutes?: number;
  /** DEFAULT_OUTPUTS: where a job without outputs keeps its full logs; unset: nowhere. */
  defaultOutputs?: { account: string; container: string };
}

/**
 * What intake writes into a spec it accepts, so the recorded spec says what the job does (no hidden default that a
 * later version could change): the outputs prefix in the owner's area, and the deployment's default wall clock (the
 * node SAS lives as long as the job may run, plus the margin, never the whole SAS cap).
 */
export function withIntakeDefaults(spec: JobSpec, d: IntakeDefaults): JobSpec {
  let out = spec;
  // Every job keeps the full stdout/stderr of every task (not only the last lines the job view shows), unless it
  // opts out (cleanup.keepLogs: false) or the deployment names no place for them.
  const logsPrefix = defaultOutputsPrefix(d.owner, d.jobId);
  if (!spec.outputs && d.defaultOutputs && spec.cleanup.keepLogs !== false && logsPrefix !== undefined) {
    out = {
      ...out,
      outputs: {
        account: d.defaultOutputs.account,
        container: d.defaultOutputs.container,
        prefix: logsPrefix,
        when: 'always',
        files: [],
        logs: true,
        onUploadFailure: 'report',
      },
    };
  }
  const prefix = spec.outputs && spec.outputs.prefix === undefined ? defaultOutputsPrefix(d.owner, d.jobId) : undefined;
  if (spec.outputs && prefix !== undefined) out = { ...out, outputs: { ...spec.outputs, prefix } };
  if (spec.limits.maxWallClock === undefined && d.defaultMaxWallClockMinutes !== undefined)
    out = { ...out, limits: { ...out.limits, maxWallClock: formatIsoDuration(d.defaultMaxWallClockMinutes * 60_000) } };
  return out;
}

/**
 * Whether the API may serve a job's recorded outputs (listing and read SAS) to this reader: the blobs under
 * `<prefix>/` must lie in the job owner's area or in a shared area the reader may read (admins: anywhere). A row
 * written before the area rule (no `dataArea`) keeps its recorded prefix for whoever may see the job (its owner,
 * admins): those outputs were written where the old rules put them. Returns why not, or undefined.
 */
export function outputsReadRefusal(
  job: { owner: string; dataArea?: string },
  outputs: { account: string; container: string; prefix: string },
  reader: Pick<DataCaller, 'roles' | 'admin'>,
  shared: readonly SharedDataArea[],
): string | undefined {
  if (job.dataArea === undefined) return undefined;
  return areaRefusal({ owner: job.owner, roles: reader.roles, admin: reader.admin }, shared, {
    account: outputs.account,
    container: outputs.container,
    name: `${outputs.prefix}/`,
    access: 'read',
  });
}
