/**
 * Outputs verified before success: which blobs the MPI task's own output files (Batch uploads them from the master
 * before the task completes) must have produced, derived from the files that were on the master when the task ended,
 * and what a missing one means for the job. Pure: the activities list the task's files (Batch) and look the names up
 * (Storage); the orchestrator decides with these functions during replay.
 *
 * Batch reports a failed upload as the task's failureInfo, but an upload that never happened (the node or the whole
 * stack died while uploading, a storage write lost) reports nothing: only comparing what was there with what landed
 * shows it.
 */
import type { OutputsPlan } from './workloadData';

/** A file of the MPI task's directory as Batch lists it (name relative to the task root: `stdout.txt`, `wd/out/a.dat`). */
export interface TaskFile {
  name: string;
  isDirectory: boolean;
}

export interface ExpectedUploads {
  /** Blob names (container-relative, with the outputs prefix), at most MAX_VERIFIED_UPLOADS. */
  names: string[];
  /** Expected uploads beyond the first MAX_VERIFIED_UPLOADS (not checked). */
  more: number;
  /** Patterns that cannot be checked from the task's directory (outside it, e.g. the shared scratch). */
  unchecked: string[];
}

/** The check looks up at most this many blobs per job (one HEAD each); the rest are counted. */
export const MAX_VERIFIED_UPLOADS = 1000;

/** The upload's own logs: written while the uploads run, so whether `../*.txt` caught them depends on timing. */
const UPLOAD_LOGS = new Set(['fileuploadout.txt', 'fileuploaderr.txt']);

/** The MPI task's working directory, relative to its task root (output file patterns are relative to it). */
const WORKDIR = 'wd';

