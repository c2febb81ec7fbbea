/**
 * What a job's containers may ask for on this deployment, checked at the door with field paths (like the data-access
 * policy): `privileged` only where the deployment allows it, and SIF files in blob storage only from storage the
 * data-access policy lets jobs name (the pull activity checks again, through shared/services dataAccount).
 */
import type { AppConfig } from '../../adapters/config';
import type { DeclaredCustomImage } from '../images/catalog';
import type { JobSpec, SpecError } from '../spec';
import { dataAccessRefusal, type DataAccessPolicy } from './dataAccess';
import { checkRegistryAddresses } from './addressPolicy';
import { checkNetworkPolicy } from './networkPolicy';
import { checkSecretPolicy } from './secretPolicy';

export interface ContainerPolicy {
  allowPrivileged: boolean;
  /** Whether pools carry a user-assigned identity (container.registry.identity "managed" needs one). */
  poolIdentity?: boolean;
  /** The registry secrets jobs may name, by server and app setting (REGISTRY_CREDENTIALS); never their values. */
  registrySecrets?: { server: string; setting: string }[];
  /** Registry names rewritten at submission (REGISTRY_ALIASES, registryAliases.ts). */
  registryAliases?: Readonly<Record<string, string>>;
  /**
   * The deployment's default subnet (POOL_SUBNET_ID). Carried here because the pool's network is checked with the
   * pool identity it depends on (networkPolicy.ts), at the same door.
   */
  poolSubnetId?: string;
  /** The deployment's custom node images for the node image checks (NODE_IMAGES_CUSTOM). */
  customNodeImages?: DeclaredCustomImage[];
}

/** Nothing beyond the allowlist: the default when a caller names no policy. */
export const STRICT_CONTAINER_POLICY: ContainerPolicy = { allowPrivileged: false };

export function containerPolicy(config: AppConfig): ContainerPolicy {
  return {
    allowPrivileged: config.containers.allowPrivileged,
    poolIdentity: config.poolIdentity !== undefined,
    registrySecrets: config.registryCredentials.map((c) => ({ server: c.server, setting: c.setting })),
    ...(config.containers.registryAliases && Object.keys(config.containers.registryAliases).length
      ? { registryAliases: config.containers.registryAliases }
      : {}),
    ...(config.poolSubnetId ? { poolSubnetId: config.poolSubnetId } : {}),
    ...(config.containers.customNodeImages?.length ? { customNodeImages: config.containers.customNodeImages } : {}),
  };
}

/** How the job may sign in to its registry on this deployment. */
function registryErrors(spec: JobSpec, policy: ContainerPolicy): SpecError[] {
  const registry = spec.container.registry;
  if (!registry) return [];
  if (registry.identity === 'managed') {
    return policy.poolIdentity
      ? []
      : [
          {
            path: 'container.registry.identity',
            message:
              'this deployment has no pool identity (POOL_IDENTITY_RESOURCE_ID and the settings that go with it), so nodes cannot pull with a managed identity; use { secretRef, username } with a registry credential of the deployment',
          },
        ];
  }
  const { secretRef } = registry.identity;
  if (/^https:\/\//i.test(secretRef)) {
    return [
      {
        path: 'container.registry.identity.secretRef',
        message:
          'the app does not read Key Vault itself: name the app setting that holds a Key Vault reference to this secret (REGISTRY_CREDENTIALS lists them)',
      },
    ];
  }
  const server = registry.server.toLowerCase();
  const declared = (policy.registrySecrets ?? []).filter((c) => c.server === server);
  if (declared.some((c) => c.setting === secretRef)) return [];
  return [
    {
      path: 'container.registry.identity.secretRef',
      message: declared.length
        ? `${secretRef} is not a registry credential of ${server} on this deployment; its credentials are: ${declared.map((c) => c.setting).join(', ')}`
        : `this deployment has no registry credential for ${server} (REGISTRY_CREDENTIALS)`,
    },
  ];
}

export function checkContainerPolicy(spec: JobSpec, policy: ContainerPolicy, data: DataAccessPolicy): SpecError[] {
  const errors: SpecError[] = [
    ...registryErrors(spec, policy),
    ...checkNetworkPolicy(spec, { poolSubnetId: policy.poolSubnetId, managementPlane: policy.poolIdentity === true }),
  ];
  if (spec.container.runOptions?.privileged && !policy.allowPrivileged) {
    errors.push({
      path: 'container.runOptions.privileged',
      message:
        'this deployment does not run privileged containers (CONTAINER_ALLOW_PRIVILEGED is not "true"); ask for capabilities from the allowlist (container.runOptions.capAdd) instead',
    });
  }
  if (spec.preflight.siteCheck?.privileged && !policy.allowPrivileged) {
    errors.push({
      path: 'preflight.siteCheck.privileged',
      message: 'this deployment does not run privileged containers (CONTAINER_ALLOW_PRIVILEGED is not "true"); run the site check unprivileged or as a script',
    });
  }
  // Every node pulls from the images' registries: no internal host unless the deployment serves it (addressPolicy.ts).
  errors.push(...checkRegistryAddresses(spec, data));
  // Secrets are read with the same pool identity a managed registry sign-in uses.
  errors.push(...checkSecretPolicy(spec, policy, data.allowedInternalHosts));
  spec.container.images.forEach((image, i) => {
    if (typeof image === 'string') return;
    const why = dataAccessRefusal(data, image.account, image.container);
    if (why) errors.push({ path: `container.images[${i}].${data.accounts.includes(image.account) ? 'container' : 'account'}`, message: why });
  });
  return errors;
}
