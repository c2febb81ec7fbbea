/**
 * Reading recorded command lines as facts that can be compared flag by flag, whoever wrote them: an MPI launcher's argv
 * (Open MPI's mpirun or a Hydra mpiexec: Intel MPI, MPICH, MVAPICH) with the environment it was started with, and a
 * `docker run` / `singularity exec` argv. Two launchers that mean the same (hosts "a,b" with `--map-by ppr:3:node`,
 * or "a:3,b:3" with the same mapping) read as the same facts; anything else that differs is a difference.
 */
import * as fs from 'node:fs';

export type Facts = Record<string, string>;

const OPENMPI_ARITY: Record<string, number> = {
  '-np': 1,
  '-n': 1,
  '--np': 1,
  '-c': 1,
  '-host': 1,
  '--host': 1,
  '-H': 1,
  '--hostfile': 1,
  '-hostfile': 1,
  '--machinefile': 1,
  '-machinefile': 1,
  '--output-filename': 1,
  '--map-by': 1,
  '-map-by': 1,
  '--bind-to': 1,
  '-bind-to': 1,
  '--rank-by': 1,
  '-x': 1,
  '-wdir': 1,
  '--wdir': 1,
  '--mca': 2,
  '-mca': 2,
  '--gmca': 2,
  '-gmca': 2,
};
const HYDRA_ARITY: Record<string, number> = {
  '-hosts': 1,
  '-host': 1,
  '-np': 1,
  '-n': 1,
  '-ppn': 1,
  '-perhost': 1,
  '-f': 1,
  '-hostfile': 1,
  '-machinefile': 1,
  '-iface': 1,
  '-wdir': 1,
  '-genv': 2,
  '-env': 2,
  '-genvlist': 1,
  '-envlist': 1,
  '-bootstrap': 1,
  '-bootstrap-exec': 1,
};

/** Variables the comparison looks at in the ranks' environment: fabric selection, plus the job's own (passed in). */
export const FABRIC_ENV_RE = /^(?:I_MPI_|FI_|UCX_|MV2_|OMPI_MCA_)|^MANPATH$/;

export interface LaunchFacts {
  facts: Facts;
  /** The rank program's argv (what follows the launcher's options). */
  program: string[];
}

/**
 * The facts of one launcher call: hosts, rank count, ranks per node, MCA parameters, other flags, and the environment
 * every rank gets (Open MPI: only what -x forwards; Hydra: the launcher's whole environment plus -genv/-env).
 */
export function launchFacts(
  runtime: 'openmpi' | 'hydra',
  argv: string[],
  launcherEnv: Record<string, string>,
  envNames: (name: string) => boolean,
): LaunchFacts {
  const arity = runtime === 'openmpi' ? OPENMPI_ARITY : HYDRA_ARITY;
  const facts: Facts = {};
  const rankEnv: Record<string, string> = runtime === 'hydra' ? { ...launcherEnv } : {};
  let i = 0;
  for (; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('-')) break;
    let n = arity[a] ?? 0;
    // `-env NAME=VALUE` as one word (Shipyard's `-env $(cat UCX_IB_PKEY)`): read as meant.
    if (a === '-env' && argv[i + 1]?.includes('=')) n = 1;
    const args = argv.slice(i + 1, i + 1 + n);
    i += n;
    switch (a) {
      case '-np':
      case '-n':
      case '--np':
      case '-c':
        facts.np = args[0];
        break;
      case '-host':
      case '--host':
      case '-H':
      case '-hosts':
        facts.hosts = args[0]
          .split(',')
          .map((h) => h.replace(/:\d+$/, ''))
          .join(',');
        break;
      case '--hostfile':
      case '-hostfile':
      case '--machinefile':
      case '-machinefile':
      case '-f':
        facts.hosts = readHostfile(args[0]);
        break;
      case '--map-by':
      case '-map-by': {
        const m = /^ppr:(\d+):node$/.exec(args[0]);
        if (m) facts.ppn = m[1];
        else facts['map-by'] = args[0];
        break;
      }
      case '-ppn':
      case '-perhost':
        facts.ppn = args[0];
        break;
      case '--mca':
      case '-mca':
      case '--gmca':
      case '-gmca':
        facts[`mca ${args[0]}`] = args[1];
        break;
      case '-x': {
        const eq = args[0].indexOf('=');
        if (eq > 0) rankEnv[args[0].slice(0, eq)] = args[0].slice(eq + 1);
        else if (launcherEnv[args[0]] !== undefined) rankEnv[args[0]] = launcherEnv[args[0]];
        break;
      }
      case '-genv':
      case '-env': {
        if (args.length === 1) {
          const eq = args[0].indexOf('=');
          rankEnv[args[0].slice(0, eq)] = args[0].slice(eq + 1);
        } else rankEnv[args[0]] = args[1];
        break;
      }
      default:
        facts[`flag ${a}`] = args.length ? args.join(' ') : 'yes';
    }
  }
  for (const [k, v] of Object.entries(rankEnv)) if (envNames(k)) facts[`env ${k}`] = v;
  return { facts, program: argv.slice(i) };
}