const WILDCARD = /[*?[]/;

/** Whether Batch uploads a file of this condition after a task that exited `exitCode`. */
export function uploadConditionHolds(condition: OutputsPlan['master'][number]['uploadCondition'], exitCode: number | undefined): boolean {
  if (condition === 'taskSuccess') return exitCode === 0;
  if (condition === 'taskFailure') return exitCode !== 0;
  return true;
}

/**
 * A glob as Batch's filePattern reads it, as a RegExp over paths relative to the pattern's fixed directories:
 * `*` and `?` within one name, `[…]` / `[!…]` classes, `**` across directories; names starting with "." match only a
 * pattern segment that names the dot.
 */
export function globRegExp(glob: string): RegExp {
  const segs = glob.split('/');
  let re = '';
  segs.forEach((seg, i) => {
    const last = i === segs.length - 1;
    if (seg === '**') {
      re += last ? '(?:(?!\\.)[^/]+/)*(?!\\.)[^/]+' : '(?:(?!\\.)[^/]+/)*';
      return;
    }
    re += (seg.startsWith('.') ? '' : '(?!\\.)') + segmentRegExp(seg) + (last ? '' : '/');
  });
  return new RegExp(`^${re}$`);
}

function segmentRegExp(seg: string): string {
  let out = '';
  for (let i = 0; i < seg.length; i++) {
    const c = seg[i];
    if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const end = seg.indexOf(']', i + 2);
      if (end < 0) {
        out += '\\[';
        continue;
      }
      let body = seg.slice(i + 1, end);
      const negate = body.startsWith('!');
      if (negate) body = body.slice(1);
      out += `[${negate ? '^' : ''}${body.replace(/[\\\]^]/g, '\\$&')}]`;
      i = end;
    } else out += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return out;
}

/** `a/b/../c` → `a/c`; undefined when the path climbs out of the task root. */
function normalize(segments: string[]): string[] | undefined {
  const out: string[] = [];
  for (const s of segments) {
    if (s === '' || s === '.') continue;
    if (s === '..') {
      if (!out.length) return undefined;
      out.pop();
    } else out.push(s);
  }
  return out;
}

/**
 * The blobs the master's output files must have produced, given the files in the MPI task's directory when it ended
 * and its exit code. Mirrors Batch's naming as the plan relies on it (shared/core/planning/workloadData.ts): a pattern
 * without wildcards is one blob named `path`; a match of a wildcard pattern is `path/<its path below the pattern's
 * fixed directories>`.
 */
export function expectedMasterUploads(master: OutputsPlan['master'], files: readonly TaskFile[], exitCode: number | undefined): ExpectedUploads {
  const present = presentFiles(files).filter((f) => !isUploadLog(f));
  const names = new Set<string>();
  const unchecked: string[] = [];
  for (const f of master) {
    if (!uploadConditionHolds(f.uploadCondition, exitCode)) continue;
    if (f.filePattern.startsWith('/') || f.filePattern.includes('$')) {
      unchecked.push(f.filePattern);
      continue;
    }
    if (!addDueBlobs(`${WORKDIR}/${f.filePattern}`, f.path, present, names)) unchecked.push(f.filePattern);
  }
  return bounded(names, unchecked);
}

/** How a node upload task's file patterns start (shared/core/planning/workloadData.ts nodeUploadTask): the node root. */
const NODE_ROOT = '$AZ_BATCH_NODE_ROOT_DIR/';

/**
 * The blobs a node's upload task must have produced, given the files below the MPI task's directory on that node
 * (names relative to the node root, as Batch lists a node's files: `workitems/<job>/job-1/<task>/wd/out/a.dat`). The
 * upload task runs only after the MPI task ended and uploads only when it succeeds (its conditions are taskSuccess),
 * so every match of its patterns is due. Same naming rules as the master's.
 */
export function expectedNodeUploads(
  outputFiles: readonly Pick<OutputsPlan['master'][number], 'filePattern' | 'path'>[],
  files: readonly TaskFile[],
): ExpectedUploads {
  const present = presentFiles(files);
  const names = new Set<string>();
  const unchecked: string[] = [];
  for (const f of outputFiles) {
    const rel = f.filePattern.startsWith(NODE_ROOT) ? f.filePattern.slice(NODE_ROOT.length) : undefined;
    if (rel === undefined || rel.includes('$') || !addDueBlobs(rel, f.path, present, names)) unchecked.push(f.filePattern);
  }
  return bounded(names, unchecked);
}

function presentFiles(files: readonly TaskFile[]): string[] {
  return files.filter((f) => !f.isDirectory).map((f) => f.name.replace(/^\/+/, ''));
}

/**
 * Adds the blob names one output file (`pattern` relative to the listing's root) makes due for the present files.
 * False when the pattern climbs out of the listing's root (it cannot be checked from there).
 */
function addDueBlobs(pattern: string, path: string | undefined, present: readonly string[], names: Set<string>): boolean {
  const segments = pattern.split('/');
  const firstWild = segments.findIndex((s) => WILDCARD.test(s));
  const fixed = normalize(firstWild < 0 ? segments : segments.slice(0, firstWild));
  if (!fixed) return false;
  const blobPath = (path ?? '').replace(/^\/+|\/+$/g, '');
  if (firstWild < 0) {
    const file = fixed.join('/');
    if (present.includes(file)) names.add(blobPath || file.split('/').at(-1)!);
    return true;
  }
  const base = fixed.join('/');
  const glob = globRegExp(segments.slice(firstWild).join('/'));
  for (const file of present) {
    const rel = base ? (file.startsWith(`${base}/`) ? file.slice(base.length + 1) : undefined) : file;
    if (rel !== undefined && glob.test(rel)) names.add(blobPath ? `${blobPath}/${rel}` : rel);
  }
  return true;
}

function bounded(names: Set<string>, unchecked: string[]): ExpectedUploads {
  const all = [...names].sort();
  return { names: all.slice(0, MAX_VERIFIED_UPLOADS), more: Math.max(0, all.length - MAX_VERIFIED_UPLOADS), unchecked };
}

function isUploadLog(file: string): boolean {
  return !file.includes('/') && UPLOAD_LOGS.has(file);
}

/** The entries for result.outputs.errors: one per expected blob that is not in the container (`who`: master or node <id>). */
export function missingUploadErrors(missing: readonly string[], who = 'master'): string[] {
  return missing.map((name) => `${who}: ${name} was on the node but is not in the outputs container (its upload was lost)`);
}
