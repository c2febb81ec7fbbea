/**
 * What a job's containers may ask for on this deployment, checked at the door with field paths (like the data-access
 * policy): `privileged` only where the deployment allows it, and SIF files in blob storage only from storage the
 * data-access policy lets jobs name (the pull activity checks again, through shared/services dataAccount).
 */
import type { AppConfig } from '../config';
import type { JobSpec, SpecError } from '../spec';
import { dataAccessRefusal, type DataAccessPolicy } from './dataAccess';

export interface ContainerPolicy {
  allowPrivileged: boolean;
}

/** Nothing beyond the allowlist: the default when a caller names no policy. */
export const STRICT_CONTAINER_POLICY: ContainerPolicy = { allowPrivileged: false };

export function containerPolicy(config: AppConfig): ContainerPolicy {
  return { allowPrivileged: config.containers.allowPrivileged };
}

export function checkContainerPolicy(spec: JobSpec, policy: ContainerPolicy, data: DataAccessPolicy): SpecError[] {
  const errors: SpecError[] = [];
  if (spec.container.runOptions?.privileged && !policy.allowPrivileged) {
    errors.push({
      path: 'container.runOptions.privileged',
      message: 'this deployment does not run privileged containers (CONTAINER_ALLOW_PRIVILEGED is not "true"); ask for capabilities from the allowlist (container.runOptions.capAdd) instead',
    });
  }
  spec.container.images.forEach((image, i) => {
    if (typeof image === 'string') return;
    const why = dataAccessRefusal(data, image.account, image.container);
    if (why) errors.push({ path: `container.images[${i}].${data.accounts.includes(image.account) ? 'container' : 'account'}`, message: why });
  });
  return errors;
}
