/**
 * Singularity images on the nodes. Each image of a job is pulled once per node, in the staggered pull window, into a
 * per-job SIF file under the node's shared directory; the MPI ranks then run that file, never a registry reference,
 * so nothing is pulled while the job runs and every node runs the same bytes it checked. Layers are cached per node
 * (SINGULARITY_CACHEDIR), so a later job of a reused pool does not fetch them again. The job release task removes the
 * job's SIF files.
 */
import { PlanningError } from '../planning/errors';
import { shellQuote } from './shellQuote';

/** The node's shared directory as a shell word; on every Batch node `$AZ_BATCH_NODE_SHARED_DIR` is the same path. */
const NODE_SHARED_DIR = '"$AZ_BATCH_NODE_SHARED_DIR"';
export const SINGULARITY_CACHE_DIR = '"$AZ_BATCH_NODE_SHARED_DIR"/singularity/cache';

const CACHE_KEY = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

function checkKey(cacheKey: string): void {
  if (!CACHE_KEY.test(cacheKey)) throw new PlanningError(`invalid SIF cache key ${JSON.stringify(cacheKey)}`, { cacheKey });
}

/**
 * The job's SIF directory on a node, as a shell word. `sharedDir` is the shell word of the node's shared directory:
 * `$AZ_BATCH_NODE_SHARED_DIR` by default (node tasks have it; a rank started over ssh may need a fallback).
 */
export function sifDirExpr(cacheKey: string, sharedDir = NODE_SHARED_DIR): string {
  checkKey(cacheKey);
  return `${sharedDir}/mpijob/sif/${cacheKey}`;
}

/** The SIF file of image `index` of the job, as a shell word. */
export function sifPathExpr(cacheKey: string, index: number, sharedDir = NODE_SHARED_DIR): string {
  if (!Number.isSafeInteger(index) || index < 0) throw new PlanningError('SIF index must be a whole number ≥ 0', { index });
  return `${sifDirExpr(cacheKey, sharedDir)}/${index}.sif`;
}

/** Where a Singularity image comes from: a URI singularity pulls, or a SIF file already downloaded into the task's directory. */
export type SifSource = { uri: string } | { downloadedFile: string };

/** URIs singularity pulls itself. A bare OCI reference means `docker://`. */
const URI_SCHEMES = ['docker://', 'oras://', 'library://'];

export function singularityUri(reference: string): string {
  return URI_SCHEMES.some((s) => reference.startsWith(s)) ? reference : `docker://${reference}`;
}

/**
 * Shell lines (for a strict script) that leave image `index` at its SIF path on this node: already there → nothing
 * to do; else pull (or move the downloaded file) to a temporary name and rename it, so a retried or concurrent
 * pull never leaves half a file at the path the ranks open.
 */
export function sifPullLines(cacheKey: string, index: number, source: SifSource): string[] {
  const sif = sifPathExpr(cacheKey, index);
  const fill =
    'uri' in source ? `singularity pull --force "$mpijob_tmp" ${shellQuote(source.uri)}` : `mv -f -- ${shellQuote(source.downloadedFile)} "$mpijob_tmp"`;
  if ('downloadedFile' in source && (source.downloadedFile.startsWith('/') || source.downloadedFile.includes('..'))) {
    throw new PlanningError('downloadedFile must be a path inside the task directory', { downloadedFile: source.downloadedFile });
  }
  return [
    `mkdir -p ${sifDirExpr(cacheKey)} ${SINGULARITY_CACHE_DIR}`,
    `export SINGULARITY_CACHEDIR=${SINGULARITY_CACHE_DIR}`,
    `if [ -s ${sif} ]; then echo "image ${index} already on this node: "${sif}; else mpijob_tmp=${sif}.tmp.$$; ${fill}; singularity inspect "$mpijob_tmp" >/dev/null; mv -f "$mpijob_tmp" ${sif}; echo "image ${index} ready: "${sif}; fi`,
  ];
}

/** Removes the job's SIF files on this node (job release task). */
export function sifCleanupLine(cacheKey: string): string {
  return `rm -rf -- ${sifDirExpr(cacheKey)}`;
}
