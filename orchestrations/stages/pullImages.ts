import type { NodeRef } from '../../shared/contract';
import { Orchestration, PipelineRun } from '../runtime/pipelineRun';
import { nodeTaskWindow } from '../runtime/nodeTaskWindow';
import { imageBlobs, imageLabel, pullTask } from '../../shared/planning/mpiTaskRequest';
import type { JobSpec } from '../../shared/spec/schema';

export interface PullImagesRequest {
  jobId: string;
  batchJobId: string;
  nodes: NodeRef[];
  spec: JobSpec;
  maxAttempts: number;
  /** The deployment's cap on SAS lifetimes (minutes). */
  sasMaxLifetimeMinutes: number;
  /** Task-id prefix (default "pull"); nodes that replace others pull under their own, as ids are unique in a Batch job. */
  taskPrefix?: string;
}

/** SIF files in blob storage are read through SAS URLs that live this long at most: the pull window, not the job. */
const IMAGE_SAS_MINUTES = 120;

/**
 * Stagger image pulls: every node must hold every image before any MPI container starts, and at most
 * `pullConcurrency` nodes (10 by default) pull at the same time, because 40 nodes pulling at once knock
 * over a registry. The pool was created without image preload, so nothing else pulls behind our back.
 * Singularity images land in a per-job SIF file on each node; SIF files from blob storage come as the pull
 * task's resource files, through short-lived read-only SAS URLs.
 */
export function* pullImages(run: PipelineRun, req: PullImagesRequest): Orchestration<void> {
  const { container } = req.spec;
  if (container.runtime === 'none' || container.images.length === 0 || req.nodes.length === 0) {
    run.report({ progress: { imagesPulled: { done: req.nodes.length, total: req.nodes.length } } });
    return;
  }
  const blobs = imageBlobs(req.spec);
  const expiresAt = new Date(run.now().getTime() + Math.min(req.sasMaxLifetimeMinutes, IMAGE_SAS_MINUTES) * 60_000).toISOString();
  const blobUrls = blobs.length ? yield* run.call('imageBlobUrls', { blobs, expiresAt }) : [];
  const task = pullTask(req.jobId, req.spec, blobUrls);
  yield* nodeTaskWindow(run, {
    stage: 'PullingImages',
    batchJobId: req.batchJobId,
    nodes: req.nodes,
    items: container.images.map(imageLabel),
    concurrency: container.pullConcurrency,
    maxAttempts: req.maxAttempts,
    taskPrefix: req.taskPrefix ?? 'pull',
    progressKey: 'imagesPulled',
    inFlightState: 'pulling',
    doneState: 'pulled',
    taskFor: () => ({ commandLine: task.commandLine, ...(task.resourceFiles.length ? { resourceFiles: task.resourceFiles } : {}) }),
  });
}
