import type { JobSpec } from '../../shared/core/spec/schema';
import { imageEvidenceOutcome, imageEvidenceRequest, type ImageEvidenceOutcome } from '../../shared/core/planning/imageEvidence';
import { activityFailureMessage } from '../runtime/activityCalls';
import type { Orchestration, PipelineRun } from '../runtime/pipelineRun';

/**
 * "Fail before paying", for the image: a container job without `mpi.version` reads its image's MPI evidence from
 * the registry (one activity) before its pool is created. Answers the job's failure (the image does not exist, or
 * the nodes' own credentials are refused), or the generation the evidence gives and the timeline's sentence;
 * undefined when the job has nothing to read. The sentence is written as a timeline note here.
 */
export function* imageEvidence(run: PipelineRun, jobId: string, spec: JobSpec, vmSize: string): Orchestration<ImageEvidenceOutcome | undefined> {
  const request = imageEvidenceRequest(spec);
  if (!request) return undefined;
  let outcome: ImageEvidenceOutcome;
  try {
    outcome = imageEvidenceOutcome(spec, request, yield* run.call('imageEvidence', request), vmSize);
  } catch (err) {
    // The activity itself failed (not the registry: its answers are values): carry on as before the check.
    outcome = {
      note: `MPI generation not read from the image: ${activityFailureMessage(err)}; the job goes on with the default generation of ${spec.mpi.runtime}`,
    };
  }
  if ('note' in outcome) {
    const data = {
      kind: 'imageEvidence',
      image: request.image,
      ...(outcome.version ? { mpiVersion: outcome.version } : {}),
      ...(outcome.evidence ? { evidence: outcome.evidence.evidence } : {}),
    };
    yield* run.call('jobNote', { jobId, eventId: 'image-evidence', at: run.now().toISOString(), reason: outcome.note, data });
  }
  return outcome;
}