function readHostfile(file: string): string {
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  return text
    .split('\n')
    .map((l) => l.trim().split(/[\s:]/)[0])
    .filter(Boolean)
    .join(',');
}

/** The facts of `docker run` options (the argv after `run`, up to the image), and the image and its arguments. */
export function dockerRunFacts(argv: string[]): { facts: Facts; image: string; command: string[] } {
  const facts: Facts = {};
  const binds: string[] = [];
  const env: string[] = [];
  const devices: string[] = [];
  let i = argv[0] === 'run' ? 1 : 0;
  const takes = new Set([
    '--name',
    '-w',
    '--workdir',
    '-v',
    '--volume',
    '-e',
    '--env',
    '--env-file',
    '--ulimit',
    '--shm-size',
    '--gpus',
    '--net',
    '--network',
    '--cap-add',
    '--device',
    '-u',
    '--user',
  ]);
  for (; i < argv.length; i++) {
    const raw = argv[i];
    if (!raw.startsWith('-')) break;
    const inline = raw.startsWith('--') && raw.includes('=');
    const flag = inline ? raw.slice(0, raw.indexOf('=')) : raw;
    let value: string | undefined = inline ? raw.slice(raw.indexOf('=') + 1) : undefined;
    if (value === undefined && takes.has(flag)) value = argv[++i];
    switch (flag) {
      case '-d':
        facts.detached = 'yes';
        break;
      case '--rm':
        facts.rm = 'yes';
        break;
      case '--privileged':
        facts.privileged = 'yes';
        break;
      case '--name':
        facts.name = value ?? '';
        break;
      case '-w':
      case '--workdir':
        facts.workdir = value ?? '';
        break;
      case '--net':
      case '--network':
        facts.network = value ?? '';
        break;
      case '--shm-size':
        facts.shm = value ?? '';
        break;
      case '--gpus':
        facts.gpus = value ?? '';
        break;
      case '--env-file':
        facts['env passing'] = `env-file ${value}`;
        break;
      case '-e':
      case '--env':
        env.push(value ?? '');
        break;
      case '-v':
      case '--volume':
        binds.push(value ?? '');
        break;
      case '--device':
        devices.push(value ?? '');
        break;
      case '--cap-add':
        facts[`cap ${(value ?? '').toUpperCase()}`] = 'yes';
        break;
      case '--ulimit': {
        const [k, v] = (value ?? '').split('=');
        // Docker reads -1 and 2^63-1 alike: no limit.
        facts[`ulimit ${k}`] = v === '-1' || v === '9223372036854775807' ? 'unlimited' : v;
        break;
      }
      default:
        facts[`flag ${flag}`] = value ?? 'yes';
    }
  }
  for (const b of binds) facts[`bind ${b.split(':')[1] ?? b}`] = b;
  if (env.length) facts['env passing'] = `named (${env.length})`;
  if (devices.length) facts.devices = devices.sort().join(',');
  return { facts, image: argv[i] ?? '', command: argv.slice(i + 1) };
}

/** `singularity <exec|run> [options] <image> <command…>`. */
export function singularityFacts(argv: string[]): { facts: Facts; image: string; command: string[] } {
  const facts: Facts = { cmd: argv[0] };
  const takes = new Set(['--pwd', '-B', '--bind', '-H', '--home']);
  let i = 1;
  for (; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('-')) break;
    if (takes.has(a)) {
      const v = argv[++i];
      if (a === '-B' || a === '--bind') facts[`bind ${v.split(':')[1] ?? v}`] = v;
      else facts[a.replace(/^-+/, '')] = v;
    } else facts[`flag ${a}`] = 'yes';
  }
  return { facts, image: argv[i] ?? '', command: argv.slice(i + 1) };
}

export interface Difference {
  key: string;
  shipyard?: string;
  ours?: string;
}

/** Every key whose value differs (or is on one side only). */
export function differences(shipyard: Facts, ours: Facts, prefix = ''): Difference[] {
  const keys = [...new Set([...Object.keys(shipyard), ...Object.keys(ours)])].sort();
  return keys
    .filter((k) => shipyard[k] !== ours[k])
    .map((k) => ({
      key: `${prefix}${k}`,
      ...(shipyard[k] !== undefined ? { shipyard: shipyard[k] } : {}),
      ...(ours[k] !== undefined ? { ours: ours[k] } : {}),
    }));
}
