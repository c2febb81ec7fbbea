/** The node image checks as intake errors: a finding refuses the spec unless it says `checks.image: warn`. */
import type { JobSpec, SpecError } from '../spec';
import type { DeclaredCustomImage } from './catalog';
import { checkImage, DEFAULT_IMAGE_CHECK_MODE } from './imageChecks';

export function imageCheckErrors(spec: JobSpec, custom: readonly DeclaredCustomImage[] = []): SpecError[] {
  if ((spec.checks?.image ?? DEFAULT_IMAGE_CHECK_MODE) === 'warn') return [];
  return checkImage(spec, custom).findings.map((f) => ({
    path: f.path,
    message: `${f.message} (checks.image: "warn" accepts the spec anyway)`,
  }));
}
