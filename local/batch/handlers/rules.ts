/**
 * Batch's documented rules that the spec's schema cannot say (one of two properties, minimum durations,
 * autoscale combinations, resource file sources), and the features the emulator does not carry out, which
 * are refused with 501 naming the property rather than accepted and ignored. Pure: each check throws the
 * BatchHttpError Batch would answer, or returns.
 */
import { parseDurationMs } from '../model/duration';
import type { Json } from '../model/types';
import { BatchHttpError, errors } from './errors';
import { checkNetworkConfiguration } from './network';

const MINUTE = 60_000;

/** A property Batch accepts but the emulator cannot honour: 501, so nobody mistakes silence for support. */
export function notEmulated(property: string, what: string): BatchHttpError {
  return new BatchHttpError(501, 'NotImplemented', `The local Batch emulator does not implement ${what}.`, [{ key: 'PropertyName', value: property }]);
}

function present(v: unknown): boolean {
  return v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0);
}

const at = (path: string, prop: string) => (path ? `${path}.${prop}` : prop);

/** resizeTimeout on add, resize and removenodes: "The minimum value is 5 minutes" (400). */
export function checkMinimumDuration(b: Json, prop: string, minMs: number, path = ''): void {
  const v = b[prop];
  if (typeof v !== 'string') return;
  const ms = parseDurationMs(v);
  if (ms === undefined) throw errors.invalid(at(path, prop), v, 'must be an ISO 8601 duration');
  if (ms < minMs) throw errors.invalid(at(path, prop), v, `the minimum is ${minMs / MINUTE} minutes`);
}

/** displayName: "any Unicode characters up to a maximum length of 1024". */
export function checkDisplayName(b: Json, path = ''): void {
  if (typeof b.displayName === 'string' && b.displayName.length > 1024)
    throw errors.invalid(at(path, 'displayName'), `${b.displayName.slice(0, 32)}…`, 'at most 1024 characters');
}

/** Metadata names must not be empty (EmptyMetadataKey). */
export function checkMetadata(list: unknown, path = 'metadata'): void {
  if (!Array.isArray(list)) return;
  list.forEach((m: Json, i) => {
    if (typeof m?.name !== 'string' || m.name === '') {
      throw new BatchHttpError(400, 'EmptyMetadataKey', 'The key for one of the metadata key-value pairs is empty.', [
        { key: 'PropertyName', value: `${path}[${i}].name` },
      ]);
    }
  });
}

/**
 * "The autoStorageContainerName, storageContainerUrl and httpUrl properties are mutually exclusive and one of
 * them must be specified"; with httpUrl, filePath is required; filePath cannot break out of the working directory.
 */
export function checkResourceFiles(list: unknown, path: string): void {
  if (!Array.isArray(list)) return;
  list.forEach((rf: Json, i) => {
    const where = `${path}[${i}]`;
    const sources = ['autoStorageContainerName', 'storageContainerUrl', 'httpUrl'].filter((k) => present(rf[k]));
    if (sources.length === 0) throw errors.missing(`${where}.httpUrl`);
    if (sources.length > 1)
      throw errors.invalid(
        `${where}.${sources[1]}`,
        rf[sources[1]],
        `give only one of autoStorageContainerName, storageContainerUrl and httpUrl (also given: ${sources[0]})`,
      );
    if (sources[0] === 'httpUrl' && !present(rf.filePath)) throw errors.missing(`${where}.filePath`);
    if (present(rf.blobPrefix) && sources[0] === 'httpUrl')
      throw errors.invalid(`${where}.blobPrefix`, rf.blobPrefix, 'blobPrefix applies to container sources only');
    if (typeof rf.filePath === 'string' && escapes(rf.filePath))
      throw errors.invalid(`${where}.filePath`, rf.filePath, 'the path cannot break out of the task working directory');
    if (typeof rf.fileMode === 'string' && !/^[0-7]{3,4}$/.test(rf.fileMode))
      throw errors.invalid(`${where}.fileMode`, rf.fileMode, 'an octal mode such as 0755');
  });
}

