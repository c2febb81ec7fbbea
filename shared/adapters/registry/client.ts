/**
 * Reads an image's config from its registry, over the OCI distribution API, without pulling it: GET the manifest
 * (an index is followed to its linux/amd64 entry), then the config blob, and answer its Labels and Env with the
 * digests. This is the evidence shared/core/images/mpiEvidence.ts reads for the MPI generation.
 *
 * Bounded, because the registry is the job author's choice: one deadline for the whole read, a size cap on every
 * body (manifests and configs are a few KiB), digests checked, and no request to a host other than the registry's
 * except a token realm or a blob redirect (the distribution spec lets a blob GET redirect to storage) that is https
 * and not an internal address; credentials go only to the registry's own host (or its https realm), never with a
 * redirect. Errors name the image reference and the status, and say which kind they are (RegistryError.kind), so
 * the caller decides between failing the job and carrying on without evidence.
 */
import { createHash } from 'node:crypto';
import { classifyHost } from '../../core/spec/address';
import { parseChallenge, type Challenge } from './challenge';
import { configEvidence, MANIFEST_ACCEPT, parseManifest, pickPlatform, type Descriptor } from './manifest';
import { parseImageReference, registryBaseUrl, type ImageReference } from './reference';

/** How the app authenticates to the registry: the same credentials the job's nodes pull with, where it has them. */
export type RegistryAuth =
  | { kind: 'anonymous' }
  | { kind: 'basic'; username: string; password: string }
  /** ACR with an Entra ID token (`POST /oauth2/exchange`, then `/oauth2/token`), as `az acr login --identity`. */
  | { kind: 'entra'; token: () => Promise<string> };

export interface ReadImageConfigOptions {
  auth?: RegistryAuth;
  /** Deadline of the whole read (every request of it). Default 20 s. */
  timeoutMs?: number;
  /** Largest manifest or config body accepted. Default 4 MiB. */
  maxBytes?: number;
}

export interface ImageConfigRead {
  reference: string;
  registry: string;
  /** Digest of the manifest the reference names (an index's, for a multi-platform image). */
  digest: string;
  /** Digest of the linux/amd64 manifest, when the reference names an index. */
  platformDigest?: string;
  configDigest: string;
  labels: Record<string, string>;
  env: string[];
}

export type RegistryErrorKind =
  /** The registry says the repository or the tag/digest does not exist (404). */
  | 'notFound'
  /** The registry refused the credentials (401 after the token exchange, 403). */
  | 'denied'
  /** No answer, a timeout, 429 or 5xx: the registry could not be asked. */
  | 'unreachable'
  /** An answer that is not what the distribution spec says (bad JSON, a digest mismatch, too big, no amd64 entry). */
  | 'invalid';

export class RegistryError extends Error {
  constructor(
    readonly kind: RegistryErrorKind,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'RegistryError';
  }
}

const DEFAULT_TIMEOUT_MS = 20_000;
const DEFAULT_MAX_BYTES = 4 << 20;
/** ACR's refresh-token user name, for a Basic login with a refresh token. */
const ACR_REFRESH_USER = '00000000-0000-0000-0000-000000000000';

const sha256 = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

interface Got {
  status: number;
  headers: Headers;
  body: Buffer;
}

class Reader {
  private authorization: string | undefined;
  private readonly base: URL;
  private readonly signal: AbortSignal;
  private readonly maxBytes: number;

