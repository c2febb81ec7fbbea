/**
 * Reads the MPI evidence of the job's image from its registry (manifest and config: no layer), before the pool is
 * created (shared/core/planning/imageEvidence.ts says when and what it means). Only reads, so Durable's
 * at-least-once delivery is harmless; the answer goes through the history, so replays see the same evidence.
 */
import type { ImageEvidenceAnswer, ImageEvidenceRequest } from '../../shared/core/planning/imageEvidence';
import { readImageEvidence } from '../../shared/adapters/registry/evidence';
import { imageEvidenceDeps } from '../../shared/services';
import { registerActivity } from './registration';

export function imageEvidence(input: ImageEvidenceRequest): Promise<ImageEvidenceAnswer> {
  return readImageEvidence(input, imageEvidenceDeps());
}

registerActivity('imageEvidence', imageEvidence);