function escapes(rel: string): boolean {
  if (rel.startsWith('/')) return true;
  let depth = 0;
  for (const part of rel.split(/[\\/]/)) {
    if (part === '..') depth--;
    else if (part && part !== '.') depth++;
    if (depth < 0) return true;
  }
  return false;
}

/** A start, preparation, release or manager task's resource files and the features it may not use. */
export function checkNodeTask(t: unknown, path: string, userAccounts?: unknown): void {
  if (!t || typeof t !== 'object') return;
  const task = t as Json;
  checkUserIdentity(task.userIdentity, `${path}.userIdentity`, userAccounts);
  // StartTask.maxTaskRetryCount and TaskConstraints.maxTaskRetryCount: "-1 means retry without limit"; less is invalid.
  checkRetryCount(task.maxTaskRetryCount, `${path}.maxTaskRetryCount`);
  checkRetryCount((task.constraints as Json | undefined)?.maxTaskRetryCount, `${path}.constraints.maxTaskRetryCount`);
  checkResourceFiles(task.resourceFiles, `${path}.resourceFiles`);
  if (present(task.applicationPackageReferences)) throw noApplications(`${path}.applicationPackageReferences`);
}

/**
 * UserIdentity: "The userName and autoUser properties are mutually exclusive; you must specify one but not both"
 * (spec, UserIdentity). A username must name one of the pool's userAccounts (given when the pool is known).
 */
export function checkUserIdentity(ui: unknown, path: string, userAccounts?: unknown): void {
  if (!ui || typeof ui !== 'object') return;
  const u = ui as Json;
  if (present(u.username) && present(u.autoUser))
    throw errors.invalid(`${path}.autoUser`, '(object)', 'username and autoUser are mutually exclusive; give one but not both');
  if (typeof u.username === 'string' && userAccounts !== undefined) {
    const names = Array.isArray(userAccounts) ? (userAccounts as Json[]).map((a) => a?.name) : [];
    if (!names.includes(u.username))
      throw errors.invalid(`${path}.username`, u.username, "the pool has no user account of this name (see the pool's userAccounts)");
  }
}

/** maxTaskRetryCount: "Specifying -1 causes the Batch service to retry the Task without limit"; below -1 is invalid. */
export function checkRetryCount(v: unknown, path: string): void {
  if (typeof v === 'number' && v < -1) throw errors.invalid(path, v, 'must be -1 (retry without limit) or more');
}

/** JobPreparationTask.id / JobReleaseTask.id: "any combination of alphanumeric characters including hyphens and underscores", at most 64. */
const NODE_TASK_ID = /^[A-Za-z0-9_-]{1,64}$/;
export function checkNodeTaskId(t: unknown, path: string): void {
  const id = (t as Json | undefined)?.id;
  if (typeof id === 'string' && !NODE_TASK_ID.test(id))
    throw errors.invalid(`${path}.id`, id, 'letters, digits, hyphens and underscores only, at most 64 characters');
}

/** taskSlotsPerNode: "The maximum value is the smaller of 4 times the number of cores of the vmSize of the pool or 256." */
export const MAX_TASK_SLOTS_PER_NODE = 256;
export function checkTaskSlots(b: Json, vCpus?: number): void {
  const v = b.taskSlotsPerNode;
  if (typeof v !== 'number') return;
  const max = vCpus ? Math.min(4 * vCpus, MAX_TASK_SLOTS_PER_NODE) : MAX_TASK_SLOTS_PER_NODE;
  if (v < 1 || v > max) throw errors.invalid('taskSlotsPerNode', v, `must be from 1 to ${max}`);
}

/** The emulated account has no application packages, so every reference is one Batch cannot satisfy. */
export function noApplications(property: string): BatchHttpError {
  return new BatchHttpError(
    409,
    'InvalidApplicationPackageReferences',
    'One or more application package references could not be satisfied: the emulated account has no applications.',
    [{ key: 'PropertyName', value: property }],
  );
}

