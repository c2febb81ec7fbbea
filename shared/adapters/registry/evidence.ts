/**
 * The registry half of "the MPI generation follows the image": reads the image config the request names, with the
 * credentials the job's nodes would use where the app holds them, and answers its MPI evidence or why it could
 * not (shared/core/planning/imageEvidence.ts decides what that means for the job). Never throws for a registry
 * answer: the orchestration and the dry run both need the answer, not an exception.
 */
import { mpiEvidenceFromImageConfig } from '../../core/images/mpiEvidence';
import type { ImageEvidenceAnswer, ImageEvidenceRequest } from '../../core/planning/imageEvidence';
import { readImageConfig, RegistryError, type RegistryAuth } from './client';

export interface ImageEvidenceDeps {
  /** The value of a registry secret the job names (REGISTRY_CREDENTIALS); throws when the deployment lists none. */
  secret(server: string, setting: string): string;
  /** An Entra ID access token of the app for the registry audience (`identity: "managed"`). */
  entraToken(): Promise<string>;
  timeoutMs?: number;
}

export async function readImageEvidence(req: ImageEvidenceRequest, deps: ImageEvidenceDeps): Promise<ImageEvidenceAnswer> {
  let auth: RegistryAuth = { kind: 'anonymous' };
  const identity = req.registry?.identity;
  if (identity === 'managed') auth = { kind: 'entra', token: deps.entraToken };
  else if (identity && req.registry) {
    try {
      auth = { kind: 'basic', username: identity.username, password: deps.secret(req.registry.server, identity.secretRef) };
    } catch (err) {
      return { read: false, kind: 'denied', message: `image ${req.image}: ${(err as Error).message}` };
    }
  }
  try {
    const read = await readImageConfig(req.image, { auth, ...(deps.timeoutMs ? { timeoutMs: deps.timeoutMs } : {}) });
    const evidence = mpiEvidenceFromImageConfig({ config: { Labels: read.labels, Env: read.env } });
    return { read: true, digest: read.digest, ...(evidence ? { evidence } : {}) };
  } catch (err) {
    if (err instanceof RegistryError) return { read: false, kind: err.kind, message: err.message };
    return { read: false, kind: 'invalid', message: `image ${req.image}: ${(err as Error).message}` };
  }
}