  constructor(
    private readonly ref: ImageReference,
    private readonly auth: RegistryAuth,
    opts: ReadImageConfigOptions,
  ) {
    this.base = new URL(registryBaseUrl(ref.registry));
    this.signal = AbortSignal.timeout(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    this.maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  }

  private what(): string {
    return `image ${this.ref.reference}`;
  }

  /** One request, redirects not followed; the body read up to the cap. */
  private async send(url: URL, init: { method?: string; headers?: Record<string, string>; body?: string }): Promise<Got> {
    let res: Response;
    try {
      res = await fetch(url, { ...init, redirect: 'manual', signal: this.signal });
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } };
      const why = e.name === 'TimeoutError' || e.name === 'AbortError' ? 'no answer in time' : (e.cause?.code ?? e.cause?.message ?? e.message);
      throw new RegistryError('unreachable', `${this.what()}: ${url.host} could not be reached (${why})`);
    }
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (declared > this.maxBytes) {
      await res.body?.cancel().catch(() => undefined);
      throw new RegistryError(
        'invalid',
        `${this.what()}: ${url.pathname} is ${declared} bytes, more than the ${this.maxBytes} a manifest or config may have`,
        res.status,
      );
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res.body ?? []) {
        size += (chunk as Uint8Array).length;
        if (size > this.maxBytes)
          throw new RegistryError(
            'invalid',
            `${this.what()}: ${url.pathname} is more than the ${this.maxBytes} bytes a manifest or config may have`,
            res.status,
          );
        chunks.push(Buffer.from(chunk as Uint8Array));
      }
    } catch (err) {
      if (err instanceof RegistryError) throw err;
      throw new RegistryError('unreachable', `${this.what()}: reading ${url.pathname} from ${url.host} failed (${(err as Error).message})`);
    }
    return { status: res.status, headers: res.headers, body: Buffer.concat(chunks) };
  }

  /** A host the app may reach beyond the registry itself: https and not an internal address (SSRF). */
  private outsideAllowed(url: URL): boolean {
    if (url.host === this.base.host) return true;
    return url.protocol === 'https:' && !classifyHost(url.hostname).internal;
  }

  /** GET on the registry, answering a 401 challenge once with a token (or the Basic credentials). */
  private async get(path: string, accept?: string): Promise<Got> {
    const url = new URL(path, this.base);
    const headers = (): Record<string, string> => ({
      ...(accept ? { Accept: accept } : {}),
      ...(this.authorization ? { Authorization: this.authorization } : {}),
    });
    let got = await this.send(url, { headers: headers() });
    if (got.status === 401) {
      const challenge = parseChallenge(got.headers.get('www-authenticate'));
      if (!challenge) throw this.statusError(got, path);
      this.authorization = await this.authorize(challenge);
      got = await this.send(url, { headers: headers() });
    }
    return got;
  }

  private async authorize(ch: Challenge): Promise<string> {
    const scope = `repository:${this.ref.repository}:pull`;
    if (ch.scheme === 'basic') {
      if (this.auth.kind !== 'basic')
        throw new RegistryError(
          'denied',
          `${this.what()}: ${this.ref.registry} asks for a user name and password and the job declares none the app can use`,
          401,
        );
      return basicHeader(this.auth.username, this.auth.password);
    }
    const realmText = ch.params.realm;
    let realm: URL;
    try {
      realm = new URL(realmText ?? '');
    } catch {
      throw new RegistryError('invalid', `${this.what()}: ${this.ref.registry} sent a Bearer challenge without a usable realm`, 401);
    }
    if (!this.outsideAllowed(realm))
      throw new RegistryError(
        'invalid',
        `${this.what()}: ${this.ref.registry}'s token realm ${realm.origin} is neither the registry nor an https service`,
        401,
      );
    const service = ch.params.service ?? this.ref.registry;
    let basic: string | undefined;
    if (this.auth.kind === 'basic') basic = basicHeader(this.auth.username, this.auth.password);
    if (this.auth.kind === 'entra') basic = basicHeader(ACR_REFRESH_USER, await this.exchange(realm, service));
    // Credentials go to the registry's own host, or to an https realm (Docker Hub's auth.docker.io): never over http elsewhere.
    if (basic && realm.host !== this.base.host && realm.protocol !== 'https:') basic = undefined;
    const tokenUrl = new URL(realm);
    tokenUrl.searchParams.set('service', service);
    tokenUrl.searchParams.set('scope', scope);
    const got = await this.send(tokenUrl, { headers: basic ? { Authorization: basic } : {} });
    if (got.status === 401 || got.status === 403)
      throw new RegistryError(
        'denied',
        `${this.what()}: ${this.ref.registry} refused ${this.auth.kind === 'anonymous' ? 'an anonymous pull' : 'the credentials'} (token service answered ${got.status})`,
        got.status,
      );
    const token = jsonField(got.body, 'token') ?? jsonField(got.body, 'access_token');
    if (got.status !== 200 || !token) throw this.statusError(got, `${realm.pathname} (token service)`);
    return `Bearer ${token}`;
  }

  /** ACR: an Entra access token traded for a refresh token at `<registry>/oauth2/exchange`. */
  private async exchange(realm: URL, service: string): Promise<string> {
    if (this.auth.kind !== 'entra') throw new Error('unreachable');
    let entra: string;
    try {
      entra = await this.auth.token();
    } catch (err) {
      throw new RegistryError('denied', `${this.what()}: no Entra ID token for ${this.ref.registry} (${(err as Error).message})`);
    }
    const url = new URL('/oauth2/exchange', realm.host === this.base.host ? this.base : realm);
    const body = new URLSearchParams({ grant_type: 'access_token', service, access_token: entra }).toString();
    const got = await this.send(url, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body });
    if (got.status === 401 || got.status === 403)
      throw new RegistryError('denied', `${this.what()}: ${this.ref.registry} refused the app's Entra ID token (exchange answered ${got.status})`, got.status);
    const refresh = jsonField(got.body, 'refresh_token');
    if (got.status !== 200 || !refresh) throw this.statusError(got, '/oauth2/exchange');
    return refresh;
  }

  private statusError(got: Got, path: string): RegistryError {
    const code = errorCode(got.body);
    const detail = `${got.status}${code ? ` ${code}` : ''}`;
    if (got.status === 404) return new RegistryError('notFound', `image ${this.ref.reference} not found in ${this.ref.registry} (${detail})`, 404);
    if (got.status === 401 || got.status === 403)
      return new RegistryError('denied', `${this.what()}: ${this.ref.registry} denied the pull (${detail})`, got.status);
    if (got.status === 429 || got.status >= 500)
      return new RegistryError('unreachable', `${this.what()}: ${this.ref.registry} answered ${detail} on ${path}`, got.status);
    return new RegistryError('invalid', `${this.what()}: ${this.ref.registry} answered ${detail} on ${path}`, got.status);
  }

  async manifest(reference: string, expectDigest?: string): Promise<{ bytes: Buffer; contentType: string | null; digest: string }> {
    const path = `/v2/${this.ref.repository}/manifests/${reference}`;
    const got = await this.get(path, MANIFEST_ACCEPT);
    // A redirected manifest is not something registries do: refused, not followed.
    if (got.status !== 200) throw this.statusError(got, path);
    const digest = sha256(got.body);
    if (expectDigest && expectDigest !== digest) throw new RegistryError('invalid', `${this.what()}: the manifest's digest is ${digest}, not ${expectDigest}`);
    return { bytes: got.body, contentType: got.headers.get('content-type'), digest };
  }

  async blob(d: Descriptor): Promise<Buffer> {
    const path = `/v2/${this.ref.repository}/blobs/${d.digest}`;
    if (d.size > this.maxBytes) throw new RegistryError('invalid', `${this.what()}: the config is ${d.size} bytes, more than the ${this.maxBytes} accepted`);
    let got = await this.get(path);
    if ([301, 302, 303, 307, 308].includes(got.status)) {
      // The distribution spec lets a blob GET redirect (to storage): followed once, without the registry's token.
      const location = got.headers.get('location');
      const to = location ? new URL(location, new URL(path, this.base)) : undefined;
      if (!to || !this.outsideAllowed(to))
        throw new RegistryError(
          'invalid',
          `${this.what()}: the config blob redirects to ${to?.origin ?? 'nowhere'}, neither the registry nor an https service`,
          got.status,
        );
      got = await this.send(to, to.host === this.base.host && this.authorization ? { headers: { Authorization: this.authorization } } : {});
    }
    if (got.status !== 200) throw this.statusError(got, path);
    if (sha256(got.body) !== d.digest) throw new RegistryError('invalid', `${this.what()}: the config blob's content does not match its digest ${d.digest}`);
    return got.body;
  }
}

