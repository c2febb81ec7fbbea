/**
 * The MPI generation of a container job that declares no `mpi.version`, read from its image before any pool exists
 * (issue 27: the generation follows the code, not a default). Which image is asked, and what the answer means for
 * the job: the preset it gets and the timeline's sentence saying which evidence chose it, or the job's failure.
 * Pure: the activity (orchestrations/activities/imageEvidence.ts) asks the registry, the dry run does the same.
 *
 * What an answer does, decided here once:
 * - the image is not in its registry (404): the job fails before any pool, with the field path. Every node's pull
 *   would fail the same way, after the pool is paid for.
 * - the registry refuses the credentials the nodes would use too (anonymous, or the job's registry secret): the job
 *   fails the same way, for the same reason.
 * - the nodes pull with credentials the app does not hold (`identity: "managed"`: the pool identity), or the
 *   registry cannot be reached from the app (a private endpoint in the job's subnet, a timeout, 429/5xx) or answers
 *   something unreadable: the job goes on with the default generation of its runtime, and the timeline says so.
 */
import type { MpiEvidence } from '../images/mpiEvidence';
import { presetChoice } from '../mpi/generation';
import type { JobSpec } from '../spec/schema';
import { imageScheme } from '../spec/sections/container';

export type RegistryIdentity = NonNullable<JobSpec['container']['registry']>['identity'];

/** The activity's input: the image the MPI program runs in and the credentials the spec declares for its registry. */
export interface ImageEvidenceRequest {
  image: string;
  /** The spec's container.registry, when it is the image's registry. */
  registry?: { server: string; identity: RegistryIdentity };
}

/** What the registry said: the config's MPI evidence (none: the image names none), or why it could not be read. */
export type ImageEvidenceAnswer =
  { read: true; digest: string; evidence?: MpiEvidence } | { read: false; kind: 'notFound' | 'denied' | 'unreachable' | 'invalid'; message: string };

/** The first image's path in the spec (the one that runs the MPI program). */
export const IMAGE_FIELD = 'container.images[0]';

/** The image to read for this spec, or undefined: no container, a declared mpi.version, or an image no registry serves. */
export function imageEvidenceRequest(spec: Pick<JobSpec, 'container' | 'mpi'>): ImageEvidenceRequest | undefined {
  if (spec.mpi.version !== undefined || spec.container.runtime === 'none') return undefined;
  const first = spec.container.images[0];
  if (typeof first !== 'string') return undefined;
  const scheme = imageScheme(first);
  // library:// (Sylabs) and oras:// (a SIF artifact) hold no OCI image config.
  if (scheme === 'library://' || scheme === 'oras://') return undefined;
  const image = scheme ? first.slice(scheme.length) : first;
  const registry = spec.container.registry;
  const host = registryOf(image);
  return { image, ...(registry && registry.server.toLowerCase() === host ? { registry } : {}) };
}

/** The registry host of a (validated) reference, `docker.io` when it names none. */
export function registryOf(image: string): string {
  const slash = image.indexOf('/');
  const first = slash > 0 ? image.slice(0, slash) : '';
  return first && (first.includes('.') || first.includes(':') || first === 'localhost') ? first.toLowerCase() : 'docker.io';
}

export type ImageEvidenceOutcome =
  /** Fail the job before any pool: `reason` names the field. */
  | { fail: string }
  /** Go on; `version` (when set) is the generation the image's evidence gives, `note` the timeline's sentence. */
  | { version?: string; note: string; evidence?: MpiEvidence };

/** What the registry's answer means for a job of this spec (see the module comment). */
export function imageEvidenceOutcome(
  spec: Pick<JobSpec, 'container' | 'mpi' | 'pool'>,
  request: ImageEvidenceRequest,
  answer: ImageEvidenceAnswer,
  vmSize: string,
): ImageEvidenceOutcome {
  const runtime = spec.mpi.runtime;
  if (!answer.read) {
    if (answer.kind === 'notFound') return { fail: `${IMAGE_FIELD}: ${answer.message}` };
    const nodesHaveMore = request.registry?.identity === 'managed';
    if (answer.kind === 'denied' && !nodesHaveMore) {
      return {
        fail: `${IMAGE_FIELD}: ${answer.message}; the nodes would pull with the same credentials (${request.registry ? 'container.registry' : 'anonymous: the spec declares no container.registry for this registry'}) and be refused the same way`,
      };
    }
    const why = answer.kind === 'denied' ? `${answer.message} (the nodes pull with the pool identity, which the app does not hold)` : answer.message;
    return {
      note: `MPI generation not read from the image: ${why}; the job goes on with the default generation of ${runtime} (declare mpi.version to choose)`,
    };
  }
  const ev = answer.evidence;
  const at = `image ${request.image} (${answer.digest})`;
  if (!ev) return { note: `${at} names no MPI in its labels or environment: the default generation of ${runtime} (declare mpi.version to choose)` };
  if (ev.runtime !== runtime) {
    return {
      note: `${at}: its ${ev.evidence} says ${ev.runtime} ${ev.version}, but mpi.runtime is ${runtime}: the evidence is not used, the default generation of ${runtime} is (check mpi.runtime)`,
      evidence: ev,
    };
  }
  let reason: string;
  try {
    reason = presetChoice(runtime, undefined, spec.mpi.fabric, vmSize, ev).reason;
  } catch (err) {
    return {
      note: `${at}: its ${ev.evidence} names ${runtime} ${ev.version}, which has no preset (${(err as Error).message}): the default generation of ${runtime} is used`,
      evidence: ev,
    };
  }
  return { version: ev.version, note: `MPI preset from ${at}: ${reason}`, evidence: ev };
}