/**
 * Pool add: a VM configuration (Cloud Services pools were retired on 29 February 2024), autoscale settings
 * that fit together, resizeTimeout of at least 5 minutes, and no feature the emulator only pretends to have.
 */
export function checkPoolAdd(b: Json): void {
  if (present(b.cloudServiceConfiguration)) {
    throw errors.invalid(
      'cloudServiceConfiguration',
      b.cloudServiceConfiguration,
      'Cloud Services Configuration pools were retired on 29 February 2024; use virtualMachineConfiguration',
    );
  }
  if (!present(b.virtualMachineConfiguration)) throw errors.missing('virtualMachineConfiguration');
  checkDisplayName(b);
  checkMinimumDuration(b, 'resizeTimeout', 5 * MINUTE);
  checkAutoScale(b);
  checkMetadata(b.metadata);
  checkTaskSlots(b);
  checkNodeTask(b.startTask, 'startTask', b.userAccounts ?? []);
  const vmc = b.virtualMachineConfiguration as Json;
  const containers = (vmc.containerConfiguration ?? {}) as Json;
  const unemulated: [boolean, string, string][] = [
    [
      present(containers.containerImageNames),
      'virtualMachineConfiguration.containerConfiguration.containerImageNames',
      'container image prefetch (pull the images in a start task or a node task)',
    ],
    [present(vmc.dataDisks), 'virtualMachineConfiguration.dataDisks', 'data disks'],
    [present(vmc.extensions), 'virtualMachineConfiguration.extensions', 'VM extensions'],
    [present(b.certificateReferences), 'certificateReferences', 'certificates'],
    [present(b.applicationLicenses), 'applicationLicenses', 'application licenses'],
  ];
  for (const [given, property, what] of unemulated) if (given) throw notEmulated(property, what);
  if (present(b.applicationPackageReferences)) throw noApplications('applicationPackageReferences');
  checkMountConfiguration(b.mountConfiguration);
  checkNetworkConfiguration(b.networkConfiguration);
}

const MOUNT_KINDS = ['azureBlobFileSystemConfiguration', 'nfsMountConfiguration', 'cifsMountConfiguration', 'azureFileShareConfiguration'];

/**
 * mountConfiguration: each item one file system ("mutually exclusive with all other properties"), a relativeMountPath
 * below AZ_BATCH_NODE_MOUNTS_DIR used once, and for blobfuse exactly one of accountKey, sasKey and identityReference.
 * Identity references are 501 until the emulator serves managed identities.
 */
export function checkMountConfiguration(list: unknown): void {
  if (!Array.isArray(list)) return;
  const paths = new Map<string, number>();
  list.forEach((m: Json, i) => {
    const where = `mountConfiguration[${i}]`;
    const kinds = MOUNT_KINDS.filter((k) => present(m?.[k]));
    if (kinds.length === 0) throw errors.missing(`${where}.nfsMountConfiguration`);
    if (kinds.length > 1) throw errors.invalid(`${where}.${kinds[1]}`, '(object)', `give only one file system per mount (also given: ${kinds[0]})`);
    const c = m[kinds[0]] as Json;
    const rel = String(c.relativeMountPath ?? '');
    if (rel === '' || rel.startsWith('/') || rel.split(/[\\/]/).some((p) => p === '..')) {
      throw errors.invalid(`${where}.${kinds[0]}.relativeMountPath`, rel, 'a relative path below the mounts directory');
    }
    if (paths.has(rel))
      throw errors.invalid(`${where}.${kinds[0]}.relativeMountPath`, rel, `mountConfiguration[${paths.get(rel)}] already mounts at this path`);
    paths.set(rel, i);
    if (kinds[0] === 'azureBlobFileSystemConfiguration') {
      const auth = ['accountKey', 'sasKey', 'identityReference'].filter((k) => present(c[k]));
      if (auth.length === 0) throw errors.missing(`${where}.${kinds[0]}.sasKey`);
      if (auth.length > 1)
        throw errors.invalid(
          `${where}.${kinds[0]}.${auth[1]}`,
          '(secret)',
          `give exactly one of accountKey, sasKey and identityReference (also given: ${auth[0]})`,
        );
      if (auth[0] === 'identityReference')
        throw notEmulated(`${where}.${kinds[0]}.identityReference`, 'blobfuse mounts with a managed identity (give a sasKey)');
    }
  });
}

