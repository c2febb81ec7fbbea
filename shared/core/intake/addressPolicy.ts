/**
 * The hosts a spec makes nodes reach: `files[].url` (Batch downloads it on every node; checked with the data-access
 * policy, workloadDataAccess.ts), the registry of each container image and `container.registry.server` (every node
 * pulls from it; checked with the container policy, containerPolicy.ts), and the site check's image
 * (`preflight.siteCheck.image`, pulled by every node the same way). Each goes through the one address classifier
 * (shared/core/spec/address.ts): internal addresses are refused with the field path unless the deployment allows that host
 * (ALLOWED_INTERNAL_HOSTS), and the app's own storage is refused under every endpoint name, allowed or not. Checked
 * at intake rather than in the schema because the allowance is the deployment's: the examples' `localhost:5000`
 * registry is a valid spec, which only a deployment that serves it (the local stack) accepts.
 */
import type { JobSpec, SpecError } from '../spec';
import { classifyHost, internalHostAllowed, storageAccountOfHost } from '../spec/address';
import { imageScheme } from '../spec/sections/container';

export interface AddressPolicy {
  /** The app's own storage accounts (host and staging storage). */
  ownAccounts?: readonly string[];
  /** Internal hosts jobs may name anyway (`host` or `host:port`). */
  allowedInternalHosts?: readonly string[];
}

/** The registry host and port of an image reference, or undefined when it names none (Docker Hub, library://). */
export function imageRegistryHost(reference: string): { host: string; port?: string } | undefined {
  const scheme = imageScheme(reference);
  if (scheme === 'library://') return undefined;
  const ref = scheme ? reference.slice(scheme.length) : reference;
  const slash = ref.indexOf('/');
  if (slash < 0) return undefined;
  const first = ref.slice(0, slash);
  // The distribution reference grammar: the first component is a registry only with a "." or ":" or as "localhost".
  if (!first.includes('.') && !first.includes(':') && first !== 'localhost') return undefined;
  return splitHostPort(first);
}

function splitHostPort(hostPort: string): { host: string; port?: string } {
  const m = /^(.*?)(?::(\d{1,5}))?$/.exec(hostPort) as RegExpExecArray;
  return m[2] !== undefined ? { host: m[1], port: m[2] } : { host: m[1] };
}

/** Why nodes must not reach `host[:port]`, or undefined. */
export function hostRefusal(policy: AddressPolicy, host: string, port: string | undefined): string | undefined {
  const own = policy.ownAccounts ?? [];
  const verdict = classifyHost(host, own);
  if (!verdict.internal) return undefined;
  const account = storageAccountOfHost(verdict.host);
  const ownStorage = account !== undefined && own.includes(account);
  if (!ownStorage && internalHostAllowed(policy.allowedInternalHosts ?? [], host, port)) return undefined;
  return `names ${verdict.host}, ${verdict.why}${ownStorage ? '' : '; a deployment that serves such a host lists it in ALLOWED_INTERNAL_HOSTS'}`;
}

/** Why nodes must not download this (schema-valid https) URL, or undefined. */
export function urlRefusal(policy: AddressPolicy, url: string): string | undefined {
  const parsed = new URL(url);
  return hostRefusal(policy, parsed.hostname, parsed.port || undefined);
}

/** The image registries of the spec (each image's, and container.registry.server), checked. */
export function checkRegistryAddresses(spec: JobSpec, policy: AddressPolicy): SpecError[] {
  const errors: SpecError[] = [];
  const check = (path: string, host: string, port: string | undefined) => {
    const why = hostRefusal(policy, host, port);
    if (why) errors.push({ path, message: why });
  };
  spec.container.images.forEach((image, i) => {
    if (typeof image !== 'string') return;
    const registry = imageRegistryHost(image);
    if (registry) check(`container.images[${i}]`, registry.host, registry.port);
  });
  // The site's health-check image is pulled by every node like the job's own: the same registry rule.
  const siteImage = spec.preflight.siteCheck?.image;
  const siteRegistry = siteImage !== undefined ? imageRegistryHost(siteImage) : undefined;
  if (siteRegistry) check('preflight.siteCheck.image', siteRegistry.host, siteRegistry.port);
  const server = spec.container.registry?.server;
  if (server) {
    const { host, port } = splitHostPort(server);
    check('container.registry.server', host, port);
  }
  return errors;
}
