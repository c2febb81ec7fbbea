/**
 * Shipyard's free-form container options (`additional_docker_run_options`, `additional_singularity_options`) against
 * the spec's allowlist (shared/core/spec/sections/container.ts): what has a field there is carried, what the control plane
 * always does is noted, anything else is reported unsupported. Pure.
 */
import { splitShellWords } from '../../../shared/core/mpi/shellWords';
import { SAFE_CAPABILITIES, ULIMIT_NAMES, bindRefusal } from '../../../shared/core/spec/sections/container';
import * as P from '../../../shared/core/spec/patterns';
import type { MappingStatus } from './report';
import { toShmSize } from './values';

export interface RunOptionsDraft {
  shmSize?: string;
  ulimits?: Record<string, number | 'unlimited'>;
  binds?: { source: string; target: string; readOnly: boolean }[];
  capAdd?: string[];
  privileged?: boolean;
}

/** What one option item became. */
export interface OptionVerdict {
  status: MappingStatus;
  target?: string;
  note: string;
}

export interface ParsedOptions {
  runOptions: RunOptionsDraft;
  gpus?: boolean;
  env: Record<string, string>;
  verdicts: OptionVerdict[];
}

const worst = (a: MappingStatus, b: MappingStatus): MappingStatus =>
  a === 'unsupported' || b === 'unsupported' ? 'unsupported' : a === 'approximated' || b === 'approximated' ? 'approximated' : 'mapped';

/** One verdict per list item (an item may hold several words, e.g. "-v /a:/b"). */
export function parseDockerRunOptions(items: readonly unknown[]): ParsedOptions {
  return parseOptions(items, dockerFlag);
}

type FlagReader = (flag: string, arg: () => string | undefined, out: ParsedOptions) => OptionVerdict;

/** Each item split into shell words, each flag (with its argument, inline or next) judged by `read`. */
function parseOptions(items: readonly unknown[], read: FlagReader): ParsedOptions {
  const out: ParsedOptions = { runOptions: {}, env: {}, verdicts: [] };
  for (const item of items) {
    if (typeof item !== 'string') {
      out.verdicts.push({ status: 'unsupported', note: 'not a string option' });
      continue;
    }
    let words: string[];
    try {
      words = splitShellWords(item);
    } catch {
      out.verdicts.push({ status: 'unsupported', note: 'unbalanced quotes: not read' });
      continue;
    }
    const parts: OptionVerdict[] = [];
    for (let i = 0; i < words.length; i++) {
      const [flag, inline] = splitFlag(words[i]);
      const arg = (): string | undefined => (inline !== undefined ? inline : words[++i]);
      parts.push(read(flag, arg, out));
    }
    out.verdicts.push(combine(parts));
  }
  return out;
}

function dockerFlag(flag: string, arg: () => string | undefined, out: ParsedOptions): OptionVerdict {
  const o = out.runOptions;
  switch (flag) {
    case '--rm':
      return { status: 'mapped', note: 'not needed: the job release task removes the container on every node' };
    case '--privileged':
      o.privileged = true;
      return {
        status: 'mapped',
        target: 'container.runOptions.privileged',
        note: 'the deployment must allow it (CONTAINER_ALLOW_PRIVILEGED=true), or submission is refused; capAdd from the allowlist is the alternative',
      };
    case '--net':
    case '--network': {
      const v = arg();
      return v === 'host'
        ? { status: 'mapped', note: "not needed: the job's container always uses host networking" }
        : { status: 'unsupported', note: `network "${v ?? ''}": the job's container always uses host networking (MPI needs the node's interfaces)` };
    }
    case '--cap-add': {
      const v = (arg() ?? '').toUpperCase().replace(/^CAP_/, '');
      if ((SAFE_CAPABILITIES as readonly string[]).includes(v)) {
        o.capAdd = [...new Set([...(o.capAdd ?? []), v])];
        return { status: 'mapped', target: 'container.runOptions.capAdd', note: `capability ${v}` };
      }
      return {
        status: 'unsupported',
        note: `capability ${v || '(none)'} is not in the allowlist (${SAFE_CAPABILITIES.join(', ')}); runOptions.privileged is the way to more`,
      };
    }
    case '--shm-size': {
      const v = arg();
      const size = toShmSize(v);
      if (size) {
        o.shmSize = size;
        return { status: 'mapped', target: 'container.runOptions.shmSize', note: `--shm-size ${size}` };
      }
      return { status: 'unsupported', note: `--shm-size "${v ?? ''}" is not a size the spec can write (like "512m", "8g")` };
    }
    case '--ulimit': {
      const v = arg() ?? '';
      const m = /^([a-z]+)=(-?\d+|unlimited)(?::(-?\d+|unlimited))?$/.exec(v);
      if (!m || !(ULIMIT_NAMES as readonly string[]).includes(m[1]))
        return { status: 'unsupported', note: `--ulimit ${v}: the spec takes ${ULIMIT_NAMES.join(', ')}` };
      const hard = m[3] ?? m[2];
      const value = hard === 'unlimited' || hard === '-1' ? 'unlimited' : Number(hard);
      o.ulimits = { ...(o.ulimits ?? {}), [m[1]]: value };
      return m[3] !== undefined && m[3] !== m[2]
        ? { status: 'approximated', target: `container.runOptions.ulimits.${m[1]}`, note: `soft and hard limit both ${hard} (the spec sets one value)` }
        : { status: 'mapped', target: `container.runOptions.ulimits.${m[1]}`, note: `--ulimit ${m[1]}=${hard}` };
    }
    case '-v':
    case '--volume':
      return bind(arg(), out);
    case '--gpus': {
      const v = arg();
      out.gpus = v !== undefined && v !== '0';
      return v === 'all'
        ? { status: 'mapped', target: 'container.gpus', note: 'every GPU of the node' }
        : { status: 'approximated', target: 'container.gpus', note: `--gpus ${v ?? ''}: the spec gives the container every GPU of the node or none` };
    }
    case '-e':
    case '--env': {
      const v = arg() ?? '';
      const eq = v.indexOf('=');
      if (eq > 0 && P.ENV_KEY_RE.test(v.slice(0, eq)) && P.SINGLE_LINE_TEXT_RE.test(v.slice(eq + 1))) {
        out.env[v.slice(0, eq)] = v.slice(eq + 1);
        return { status: 'approximated', target: `mpi.env.${v.slice(0, eq)}`, note: "set in every rank's environment instead of the container's" };
      }
      return { status: 'unsupported', note: `-e ${eq > 0 ? v.slice(0, eq) : v}: only NAME=value can be carried (as mpi.env)` };
    }
    case '--device': {
      const v = arg() ?? '';
      return /^\/dev\/infiniband\//.test(v)
        ? { status: 'mapped', note: 'not needed: the InfiniBand preset exposes /dev/infiniband/* to the container' }
        : { status: 'unsupported', note: `--device ${v}: devices other than InfiniBand are not exposed (GPUs: container.gpus)` };
    }
    default:
      return { status: 'unsupported', note: `${flag} is not in the container run-option allowlist (docs/workloads.md#containers)` };
  }
}