/**
 * "If enableAutoScale is true, the autoScaleFormula element is required" and the targets must not be given;
 * "if false, at least one of targetDedicatedNodes and targetLowPriorityNodes must be specified" and the formula
 * must not be. Valid autoscale settings are refused with 501: the emulator does not evaluate formulas.
 */
export function checkAutoScale(b: Json): void {
  const invalid = (property: string, reason: string) =>
    new BatchHttpError(400, 'InvalidAutoScalingSettings', 'The specified auto-scaling settings are not valid.', [
      { key: 'PropertyName', value: property },
      { key: 'Reason', value: reason },
    ]);
  if (b.enableAutoScale === true) {
    for (const target of ['targetDedicatedNodes', 'targetLowPriorityNodes']) {
      if (b[target] !== undefined && b[target] !== null) throw invalid(target, 'must not be given when enableAutoScale is true');
    }
    if (typeof b.autoScaleFormula !== 'string' || b.autoScaleFormula.trim() === '')
      throw invalid('autoScaleFormula', 'is required when enableAutoScale is true');
    const interval = b.autoScaleEvaluationInterval;
    if (typeof interval === 'string') {
      const ms = parseDurationMs(interval);
      if (ms === undefined || ms < 5 * MINUTE || ms > 168 * 60 * MINUTE)
        throw errors.invalid('autoScaleEvaluationInterval', interval, 'must be from 5 minutes to 168 hours');
    }
    throw notEmulated('enableAutoScale', 'autoscale formulas (give the pool fixed targets)');
  }
  if (present(b.autoScaleFormula)) throw invalid('autoScaleFormula', 'must not be given when enableAutoScale is false');
  if ((b.targetDedicatedNodes ?? null) === null && (b.targetLowPriorityNodes ?? null) === null) {
    throw errors.missing('targetDedicatedNodes');
  }
}

/** Job add: no auto pools or job manager tasks (501), the preparation and release tasks' rules. */
export function checkJobAdd(b: Json): void {
  checkDisplayName(b);
  checkMetadata(b.metadata);
  if (present((b.poolInfo as Json | undefined)?.autoPoolSpecification))
    throw notEmulated('poolInfo.autoPoolSpecification', 'auto pools (create the pool and give poolInfo.poolId)');
  if (present(b.jobManagerTask)) throw notEmulated('jobManagerTask', 'job manager tasks');
  checkNodeTaskId(b.jobPreparationTask, 'jobPreparationTask');
  checkNodeTaskId(b.jobReleaseTask, 'jobReleaseTask');
  checkNodeTask(b.jobPreparationTask, 'jobPreparationTask');
  checkNodeTask(b.jobReleaseTask, 'jobReleaseTask');
}

/** Every ExitOptions of a task's exitConditions, with where it sits. */
export function exitOptionsOf(exitConditions: unknown): { path: string; options: Json }[] {
  const ec = (exitConditions ?? {}) as Json;
  const out: { path: string; options: Json }[] = [];
  ((ec.exitCodes as Json[] | undefined) ?? []).forEach((m, i) =>
    out.push({ path: `exitConditions.exitCodes[${i}].exitOptions`, options: (m.exitOptions ?? {}) as Json }),
  );
  ((ec.exitCodeRanges as Json[] | undefined) ?? []).forEach((m, i) =>
    out.push({ path: `exitConditions.exitCodeRanges[${i}].exitOptions`, options: (m.exitOptions ?? {}) as Json }),
  );
  for (const k of ['preProcessingError', 'fileUploadError', 'default']) if (ec[k]) out.push({ path: `exitConditions.${k}`, options: ec[k] as Json });
  return out;
}

/** The upload headers the emulator applies to output blobs (and x-ms-meta-*). */
export const UPLOAD_HEADERS = ['content-type', 'content-encoding', 'content-language', 'content-disposition', 'cache-control', 'content-md5'];

