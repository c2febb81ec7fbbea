/**
 * How a process "inside" an emulated container sees files, commands and environment. There is no mount namespace
 * here, so container paths are translated to host paths:
 * - under a bind mount target   -> the bind source;
 * - under AZ_BATCH_NODE_ROOT_DIR -> unchanged (Batch mounts the node root into task containers at the same path);
 * - otherwise                   -> the same path under the container's rootfs.
 * Executables the image does not carry (bash, mpirun, ...) come from the host, as if they were in a base layer.
 */
import { accessSync, constants, existsSync } from 'node:fs';
import * as path from 'node:path';

export interface BindMount {
  source: string;
  target: string;
  readOnly?: boolean;
}

export interface ContainerView {
  rootfs: string;
  binds: BindMount[];
  nodeRootDir?: string;
}

function under(p: string, dir: string): string | undefined {
  const rel = path.posix.relative(dir, p);
  return rel === '' || (!rel.startsWith('..') && !path.posix.isAbsolute(rel)) ? rel : undefined;
}

/** Host path of a container path (absolute, or relative to the container's working dir given as a host path). */
export function toHostPath(view: ContainerView, containerPath: string): string {
  const p = path.posix.normalize(containerPath);
  const binds = [...view.binds].sort((a, b) => b.target.length - a.target.length);
  for (const b of binds) {
    const rel = under(p, path.posix.normalize(b.target));
    if (rel !== undefined) return path.join(b.source, rel);
  }
  if (view.nodeRootDir && under(p, view.nodeRootDir) !== undefined) return p;
  if (under(p, view.rootfs) !== undefined) return p; // already a host path into the rootfs
  return path.join(view.rootfs, p);
}

function isExecutable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return !p.endsWith('/');
  } catch {
    return false;
  }
}

/**
 * Host path of the program to run. Absolute names are looked up in the container view, then on the host;
 * bare names along PATH (already translated). Undefined when nothing matches.
 */
export function resolveProgram(view: ContainerView, program: string, pathVar: string, cwd: string): string | undefined {
  if (program.includes('/')) {
    if (!program.startsWith('/')) {
      const rel = path.resolve(cwd, program);
      return isExecutable(rel) ? rel : undefined;
    }
    const mapped = toHostPath(view, program);
    if (isExecutable(mapped)) return mapped;
    return isExecutable(program) ? program : undefined;
  }
  for (const dir of pathVar.split(':')) {
    if (!dir) continue;
    const candidate = path.join(dir, program);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Arguments that name files the image carries (absolute, present in the rootfs, absent on the host) are translated,
 * as a mount namespace would make them resolve. Everything else passes unchanged.
 */
export function translateArgs(view: ContainerView, args: string[]): string[] {
  return args.map((a) => {
    if (!a.startsWith('/') || a.includes('\n')) return a;
    const mapped = toHostPath(view, a);
    return mapped !== a && existsSync(mapped) && !existsSync(a) ? mapped : a;
  });
}

/** Image PATH entries translated into the rootfs, then the host's PATH (for the tools the image does not carry). */
export function containerPathVar(view: ContainerView, imagePath: string | undefined, hostPath: string | undefined): string {
  const inImage = (imagePath ?? '')
    .split(':')
    .filter(Boolean)
    .map((d) => toHostPath(view, d));
  const seen = new Set<string>();
  return [...inImage, ...(hostPath ?? '').split(':').filter(Boolean)].filter((d) => (seen.has(d) ? false : (seen.add(d), true))).join(':');
}

/** Parses `K=V` lines (and bare `K`, taken from `from`), as `--env-file` and `-e` do. */
export function parseEnvAssignments(items: string[], from: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq === 0) continue;
    if (eq < 0) {
      const v = from[item];
      if (v !== undefined) out[item] = v;
    } else out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

export function parseEnvFile(text: string, from: NodeJS.ProcessEnv): Record<string, string> {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trimStart())
    .filter((l) => l && !l.startsWith('#'));
  return parseEnvAssignments(lines, from);
}

const SHELLS = new Set(['sh', 'bash', 'dash']);

/**
 * Recognises an sshd command line and returns the port it would listen on. Also sees through a shell wrapper whose
 * script is a plain sshd invocation (`/bin/sh -c "/usr/sbin/sshd -D -p 23"`, optionally with `exec`), which is how
 * a user-given coordination command reaches `docker run`.
 */
export function sshdPort(argv: string[]): number | undefined {
  if (argv.length === 3 && SHELLS.has(path.posix.basename(argv[0])) && argv[1] === '-c' && /^[\w\s./=-]+$/.test(argv[2])) {
    const words = argv[2].trim().split(/\s+/);
    return sshdPort(words[0] === 'exec' ? words.slice(1) : words);
  }
  if (argv.length === 0 || path.posix.basename(argv[0]) !== 'sshd') return undefined;
  let port = 22;
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i];
    let v: string | undefined;
    if (a === '-p') v = argv[++i];
    else if (a.startsWith('-p')) v = a.slice(2);
    else if (a === '-o') {
      const o = argv[++i] ?? '';
      const m = /^Port[= ]\s*(\d+)$/i.exec(o);
      v = m?.[1];
    } else if (/^-oPort[= ]/i.test(a)) v = a.replace(/^-oPort[= ]\s*/i, '');
    if (v !== undefined && /^\d+$/.test(v)) port = Number(v);
  }
  return port;
}