function basicHeader(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

function jsonField(body: Buffer, field: string): string | undefined {
  try {
    const v = (JSON.parse(body.toString('utf8')) as Record<string, unknown>)[field];
    return typeof v === 'string' && v ? v : undefined;
  } catch {
    return undefined;
  }
}

function errorCode(body: Buffer): string | undefined {
  try {
    const code = (JSON.parse(body.toString('utf8')) as { errors?: { code?: unknown }[] }).errors?.[0]?.code;
    return typeof code === 'string' ? code.slice(0, 64) : undefined;
  } catch {
    return undefined;
  }
}

/** The image's config Labels and Env, and its digests, read from the registry (see the module comment). */
export async function readImageConfig(imageReference: string, opts: ReadImageConfigOptions = {}): Promise<ImageConfigRead> {
  const ref = parseImageReference(imageReference);
  const reader = new Reader(ref, opts.auth ?? { kind: 'anonymous' }, opts);
  const invalid = (err: unknown) => (err instanceof RegistryError ? err : new RegistryError('invalid', `image ${ref.reference}: ${(err as Error).message}`));
  const top = await reader.manifest(ref.manifestRef, ref.digest);
  let parsed;
  try {
    parsed = parseManifest(top.bytes, top.contentType);
  } catch (err) {
    throw invalid(err);
  }
  let platformDigest: string | undefined;
  if (parsed.kind === 'index') {
    const { entry, platforms } = pickPlatform(parsed.manifests);
    if (!entry) throw new RegistryError('invalid', `image ${ref.reference} has no linux/amd64 image (its index lists ${platforms.join(', ') || 'nothing'})`);
    const inner = await reader.manifest(entry.digest, entry.digest);
    try {
      parsed = parseManifest(inner.bytes, inner.contentType);
    } catch (err) {
      throw invalid(err);
    }
    if (parsed.kind !== 'manifest') throw new RegistryError('invalid', `image ${ref.reference}: the linux/amd64 entry is an index again`);
    platformDigest = inner.digest;
  }
  const config = await reader.blob(parsed.config);
  let evidence;
  try {
    evidence = configEvidence(config);
  } catch (err) {
    throw invalid(err);
  }
  return {
    reference: ref.reference,
    registry: ref.registry,
    digest: top.digest,
    ...(platformDigest ? { platformDigest } : {}),
    configDigest: parsed.config.digest,
    ...evidence,
  };
}
