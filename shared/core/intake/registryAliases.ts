/**
 * REGISTRY_ALIASES: registry names users write and the registry each stands for on this deployment, e.g. the local
 * stack's `localhost:5000=127.0.0.1:41733` (its registry listens on a port of its own; the examples say
 * `localhost:5000`, as Docker's documentation does). At submission (and in a dry run) every image reference (the
 * site check's `preflight.siteCheck.image` too) and `container.registry.server` naming an alias is rewritten to the
 * registry it stands for, before the address and container policies look at it, so the recorded spec says where
 * nodes really pull from. Pure.
 *
 *   REGISTRY_ALIASES = alias=registry[,alias=registry…]   (each `host[:port]`, lowercase)
 */
import type { JobSpec } from '../spec';

export { parseRegistryAliases } from '../config/registryAliases';

/** The image reference with its registry replaced when it is an alias (`docker://` kept); others unchanged. */
export function resolveImageAlias(reference: string, aliases: Readonly<Record<string, string>>): string {
  const scheme = /^(docker:\/\/)/.exec(reference)?.[1] ?? '';
  const rest = reference.slice(scheme.length);
  const slash = rest.indexOf('/');
  if (slash < 0) return reference;
  const target = aliases[rest.slice(0, slash)];
  return target === undefined ? reference : `${scheme}${target}${rest.slice(slash)}`;
}

export function withRegistryAliases(spec: JobSpec, aliases: Readonly<Record<string, string>> | undefined): JobSpec {
  if (!aliases || !Object.keys(aliases).length) return spec;
  return withContainerAliases(withSiteCheckAlias(spec, aliases), aliases);
}

/** The site's health-check image names its registry like the job's own images (preflight.siteCheck.image). */
function withSiteCheckAlias(spec: JobSpec, aliases: Readonly<Record<string, string>>): JobSpec {
  const site = spec.preflight?.siteCheck;
  if (site?.image === undefined) return spec;
  const image = resolveImageAlias(site.image, aliases);
  return image === site.image ? spec : { ...spec, preflight: { ...spec.preflight, siteCheck: { ...site, image } } };
}

function withContainerAliases(spec: JobSpec, aliases: Readonly<Record<string, string>>): JobSpec {
  if (!spec.container) return spec;
  const images = spec.container.images.map((img) => (typeof img === 'string' ? resolveImageAlias(img, aliases) : img));
  const server = spec.container.registry?.server;
  const registry =
    spec.container.registry && server !== undefined && aliases[server] !== undefined
      ? { ...spec.container.registry, server: aliases[server] }
      : spec.container.registry;
  const changed = images.some((img, i) => img !== spec.container!.images[i]) || registry !== spec.container.registry;
  return changed ? { ...spec, container: { ...spec.container, images, ...(registry ? { registry } : {}) } } : spec;
}
