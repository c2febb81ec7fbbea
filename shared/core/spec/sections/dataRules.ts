/**
 * Rules between the fields of the data sections (files, mounts, scratch, outputs) and the rest of the spec. Like
 * crossField.ts they read the raw input defensively, so they run next to the schema and every problem is listed.
 */
import { has, isObj, type Obj } from '../rawInput';

type Issue = { path: (string | number)[]; message: string };
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Keys that smell like a stored credential in a mount (the spec takes secretRef instead). */
const PLAIN_MOUNT_SECRET_RE = /^(password|passwd|pass|secret|token|key|accountKey|sasKey|sas|apiKey|clientSecret)$/i;
export const MOUNT_SECRET_MESSAGE =
  'a secret is never accepted in a job spec (specs are stored in Table Storage and shown in job views): give secretRef, the name of ' +
  'the app setting MOUNT_SECRET_<secretRef> that holds it (in Azure a Key Vault reference); blobfuse needs none (the pipeline mints a SAS)';

const MOUNT_KINDS = ['nfs', 'azureFiles', 'blobfuse', 'cifs', 'azureFilesNfs', 'netappFiles', 'lustre'] as const;
const KINDS_TEXT = MOUNT_KINDS.join(', ');

/** True when fixed path `a` is `b` or one lies inside the other (two bind mounts would hide each other). */
const overlaps = (a: string, b: string) => a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);

