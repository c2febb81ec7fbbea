/**
 * An image reference as the Docker CLI reads it (`[registry[:port]/]repository[:tag][@digest]`), split into what a
 * registry request needs. The spec already validated the reference (OCI_REFERENCE_RE); this only splits it. Pure.
 */
export interface ImageReference {
  /** As the spec wrote it (without a `docker://` prefix). */
  reference: string;
  /** Registry host with optional port, as written; `docker.io` for Docker Hub. */
  registry: string;
  /** Repository path in the registry (`library/ubuntu` for Docker Hub's official images). */
  repository: string;
  /** Tag or digest the manifest is asked for. */
  manifestRef: string;
  /** The digest the reference pins, when it does (the manifest is then checked against it). */
  digest?: string;
}

export const DOCKER_HUB = 'docker.io';

export function parseImageReference(input: string): ImageReference {
  const reference = input.startsWith('docker://') ? input.slice('docker://'.length) : input;
  let rest = reference;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  let registry = DOCKER_HUB;
  const slash = rest.indexOf('/');
  if (slash > 0) {
    const first = rest.slice(0, slash);
    // The distribution reference grammar: the first component is a registry only with a "." or ":" or as "localhost".
    if (first.includes('.') || first.includes(':') || first === 'localhost') {
      registry = first.toLowerCase();
      rest = rest.slice(slash + 1);
    }
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon >= 0) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  if (!rest) throw new Error(`image ${reference}: no repository name`);
  if (registry === DOCKER_HUB && !rest.includes('/')) rest = `library/${rest}`;
  return { reference, registry, repository: rest, manifestRef: digest ?? tag ?? 'latest', ...(digest ? { digest } : {}) };
}

/** The registry's base URL: Docker Hub's API host for docker.io; plain http only for a loopback registry (as Docker's insecure default). */
export function registryBaseUrl(registry: string): string {
  const host = registry === DOCKER_HUB ? 'registry-1.docker.io' : registry;
  const hostname = host.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  const loopback = hostname === 'localhost' || hostname === '::1' || /^127\./.test(hostname);
  return `${loopback ? 'http' : 'https'}://${host}`;
}
