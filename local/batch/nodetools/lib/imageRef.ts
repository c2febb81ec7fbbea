/** Docker image references: `[registry[:port]/]repository[:tag][@digest]`, normalised as the Docker CLI does. */
import { isDigest, isRepositoryName, isTag } from '../../../registry/oci';
import { CliError } from './errors';

export interface ImageRef {
  registry: string;
  repository: string;
  tag?: string;
  digest?: string;
  /** As the user wrote it. */
  original: string;
}

export const DEFAULT_REGISTRY = 'docker.io';

export function parseImageRef(ref: string): ImageRef {
  const bad = (why: string): CliError => new CliError(`invalid reference format: ${why}: ${JSON.stringify(ref)}`, 125);
  let rest = ref.trim();
  if (!rest) throw bad('empty');
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!isDigest(digest)) throw bad('bad digest');
  }
  let registry = DEFAULT_REGISTRY;
  const slash = rest.indexOf('/');
  if (slash > 0) {
    const first = rest.slice(0, slash);
    if (first.includes('.') || first.includes(':') || first === 'localhost') {
      registry = first;
      rest = rest.slice(slash + 1);
    }
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon >= 0) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!isTag(tag)) throw bad('bad tag');
  }
  if (registry === DEFAULT_REGISTRY && !rest.includes('/')) rest = `library/${rest}`;
  if (!isRepositoryName(rest)) throw bad('repository name must be lowercase');
  if (!tag && !digest) tag = 'latest';
  return { registry, repository: rest, tag, digest, original: ref };
}

/** The name Docker lists the image under (`registry/repo`, without docker.io/library/). */
export function familiarName(r: ImageRef): string {
  if (r.registry !== DEFAULT_REGISTRY) return `${r.registry}/${r.repository}`;
  return r.repository.startsWith('library/') ? r.repository.slice('library/'.length) : r.repository;
}

/** `name:tag` or `name@digest`: the key of the local image store. */
export function refKey(r: ImageRef): string {
  return r.digest ? `${familiarName(r)}@${r.digest}` : `${familiarName(r)}:${r.tag}`;
}

/** Registries reached over plain http: loopback ones (as an insecure-registries entry would allow) and any listed in DOCKER_INSECURE_REGISTRIES. */
export function registryBaseUrl(registry: string, env: NodeJS.ProcessEnv = process.env): string {
  const host = registry === DEFAULT_REGISTRY ? 'registry-1.docker.io' : registry;
  const hostname = host.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  const insecure = (env.DOCKER_INSECURE_REGISTRIES ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const loopback = hostname === 'localhost' || hostname === '::1' || /^127\./.test(hostname);
  return `${loopback || insecure.includes(host) ? 'http' : 'https'}://${host}`;
}