export function dataSectionIssues(raw: Obj): Issue[] {
  const issues: Issue[] = [];
  const add = (path: (string | number)[], message: string) => issues.push({ path, message });
  const reuse = isObj(raw.pool) && typeof raw.pool.poolId === 'string';

  // files: exactly one source; blob sources need account and container; url needs none; paths unique.
  const seenPaths = new Map<string, number>();
  list(raw.files).forEach((f, i) => {
    if (!isObj(f)) return;
    const sources = (['url', 'blob', 'prefix'] as const).filter((k) => has(f, k));
    if (sources.length === 0) add(['files', i], 'give exactly one source: url, blob (with account and container) or prefix (with account and container)');
    if (sources.length > 1) add(['files', i, sources[1]], `give only one of url, blob and prefix (also given: ${sources[0]})`);
    const fromBlob = sources.includes('blob') || sources.includes('prefix');
    if (fromBlob) {
      for (const k of ['account', 'container'] as const)
        if (!has(f, k)) add(['files', i, k], `is required with ${sources.includes('blob') ? 'blob' : 'prefix'}`);
    } else {
      for (const k of ['account', 'container'] as const)
        if (has(f, k)) add(['files', i, k], 'only goes with blob or prefix (an https url names its own server)');
    }
    if ((sources.includes('url') || sources.includes('blob')) && !has(f, 'path')) {
      add(['files', i, 'path'], `is required with ${sources.includes('url') ? 'url' : 'blob'}: the file's name in the working directory`);
    }
    const key = typeof f.path === 'string' && !sources.includes('prefix') ? f.path : undefined;
    if (key !== undefined) {
      if (seenPaths.has(key)) add(['files', i, 'path'], `duplicate of files[${seenPaths.get(key)}].path`);
      else seenPaths.set(key, i);
    }
  });

  // mounts: exactly one kind, unique names, no plain secrets, only on a pool the job creates.
  const mounts = list(raw.mounts);
  const names = new Map<string, number>();
  const paths: { path: string; i: number }[] = [];
  mounts.forEach((m, i) => {
    if (!isObj(m)) return;
    const kinds = MOUNT_KINDS.filter((k) => has(m, k));
    if (kinds.length === 0) add(['mounts', i], `give exactly one of ${KINDS_TEXT}`);
    if (kinds.length > 1) add(['mounts', i, kinds[1]], `give only one of ${KINDS_TEXT} (also given: ${kinds[0]})`);
    if (typeof m.path === 'string') {
      const other = paths.find((p) => overlaps(p.path, m.path as string));
      if (other) add(['mounts', i, 'path'], `overlaps mounts[${other.i}].path ${other.path}: two mounts cannot be at or inside one another`);
      else paths.push({ path: m.path, i });
    }
    if (typeof m.name === 'string') {
      if (names.has(m.name)) add(['mounts', i, 'name'], `duplicate of mounts[${names.get(m.name)}].name`);
      else names.set(m.name, i);
    }
    for (const kind of kinds) {
      const body = m[kind];
      if (!isObj(body)) continue;
      for (const k of Object.keys(body)) if (PLAIN_MOUNT_SECRET_RE.test(k)) add(['mounts', i, kind, k], MOUNT_SECRET_MESSAGE);
    }
    for (const k of Object.keys(m)) if (PLAIN_MOUNT_SECRET_RE.test(k)) add(['mounts', i, k], MOUNT_SECRET_MESSAGE);
  });
  if (reuse && mounts.length > 0)
    add(['mounts'], 'not allowed together with pool.poolId: Batch mounts file systems when it creates a pool, and a reused pool keeps its own');

  // scratch: kind mount names one of mounts.
  if (isObj(raw.scratch)) {
    const s = raw.scratch;
    const kind = s.kind ?? 'masterNfs';
    if (kind === 'mount') {
      if (!has(s, 'mount')) add(['scratch', 'mount'], 'is required with scratch.kind "mount": the name of one of mounts');
      else if (typeof s.mount === 'string' && !names.has(s.mount)) {
        add(['scratch', 'mount'], `must name one of mounts (${[...names.keys()].join(', ') || 'none given'})`);
      }
    } else if (has(s, 'mount')) {
      add(['scratch', 'mount'], 'only goes with scratch.kind "mount"');
    }
    // scratch.path is bind-mounted like a mount's fixed path: the two would hide one another.
    if (typeof s.path === 'string') {
      const other = paths.find((p) => overlaps(p.path, s.path as string));
      if (other) add(['scratch', 'path'], `overlaps mounts[${other.i}].path ${other.path}: the scratch and a mount cannot be at or inside one another`);
    }
    if (kind === 'beeond' && reuse) {
      add(['scratch', 'kind'], '"beeond" needs a pool the job creates (its start task installs or checks BeeOND), not pool.poolId');
    }
  }

  // outputs: something to upload, scratch only with scratch, no duplicate patterns, a usable prefix.
  if (isObj(raw.outputs)) {
    const o = raw.outputs;
    const files = list(o.files);
    if (files.length === 0 && o.logs === false)
      add(['outputs', 'files'], 'must list at least one pattern when outputs.logs is false (nothing would be uploaded)');
    const seen = new Map<string, number>();
    files.forEach((f, i) => {
      if (!isObj(f)) return;
      if (f.from === 'scratch' && !isObj(raw.scratch))
        add(['outputs', 'files', i, 'from'], '"scratch" needs a scratch section (the job has no shared scratch)');
      if (f.from === 'mount') {
        if (!has(f, 'mount')) add(['outputs', 'files', i, 'mount'], 'is required with from "mount": the name of one of mounts');
        else if (typeof f.mount === 'string' && !names.has(f.mount))
          add(['outputs', 'files', i, 'mount'], `must name one of mounts (${[...names.keys()].join(', ') || 'none given'})`);
      } else if (has(f, 'mount')) {
        add(['outputs', 'files', i, 'mount'], 'only goes with from "mount"');
      }
      const key = `${String(f.from ?? 'workdir')}:${f.from === 'mount' ? `${String(f.mount)}:` : ''}${String(f.pattern)}`;
      if (seen.has(key)) add(['outputs', 'files', i], `duplicate of outputs.files[${seen.get(key)}]`);
      else seen.set(key, i);
    });
    if (typeof o.prefix === 'string' && (o.prefix === '' || o.prefix.endsWith('/'))) {
      add(['outputs', 'prefix'], 'must not be empty or end with "/" (leave it out for the default: the job id)');
    }
  }
  return issues;
}
