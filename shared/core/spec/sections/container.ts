/**
 * The container parts of the job spec that go beyond the image list: image entries for Singularity (URIs and SIF
 * files from blob storage), the allowlisted run options, GPUs, and their cross-field rules.
 */
import { z } from 'zod';
import * as P from '../patterns';
import { isGpuSize } from '../../planning/vmSizes';
import type { SpecIssue } from '../issue';
import { isObj, obj, type Obj } from '../rawInput';
import { isUnder, normalizeHostPath } from '../hostPath';

const LIBRARY_RE = /^library:\/\/(?:[a-z0-9][a-z0-9._-]{0,127}\/){0,3}[a-z0-9][a-z0-9._-]{0,127}(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$/;
const SCHEMES = ['docker://', 'oras://', 'library://'] as const;

/** A container image reference: a bare OCI reference, or for Singularity a docker://, oras:// or library:// URI. */
export function isImageReference(v: string): boolean {
  if (v.startsWith('library://')) return LIBRARY_RE.test(v);
  for (const s of ['docker://', 'oras://']) if (v.startsWith(s)) return P.OCI_REFERENCE_RE.test(v.slice(s.length));
  return P.OCI_REFERENCE_RE.test(v);
}

export function imageScheme(v: string): (typeof SCHEMES)[number] | undefined {
  return SCHEMES.find((s) => v.startsWith(s));
}

export const ImageBlobSchema = z
  .strictObject({
    account: z
      .string({ error: 'must be a string' })
      .regex(P.STORAGE_ACCOUNT_RE, { error: 'must be a storage account name (3–24 lowercase letters and digits)' }),
    container: z
      .string({ error: 'must be a string' })
      .regex(P.BLOB_CONTAINER_RE, { error: 'must be a blob container name (3–63 lowercase letters, digits and single hyphens)' }),
    blob: z
      .string({ error: 'must be a string' })
      .min(1, { error: 'must not be empty' })
      .regex(P.BLOB_PREFIX_RE, { error: 'must be a blob name (letters, digits, "._/=+@,-", no "..", no leading "/")' }),
  })
  .meta({
    description: 'A Singularity SIF file in blob storage, read by every node through a short-lived read-only SAS URL (same data-access policy as data.inputs).',
  });

export const ImageEntrySchema = z.union(
  [
    z.string({ error: 'must be an image reference' }).refine(isImageReference, {
      error:
        'must be an OCI image reference such as "myregistry.azurecr.io/app:1.2" (lowercase repository, no spaces or shell characters), or for singularity a "docker://…", "oras://…" or "library://entity/collection/container:tag" URI',
    }),
    ImageBlobSchema,
  ],
  { error: 'must be an image reference (string) or a SIF file in blob storage { account, container, blob }' },
);

export type ImageEntry = z.output<typeof ImageEntrySchema>;

/** Capabilities a container may add: what MPI codes need (CMA single-copy, pinning, priorities), nothing that escapes it. */
export const SAFE_CAPABILITIES = ['SYS_NICE', 'IPC_LOCK', 'SYS_PTRACE', 'SYS_RESOURCE'] as const;
export const ULIMIT_NAMES = ['memlock', 'stack', 'nofile', 'nproc', 'core', 'rtprio'] as const;
/**
 * Host paths no user-declared bind may reach (compared after normalizing: hostPath.ts): they give away the node.
 * Kernel interfaces and devices (/proc, /sys, /dev, /boot); the container runtime and its socket (/run, /var: the
 * docker socket is /var/run/docker.sock, images under /var/lib/docker); the node's configuration and accounts (/etc,
 * /root, /home: ssh keys and the Batch users' homes); and /mnt, which holds Batch itself ($AZ_BATCH_NODE_ROOT_DIR
 * /mnt/batch or /mnt/resource/batch: every task's files, the start task's folder, $AZ_BATCH_NODE_MOUNTS_DIR). The
 * job's own mounts and scratch reach the container through the binds the control plane generates, not through these.
 */
export const FORBIDDEN_BIND_SOURCES = ['/proc', '/sys', '/dev', '/boot', '/run', '/var', '/etc', '/root', '/home', '/mnt'];
/** Host paths a container may bind only read-only. */
export const READ_ONLY_BIND_SOURCES = ['/usr', '/opt'];

const ulimitValue = z.union(
  [
    z.literal('unlimited'),
    z.number({ error: 'must be a number' }).int({ error: 'must be a whole number' }).min(-1, { error: 'must be -1 (unlimited) or more' }),
  ],
  { error: 'must be a whole number, -1 or "unlimited"' },
);

export const BindSchema = z.strictObject({
  source: z
    .string({ error: 'must be a string' })
    .regex(P.ABSOLUTE_PATH_RE, { error: 'must be an absolute host path such as "/opt/intel" (letters, digits, "._-/", no "." or ".." segments)' })
    .meta({ description: 'Host path (may be a path the pre-execution or start task created).' }),
  target: z.string({ error: 'must be a string' }).regex(P.ABSOLUTE_PATH_RE, { error: 'must be an absolute path in the container' }),
  readOnly: z.boolean({ error: 'must be true or false' }).default(false),
});

export const RunOptionsSchema = z
  .strictObject({
    shmSize: z
      .string({ error: 'must be a string such as "2g"' })
      .regex(/^[1-9]\d{0,5}[kmg]$/, { error: 'must be a size such as "512m" or "8g"' })
      .optional()
      .meta({ description: 'Docker --shm-size (default "1g": Docker\'s 64m is too small for Intel MPI\'s shared-memory transport).' }),
    ulimits: z
      .partialRecord(z.enum(ULIMIT_NAMES, { error: `ulimit names must be one of ${ULIMIT_NAMES.join(', ')}` }), ulimitValue, {
        error: 'must be a map of ulimit name: value',
      })
      .optional()
      .meta({ description: `Docker --ulimit (${ULIMIT_NAMES.join(', ')}); memlock is unlimited already on InfiniBand.` }),
    binds: z
      .array(BindSchema, { error: 'must be a list of { source, target, readOnly }' })
      .max(32)
      .default([])
      .meta({
        description: `Extra host paths in the container (docker -v, singularity -B). Never ${FORBIDDEN_BIND_SOURCES.join(', ')} or "/"; ${READ_ONLY_BIND_SOURCES.join(', ')} only read-only.`,
      }),
    capAdd: z
      .array(z.enum(SAFE_CAPABILITIES, { error: `must be one of ${SAFE_CAPABILITIES.join(', ')}` }))
      .max(SAFE_CAPABILITIES.length)
      .default([])
      .meta({ description: `Docker --cap-add, from this allowlist: ${SAFE_CAPABILITIES.join(', ')}.` }),
    privileged: z
      .boolean({ error: 'must be true or false' })
      .default(false)
      .meta({ description: 'Docker --privileged. Refused unless the deployment allows it (CONTAINER_ALLOW_PRIVILEGED).' }),
  })
  .meta({ description: 'Container run options, from an allowlist (docs/workloads.md). Docker only, except binds.' });

export const GpusSchema = z
  .boolean({ error: 'must be true or false' })
  .default(false)
  .meta({ description: "Give the container the node's GPUs: docker --gpus all, singularity --nv. Needs a GPU VM size (NC, ND, NV)." });

/** Why a user's bind source is refused, if it is (the path is normalized first: `//proc/` is /proc). */
export function bindRefusal(source: string, readOnly: boolean): string | undefined {
  const path = normalizeHostPath(source);
  if (path === undefined) return 'must be an absolute host path without ".." segments';
  if (path === '/') return 'must not be "/": the whole node';
  const bad = FORBIDDEN_BIND_SOURCES.find((f) => isUnder(path, f));
  if (bad) return `must not be ${path === bad ? '' : 'under '}${bad}: it gives the container the node itself`;
  const ro = READ_ONLY_BIND_SOURCES.find((f) => isUnder(path, f));
  if (ro && !readOnly) return `is under ${ro}: bind it with readOnly: true`;
  return undefined;
}

/** Cross-field rules of the container section. */
export function containerIssues(raw: Obj): SpecIssue[] {
  const issues: SpecIssue[] = [];
  const add = (path: (string | number)[], message: string) => issues.push({ path, message });
  const container = obj(raw, 'container');
  const runtime = container.runtime ?? 'none';
  const images = Array.isArray(container.images) ? container.images : [];
  const vmSize = typeof obj(raw, 'pool').vmSize === 'string' ? (obj(raw, 'pool').vmSize as string) : undefined;

  images.forEach((img, i) => {
    if (runtime === 'docker') {
      if (typeof img === 'string' && imageScheme(img))
        add(['container', 'images', i], `docker pulls plain image references: drop "${imageScheme(img)}" (URIs are for singularity)`);
      if (isObj(img)) add(['container', 'images', i], 'a SIF file from blob storage needs container.runtime "singularity"');
    }
    if (isObj(img)) {
      const key = JSON.stringify([img.account, img.container, img.blob]);
      const first = images.findIndex((o) => isObj(o) && JSON.stringify([o.account, o.container, o.blob]) === key);
      if (first !== i) add(['container', 'images', i], `duplicate of container.images[${first}]`);
    }
  });

  const opts = obj(container, 'runOptions');
  const given = (k: string) => Object.prototype.hasOwnProperty.call(opts, k) && opts[k] !== undefined;
  if (runtime === 'none' && isObj(container.runOptions))
    add(['container', 'runOptions'], 'not allowed when container.runtime is "none" (the program runs natively)');
  if (runtime === 'singularity') {
    for (const k of ['shmSize', 'ulimits'])
      if (given(k))
        add(
          ['container', 'runOptions', k],
          "is a docker option: singularity shares the host's IPC namespace and limits (raise limits in the pool's start task)",
        );
    if (Array.isArray(opts.capAdd) && opts.capAdd.length)
      add(['container', 'runOptions', 'capAdd'], "is a docker option: singularity runs with the calling user's capabilities");
    if (opts.privileged === true) add(['container', 'runOptions', 'privileged'], 'is a docker option: singularity runs as the calling user');
  }
  const binds = Array.isArray(opts.binds) ? opts.binds : [];
  binds.forEach((b, i) => {
    if (isObj(b) && typeof b.source === 'string') {
      const why = bindRefusal(b.source, b.readOnly === true);
      if (why) add(['container', 'runOptions', 'binds', i, 'source'], why);
    }
  });
  if (container.gpus === true) {
    if (runtime === 'none') add(['container', 'gpus'], "applies to containers: a native program sees the node's GPUs already");
    else if (vmSize && !isGpuSize(vmSize)) add(['container', 'gpus'], `needs a GPU VM size (NC, ND or NV families); ${vmSize} has no GPU`);
  }
  return issues;
}