/**
 * Task add: resource files, output files (containerUrl a URL; an identityReference is used at upload time),
 * exitConditions' jobAction only when the job's onTaskFailure is performExitOptionsJobAction, dependencies only
 * on jobs that use them, no application packages or authentication tokens.
 */
export function checkTaskAdd(b: Json, job: { onTaskFailure: string; usesTaskDependencies: boolean; userAccounts?: unknown }, path = ''): void {
  checkDisplayName(b, path.replace(/\.$/, ''));
  checkUserIdentity(b.userIdentity, `${path}userIdentity`, job.userAccounts);
  checkRetryCount((b.constraints as Json | undefined)?.maxTaskRetryCount, `${path}constraints.maxTaskRetryCount`);
  checkResourceFiles(b.resourceFiles, `${path}resourceFiles`);
  checkResourceFiles((b.multiInstanceSettings as Json | undefined)?.commonResourceFiles, `${path}multiInstanceSettings.commonResourceFiles`);
  ((b.outputFiles as Json[] | undefined) ?? []).forEach((of, i) => checkOutputFile(of, `${path}outputFiles[${i}]`));
  for (const { path: where, options } of exitOptionsOf(b.exitConditions)) {
    if (options.jobAction !== undefined && job.onTaskFailure !== 'performexitoptionsjobaction') {
      throw errors.invalid(
        `${path}${where}.jobAction`,
        options.jobAction,
        "the job's onTaskFailure is noaction; a jobAction needs performExitOptionsJobAction",
      );
    }
  }
  if (present(b.dependsOn)) {
    if (!job.usesTaskDependencies) {
      throw new BatchHttpError(
        400,
        'TaskDependenciesNotSpecifiedOnJob',
        'A task was specified as depending on other tasks, but the job did not specify that it would use task dependencies.',
        [{ key: 'PropertyName', value: `${path}dependsOn` }],
      );
    }
    // TaskIdRange: "The start and end of the range are inclusive"; a range whose start is after its end names no task.
    (((b.dependsOn as Json).taskIdRanges as Json[] | undefined) ?? []).forEach((r, i) => {
      if (typeof r.start === 'number' && typeof r.end === 'number' && r.start > r.end)
        throw errors.invalid(`${path}dependsOn.taskIdRanges[${i}].end`, r.end, `must not be less than start (${r.start})`);
    });
    const ids = ((b.dependsOn as Json).taskIds as string[] | undefined) ?? [];
    if (ids.join('').length > 64_000) {
      throw new BatchHttpError(
        400,
        'TaskDependencyListTooLong',
        'The list of task dependencies is too long: the task ids may total at most 64000 characters.',
        [{ key: 'PropertyName', value: `${path}dependsOn.taskIds` }],
      );
    }
  }
  if (present(b.applicationPackageReferences)) throw noApplications(`${path}applicationPackageReferences`);
  if (present(b.authenticationTokenSettings)) throw notEmulated(`${path}authenticationTokenSettings`, 'authentication tokens for tasks');
}

function checkOutputFile(of: Json, path: string): void {
  const container = ((of.destination ?? {}) as Json).container as Json | undefined;
  if (!container) throw errors.missing(`${path}.destination.container`);
  const url = String(container.containerUrl);
  if (!/^https?:\/\//i.test(url) || !URL.canParse(url))
    throw errors.invalid(`${path}.destination.container.containerUrl`, '(url)', 'must be an http(s) URL of a blob container');
  ((container.uploadHeaders as Json[] | undefined) ?? []).forEach((h, i) => {
    const name = String(h.name).toLowerCase();
    if (!UPLOAD_HEADERS.includes(name) && !name.startsWith('x-ms-meta-')) {
      throw notEmulated(
        `${path}.destination.container.uploadHeaders[${i}].name`,
        `the upload header ${String(h.name)} (the emulator applies ${UPLOAD_HEADERS.join(', ')} and x-ms-meta-*)`,
      );
    }
  });
}
