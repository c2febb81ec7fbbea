/**
 * "Fail before paying": which blobs and prefixes a job reads must exist before its pool is created, so a typo or a
 * missing upload fails the job (or its dry run) with the field path instead of after nodes were allocated and billed.
 * This module only plans the lookups and words their answers; the lookups themselves are one activity
 * (orchestrations/activities/sourcesCheck.ts) and the dry run's I/O (shared/adapters/storage/existence.ts).
 */
import type { JobSpec } from '../spec/schema';
import type { SpecError } from '../spec';

/** One thing that must exist: a blob, or at least one blob under a prefix ("" = anywhere in the container). */
export interface SourceCheck {
  /** The field that names it, as validation errors name fields ("data.inputs[0].prefix"). */
  path: string;
  account: string;
  container: string;
  kind: 'blob' | 'prefix';
  /** The blob name, or the prefix. */
  name: string;
}

/** What a lookup found missing. */
export interface SourceMiss {
  path: string;
  /** The sentence for the caller: what is missing, and why when Storage says (e.g. the container does not exist). */
  message: string;
}

/**
 * Every blob source of the spec, in field order: the inputs to shard (data.inputs), the files every node gets (files[],
 * public https URLs are not the app's to check), the start task's resource files and the SIF images in blob storage.
 * Container images by reference are not checked: the project has no registry client the app could ask cheaply.
 */
export function sourceChecks(spec: JobSpec): SourceCheck[] {
  const checks: SourceCheck[] = [];
  spec.data.inputs.forEach((i, n) =>
    checks.push({ path: `data.inputs[${n}].prefix`, account: i.account, container: i.container, kind: 'prefix', name: i.prefix }),
  );
  (spec.files ?? []).forEach((f, n) => {
    if (f.account === undefined || f.container === undefined) return;
    if (f.blob !== undefined) checks.push({ path: `files[${n}].blob`, account: f.account, container: f.container, kind: 'blob', name: f.blob });
    else if (f.prefix !== undefined) checks.push({ path: `files[${n}].prefix`, account: f.account, container: f.container, kind: 'prefix', name: f.prefix });
  });
  (spec.pool.startTask?.resourceFiles ?? []).forEach((f, n) =>
    checks.push({ path: `pool.startTask.resourceFiles[${n}].blob`, account: f.account, container: f.container, kind: 'blob', name: f.blob }),
  );
  spec.container.images.forEach((img, n) => {
    if (typeof img !== 'string')
      checks.push({ path: `container.images[${n}].blob`, account: img.account, container: img.container, kind: 'blob', name: img.blob });
  });
  return checks;
}

/** Where a check points, as a user writes it: `<account>/<container>/<name>`. */
export function sourceLabel(c: SourceCheck): string {
  return `${c.account}/${c.container}/${c.name}`;
}

/** The message for a check whose lookup found nothing; `containerMissing` when Storage said the container is not there. */
export function missMessage(c: SourceCheck, containerMissing: boolean): string {
  const what = c.kind === 'prefix' ? `no blob under ${sourceLabel(c)}` : `blob ${sourceLabel(c)} does not exist`;
  return containerMissing ? `${what} (container "${c.container}" does not exist)` : what;
}

/**
 * The message for a check Storage refused to answer (403): the app's identity is the one that lists, copies and signs
 * these blobs later, so the job could not read them either.
 */
export function deniedMessage(c: SourceCheck, code: string | undefined): string {
  return `the app's identity may not read ${sourceLabel(c)}${code ? ` (${code})` : ''}: grant it read access to container "${c.container}" of account "${c.account}"`;
}

/** The misses as validation errors (the dry run's 400 body). */
export function missesAsErrors(misses: readonly SourceMiss[]): SpecError[] {
  return misses.map((m) => ({ path: m.path, message: m.message }));
}

/** The job's reason when it fails on misses: every field path and what is missing, no activity names. */
export function missesReason(misses: readonly SourceMiss[]): string {
  const listed = misses.map((m) => `${m.path}: ${m.message}`).join('; ');
  return `missing input${misses.length === 1 ? '' : 's'} (checked before any pool was created): ${listed}`;
}