function bind(spec: string | undefined, out: ParsedOptions): OptionVerdict {
  const parts = (spec ?? '').split(':');
  const [source, target, opts] = parts;
  if (parts.length < 2 || parts.length > 3 || !P.ABSOLUTE_PATH_RE.test(source ?? '') || !P.ABSOLUTE_PATH_RE.test(target ?? '')) {
    return { status: 'unsupported', note: `volume "${spec ?? ''}": only host-path binds "/host:/container[:ro]" with plain absolute paths can be carried` };
  }
  const readOnly = (opts ?? '').split(',').includes('ro');
  const refusal = bindRefusal(source, readOnly);
  if (refusal) return { status: 'unsupported', note: `bind of ${source} ${refusal}` };
  out.runOptions.binds = [...(out.runOptions.binds ?? []), { source, target, readOnly }];
  const extra = (opts ?? '').split(',').filter((o) => o && o !== 'ro' && o !== 'rw');
  return extra.length
    ? { status: 'approximated', target: 'container.runOptions.binds', note: `bind ${source} → ${target} without ${extra.join(',')}` }
    : { status: 'mapped', target: 'container.runOptions.binds', note: `bind ${source} → ${target}${readOnly ? ' (read-only)' : ''}` };
}

/** Singularity's options: binds and --nv have fields; the namespace options Shipyard itself stripped for MPI. */
export function parseSingularityOptions(items: readonly unknown[]): ParsedOptions {
  return parseOptions(items, singularityFlag);
}

function singularityFlag(flag: string, arg: () => string | undefined, out: ParsedOptions): OptionVerdict {
  if (flag === '-B' || flag === '--bind') return bind(arg(), out);
  if (flag === '--nv') {
    out.gpus = true;
    return { status: 'mapped', target: 'container.gpus', note: '--nv' };
  }
  if (['-c', '--contain', '-C', '--containall', '-n', '--net'].includes(flag)) {
    return { status: 'approximated', note: `${flag} left out: MPI ranks need the host's network and devices (Shipyard dropped it on InfiniBand too)` };
  }
  return { status: 'unsupported', note: `${flag} is not a singularity option the spec carries (binds and --nv are)` };
}

function splitFlag(word: string): [string, string | undefined] {
  if (word.startsWith('--') && word.includes('=')) return [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)];
  return [word, undefined];
}

function combine(parts: OptionVerdict[]): OptionVerdict {
  if (parts.length === 0) return { status: 'mapped', note: 'empty option: nothing to carry' };
  if (parts.length === 1) return parts[0];
  const status = parts.map((p) => p.status).reduce(worst);
  const targets = [...new Set(parts.map((p) => p.target).filter((t): t is string => !!t))];
  return { status, ...(targets.length ? { target: targets.join(', ') } : {}), note: parts.map((p) => p.note).join('; ') };
}
