import type { NodeRef } from '../../shared/contract';
import { Orchestration, PipelineRun } from '../runtime/pipelineRun';
import { nodeTaskWindow } from '../runtime/nodeTaskWindow';
import { pullTaskCommand } from '../../shared/planning/mpiTaskRequest';
import type { JobSpec } from '../../shared/spec/schema';

export interface PullImagesRequest {
  batchJobId: string;
  nodes: NodeRef[];
  spec: JobSpec;
  maxAttempts: number;
}

/**
 * Stagger image pulls: every node must hold every image before any MPI container starts, and at most
 * `pullConcurrency` nodes (10 by default) pull at the same time, because 40 nodes pulling at once knock
 * over a registry. The pool was created without image preload, so nothing else pulls behind our back.
 */
export function* pullImages(run: PipelineRun, req: PullImagesRequest): Orchestration<void> {
  const { container } = req.spec;
  if (container.runtime === 'none' || container.images.length === 0) {
    run.report({ progress: { imagesPulled: { done: req.nodes.length, total: req.nodes.length } } });
    return;
  }
  const commandLine = pullTaskCommand(req.spec);
  yield* nodeTaskWindow(run, {
    stage: 'PullingImages',
    batchJobId: req.batchJobId,
    nodes: req.nodes,
    items: container.images,
    concurrency: container.pullConcurrency,
    maxAttempts: req.maxAttempts,
    taskPrefix: 'pull',
    progressKey: 'imagesPulled',
    inFlightState: 'pulling',
    doneState: 'pulled',
    taskFor: () => ({ commandLine }),
  });
}
