/**
 * Command lines for the multi-instance MPI task, the per-node image pulls and the job release cleanup.
 *
 * Shape of what we build (all lines are `/bin/bash -c '<one-line script>'` because Batch does not use a shell):
 *  - coordination (every node): download this node's shards, then for docker start the long-running container with
 *    host networking and sshd; for singularity/none the user's coordination command, if any.
 *  - application (master only): compute ranks from `$AZ_BATCH_HOST_LIST` and processes-per-node, write the host file,
 *    then, as user code (bash, the node's profile, no strict mode: userShell.ts), the pre-execution command and
 *    either the launcher we build (`managed`: `mpirun` with the user's options first and our automatic ones after,
 *    as Shipyard does) or the user's own launch script (`custom`: run once, with MPIJOB_* exported). For docker this
 *    part runs inside the container through `docker exec`.
 *
 * Data never becomes code: the user's command is one word handed to a shell on each rank, options and image names are
 * quoted words (an option's `$NAME` / `${NAME}` references are the one documented exception: they expand, as one
 * word, in the launcher's shell), and environment values are not in the command line at all: they travel in the
 * task's environment settings and are forwarded by name (`-x NAME` / `-genv NAME "$NAME"` / `docker run -e NAME`).
 */
import { PlanningError } from '../planning/errors';
import {
  EnvVar,
  Fabric,
  FabricPreset,
  MpiRuntime,
  ResolvedFabric,
  UCX_IB_PKEY_FILE,
  applyUserOverrides,
  fabricPreset,
  presetFamilyFor,
  resolveFabric,
} from './rdmaPresets';
import { bashCommandLine, shellJoin, shellQuote } from './shellQuote';
import { GLUE_STRICT, NODE_PROFILE, USER_MODE, userStep } from './userShell';
import { SINGULARITY_CACHE_DIR, sifPathExpr, sifPullLines, singularityUri, type SifSource } from './singularity';
import { COMPAT_VARIABLES, SCHEDULER_COMPAT, schedulerCompatLines, type SchedulerCompatInput } from './schedulerCompat';
import { secretFetchLines, type SecretFetch } from './secretFetch';

export type ContainerRuntime = 'docker' | 'singularity' | 'none';
export type ProcessesPerNode = number | 'nproc' | 'cores' | 'gpus';
export type LauncherMode = 'managed' | 'custom';

export interface BindMount {
  source: string;
  target: string;
  readOnly?: boolean;
}

/** Container options from the spec's allowlist (shared/core/spec/sections/container.ts), already validated there. */
export interface ContainerOptions {
  /** Docker `--shm-size`. Default '1g' (Docker's 64m is too small for Intel MPI's shared-memory transport). */
  shmSize?: string;
  /** Docker `--ulimit name=value` (value a number or -1 for unlimited). */
  ulimits?: Record<string, string>;
  /** Extra bind mounts (docker `-v`, singularity `-B`): the spec's binds, and later mounts/scratch. */
  binds?: BindMount[];
  /** Docker `--cap-add`. */
  capAdd?: string[];
  /** Docker `--privileged` (only when the deployment allows it; checked at intake). */
  privileged?: boolean;
  /** GPUs in the container: docker `--gpus all`, singularity `--nv`. */
  gpus?: boolean;
}

export interface MpiTaskInput {
  runtime: ContainerRuntime;
  mpiRuntime: MpiRuntime;
  /** The runtime's version ("2018", "4.1"): selects the preset family (rdmaPresets.ts). Default: the current one. */
  mpiVersion?: string;
  nodes: number;
  /** A number, or counted on the master at run time: 'nproc' (CPUs), 'cores' (physical cores), 'gpus' (NVIDIA GPUs). */
  processesPerNode: ProcessesPerNode;
  /**
   * managed: the user's program and arguments as one string; each rank runs it with a shell.
   * custom: the user's launch script, run once on the master.
   */
  command: string;
  /** Default 'managed'. */
  launcherMode?: LauncherMode;
  /** Extra launcher arguments, one argv word per element (`['--mca', 'btl', 'self,tcp']`). They go first. */
  options?: string[];
  /** Default 'auto': RDMA when the VM size has InfiniBand. */
  fabric?: Fabric;
  vmSize: string;
  /** Required for docker: the image reference. */
  image?: string;
  /** Required for singularity: the key of the job's SIF directory on every node (singularity.ts); image 0 runs. */
  sifCacheKey?: string;
  /** Required for docker: the long-running container's name (also what the release task removes). */
  containerName?: string;
  /** Port of the sshd the launcher reaches other nodes through. Default 23 for docker (sshd in the container), else 22. */
  sshPort?: number;
  env?: Record<string, string>;
  /** Shell code run on the master before the launcher, in the launcher's shell (e.g. `module load mpi/hpcx`). */
  preExecutionCommand?: string;
  /** Docker: the container's command instead of sshd. Others: shell code run on every node after the download. */
  coordinationCommand?: string;
  /** Where the node's shard manifest will be; exported as MPIJOB_SHARD_MANIFEST to the download step and every rank. */
  shardManifestPath?: string;
  /** Shell code that fetches this node's shards; runs on every node in the coordination step, before any rank starts. */
  shardDownloadCommand?: string;
  /**
   * Shell code run on every node in the coordination step before anything else of ours (before the container starts):
   * e.g. mounting the job's shared scratch. Trusted pipeline code, not user input.
   */
  nodeSetupCommand?: string;
  /** Docker `--shm-size` (kept for callers that only set this); containerOptions.shmSize wins. */
  shmSize?: string;
  containerOptions?: ContainerOptions;
  /** Launcher executable: a path or name, which may reference variables (`$MPI_BIN/mpirun`). Default 'mpirun'. */
  launcher?: string;
  /** Variables the master exports at run time (e.g. in the pre-execution step) that the launcher forwards to every rank. */
  forwardNames?: string[];
  /** PBS / Slurm allocation variables and a node file with one line per slot, exported on the master (schedulerCompat.ts). */
  schedulerCompat?: SchedulerCompatInput;
  /**
   * Key Vault secrets the master reads at task start (secretFetch.ts) and exports before the launcher: their values
   * are never in the task environment settings or a command line; the launcher forwards them by name only.
   */
  secrets?: SecretFetch[];
}

export interface MpiTaskCommands {
  coordinationCommandLine: string;
  applicationCommandLine: string;
  /** Task environment settings (names sorted). Values live here, never in the command lines. */
  environment: EnvVar[];
  /** Docker only: the `docker run` options, for the job record and debugging. */
  containerRunOptions?: string[];
  fabric: ResolvedFabric;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const RESERVED_ENV_PREFIXES = ['AZ_BATCH_', 'MPIJOB_'];
const CONTAINER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const SHM_SIZE = /^\d+[bkmg]?$/i;
const ULIMIT_NAME = /^[a-z]+$/;
const ULIMIT_VALUE = /^(?:-1|\d{1,19})(?::(?:-1|\d{1,19}))?$/;
const CAPABILITY = /^[A-Z_]{1,32}$/;
const BIND_PATH = /^\/[A-Za-z0-9._/-]*$/;
/** A word made of safe characters and `$NAME` / `${NAME}` references: it is emitted double-quoted, so it expands. */
const WORD_WITH_REFS = /^(?:[A-Za-z0-9_.,:=+/@%^-]|\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\})+$/;
export const SHARD_MANIFEST_ENV = 'MPIJOB_SHARD_MANIFEST';
/** The host file the master writes (Open MPI: `host slots=N`; Hydra: `host:N`), exported as MPIJOB_HOSTFILE. */
export const HOSTFILE_NAME = 'mpijob.hosts';

/** Batch variables the ranks may reasonably use inside the container. */
const BATCH_ENV_INTO_CONTAINER = [
  'AZ_BATCH_HOST_LIST',
  'AZ_BATCH_NODE_LIST',
  'AZ_BATCH_MASTER_NODE',
  'AZ_BATCH_IS_CURRENT_NODE_MASTER',
  'AZ_BATCH_NODE_ROOT_DIR',
  'AZ_BATCH_NODE_SHARED_DIR',
  'AZ_BATCH_NODE_STARTUP_DIR',
  'AZ_BATCH_TASK_DIR',
  'AZ_BATCH_TASK_WORKING_DIR',
  'AZ_BATCH_TASK_SHARED_DIR',
  'AZ_BATCH_JOB_ID',
  'AZ_BATCH_TASK_ID',
  'AZ_BATCH_NODE_ID',
  'AZ_BATCH_POOL_ID',
];

/**
 * Batch's directory variables exist only in the task's own processes: a rank Open MPI starts over ssh on another node
 * has none of them (Hydra launchers forward the launcher's whole environment). The paths are the same on every Azure
 * node, so the master forwards its values under these names and a rank falls back to them; where a node has its own
 * values (the local emulator's nodes), those win.
 */
const RANK_DIR_FALLBACKS = [
  ['AZ_BATCH_NODE_ROOT_DIR', 'MPIJOB_NODE_ROOT_DIR'],
  ['AZ_BATCH_NODE_SHARED_DIR', 'MPIJOB_NODE_SHARED_DIR'],
  ['AZ_BATCH_TASK_WORKING_DIR', 'MPIJOB_TASK_WORKING_DIR'],
] as const;
const rankDir = (batchVar: (typeof RANK_DIR_FALLBACKS)[number][0]): string => {
  const fallback = RANK_DIR_FALLBACKS.find(([b]) => b === batchVar)?.[1] as string;
  return `\${${batchVar}:-$${fallback}}`;
};

/** What the master exports before the launcher (and `docker exec` passes into the container). */
const MPIJOB_RUN_ENV = ['MPIJOB_PPN', 'MPIJOB_NODES', 'MPIJOB_NP', 'MPIJOB_HOSTS', 'MPIJOB_HOSTFILE'];

function noNul(field: string, value: string): void {
  if (value.includes('\0')) throw new PlanningError(`${field} contains a NUL byte`, { field });
}

/** One launcher word: literal (quoted) unless it is made only of safe characters and variable references. */
export function launcherWord(word: string): string {
  return word.includes('$') && WORD_WITH_REFS.test(word) ? `"${word}"` : shellQuote(word);
}

interface Validated {
  input: MpiTaskInput;
  mode: LauncherMode;
  options: string[];
  env: Record<string, string>;
  sshPort: number;
  launcher: string;
  container: ContainerOptions;
}

function validateContainerOptions(fail: (m: string, d: Record<string, unknown>) => never, input: MpiTaskInput): ContainerOptions {
  const o: ContainerOptions = { ...(input.containerOptions ?? {}) };
  o.shmSize ??= input.shmSize;
  if (o.shmSize !== undefined && !SHM_SIZE.test(o.shmSize)) fail('shmSize must look like 512m or 2g', { shmSize: o.shmSize });
  for (const [name, value] of Object.entries(o.ulimits ?? {})) {
    if (!ULIMIT_NAME.test(name) || !ULIMIT_VALUE.test(value)) fail(`ulimit ${name}=${value} is not a valid ulimit`, { name, value });
  }
  for (const c of o.capAdd ?? []) if (!CAPABILITY.test(c)) fail(`capability ${JSON.stringify(c)} is not a capability name`, { capability: c });
  for (const b of o.binds ?? []) {
    if (!BIND_PATH.test(b.source) || !BIND_PATH.test(b.target)) fail('bind source and target must be absolute paths of safe characters', { bind: b });
  }
  if (input.runtime === 'singularity') {
    for (const k of ['shmSize', 'ulimits', 'capAdd'] as const) {
      if (o[k] !== undefined) fail(`${k} is a docker option: singularity shares the host's IPC namespace, limits and capabilities`, { option: k });
    }
    if (o.privileged) fail('privileged is a docker option: singularity runs as the calling user', { option: 'privileged' });
  }
  if (input.runtime === 'none' && Object.values(input.containerOptions ?? {}).some((v) => v !== undefined && v !== false)) {
    fail('container options need a container runtime', {});
  }
  return o;
}

function validate(input: MpiTaskInput): Validated {
  const fail = (message: string, details: Record<string, unknown>): never => {
    throw new PlanningError(`invalid MPI task input: ${message}`, details);
  };
  if (!['docker', 'singularity', 'none'].includes(input.runtime)) fail('unknown runtime', { runtime: input.runtime });
  if (!['intelmpi', 'openmpi', 'mpich', 'mvapich'].includes(input.mpiRuntime)) {
    fail('unknown mpiRuntime', { mpiRuntime: input.mpiRuntime });
  }
  const family = presetFamilyFor(input.mpiRuntime, input.mpiVersion);
  if ('error' in family) fail(family.error, { mpiVersion: input.mpiVersion });
  if (!Number.isSafeInteger(input.nodes) || input.nodes < 1) fail('nodes must be a positive whole number', { nodes: input.nodes });
  const ppn = input.processesPerNode;
  if (typeof ppn === 'number' ? !Number.isSafeInteger(ppn) || ppn < 1 : !['nproc', 'cores', 'gpus'].includes(ppn)) {
    fail(`processesPerNode must be a positive whole number, 'nproc', 'cores' or 'gpus'`, { processesPerNode: ppn });
  }
  const mode = input.launcherMode ?? 'managed';
  if (mode !== 'managed' && mode !== 'custom') fail('launcherMode must be managed or custom', { launcherMode: mode });
  if (typeof input.command !== 'string' || input.command.trim() === '') fail('command must be a non-empty string', {});
  noNul('command', input.command);
  const options = input.options ?? [];
  options.forEach((o, i) => noNul(`options[${i}]`, o));
  if (mode === 'custom' && options.length) fail('launcher options belong to the managed launcher; a custom launch script passes its own', {});
  const env = input.env ?? {};
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name)) fail(`environment variable name ${JSON.stringify(name)} is not a valid identifier`, { name });
    if (RESERVED_ENV_PREFIXES.some((p) => name.startsWith(p))) {
      fail(`environment variable ${name} uses a reserved prefix (${RESERVED_ENV_PREFIXES.join(', ')})`, { name });
    }
    if (typeof value !== 'string') fail(`environment variable ${name} must be a string`, { name });
    noNul(`env.${name}`, value);
  }
  if (input.runtime === 'docker') {
    if (!input.image || /\s/.test(input.image)) fail('runtime docker needs an image name without spaces', { image: input.image });
    if (!input.containerName || !CONTAINER_NAME.test(input.containerName)) {
      fail('docker runtime needs a containerName matching [A-Za-z0-9][A-Za-z0-9_.-]*', { containerName: input.containerName });
    }
  }
  for (const s of input.secrets ?? []) if (s.env in env) fail(`environment variable ${s.env} is both a value and a secret`, { name: s.env });
  for (const name of input.forwardNames ?? [])
    if (!ENV_NAME.test(name)) fail(`forwarded variable name ${JSON.stringify(name)} is not a valid identifier`, { name });
  if (input.runtime === 'singularity' && !input.sifCacheKey) fail("runtime singularity needs the image's sifCacheKey", {});
  const compat = input.schedulerCompat;
  if (compat !== undefined) {
    if (!(SCHEDULER_COMPAT as readonly string[]).includes(compat.kind))
      fail(`schedulerCompat must be one of ${SCHEDULER_COMPAT.join(', ')}`, { schedulerCompat: compat.kind });
    noNul('schedulerCompat.jobId', compat.jobId);
    noNul('schedulerCompat.jobName', compat.jobName);
  }
  const container = validateContainerOptions(fail, input);
  const sshPort = input.sshPort ?? (input.runtime === 'docker' ? 23 : 22);
  if (!Number.isSafeInteger(sshPort) || sshPort < 1 || sshPort > 65535) fail('sshPort must be 1..65535', { sshPort });
  for (const f of ['preExecutionCommand', 'coordinationCommand', 'shardDownloadCommand', 'shardManifestPath', 'nodeSetupCommand'] as const) {
    const v = input[f];
    if (v !== undefined) noNul(f, v);
  }
  const launcher = input.launcher ?? 'mpirun';
  if (launcher.trim() === '') fail('launcher must not be empty', {});
  if (mode === 'custom' && input.launcher !== undefined) fail('a launcher executable belongs to the managed launcher', {});
  noNul('launcher', launcher);
  return { input, mode, options, env, sshPort, launcher, container };
}

/** Environment settings for the task: preset (minus user overrides), launcher ssh port, user env, manifest path. */
function taskEnvironment(v: Validated, preset: FabricPreset): { env: EnvVar[]; forwarded: string[] } {
  const all = new Map<string, string>();
  for (const e of preset.env) all.set(e.name, e.value);
  const forwarded = new Set<string>(preset.env.map((e) => e.name));
  if (v.sshPort !== 22) {
    // Hydra-based launchers take extra ssh arguments from the environment; Open MPI gets a flag instead.
    if (v.input.mpiRuntime === 'intelmpi') all.set('I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS', `-p ${v.sshPort}`);
    if (v.input.mpiRuntime === 'mpich' || v.input.mpiRuntime === 'mvapich') all.set('HYDRA_LAUNCHER_EXTRA_ARGS', `-p ${v.sshPort}`);
  }
  for (const [name, value] of Object.entries(v.env)) {
    all.set(name, value);
    forwarded.add(name);
  }
  for (const name of v.input.forwardNames ?? []) forwarded.add(name);
  if (v.input.shardManifestPath !== undefined) {
    all.set(SHARD_MANIFEST_ENV, v.input.shardManifestPath);
    forwarded.add(SHARD_MANIFEST_ENV);
  }
  const env = [...all.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, value]) => ({ name, value }));
  return { env, forwarded: [...forwarded].sort() };
}

/** What each rank runs: the user's command under a shell, in the image for singularity (resolved on each node). */
function rankProgram(v: Validated): string[] {
  const { input } = v;
  if (input.runtime === 'singularity') {
    // Evaluated by each rank's own shell, so the SIF path and the binds are that node's (identical paths on Azure).
    const root = rankDir('AZ_BATCH_NODE_ROOT_DIR');
    const script = [
      `exec singularity exec --pwd "${rankDir('AZ_BATCH_TASK_WORKING_DIR')}" -B "${root}:${root}"`,
      ...singularityOptions(v.container),
      sifPathExpr(input.sifCacheKey as string, 0, `"${rankDir('AZ_BATCH_NODE_SHARED_DIR')}"`),
      '/bin/sh -c "$1"',
    ].join(' ');
    return ['/bin/bash -c', shellQuote(script), 'mpijob-rank', shellQuote(input.command)];
  }
  // Natively every Batch node has bash (vendor scripts use `source`); images may not, so containers get /bin/sh.
  return [input.runtime === 'none' ? '/bin/bash -c' : '/bin/sh -c', shellQuote(input.command)];
}

function singularityOptions(o: ContainerOptions): string[] {
  const out: string[] = [];
  if (o.gpus) out.push('--nv');
  for (const b of o.binds ?? []) out.push('-B', shellQuote(`${b.source}:${b.target}${b.readOnly ? ':ro' : ''}`));
  return out;
}

/** The managed launcher line: user options first, then ours, then the rank program. */
function managedLaunch(v: Validated, preset: FabricPreset, forwarded: readonly string[]): string[] {
  const { input } = v;
  const openmpi = input.mpiRuntime === 'openmpi';
  const lines: string[] = ['mpijob_extra=()'];
  if (preset.forwardUcxPkey) {
    lines.push(
      openmpi
        ? 'if [ -n "${UCX_IB_PKEY:-}" ]; then mpijob_extra+=(-x UCX_IB_PKEY); fi'
        : 'if [ -n "${UCX_IB_PKEY:-}" ]; then mpijob_extra+=(-genv UCX_IB_PKEY "$UCX_IB_PKEY"); fi',
    );
  }
  const auto: string[] = [];
  if (openmpi) {
    auto.push('-np "$MPIJOB_NP"', '--host "$MPIJOB_HOSTS"', '--map-by "ppr:${MPIJOB_PPN}:node"');
    if (input.runtime === 'docker') auto.push('--allow-run-as-root');
  } else {
    auto.push('-hosts "$AZ_BATCH_HOST_LIST"', '-np "$MPIJOB_NP"');
    auto.push(input.mpiRuntime === 'intelmpi' ? '-perhost "$MPIJOB_PPN"' : '-ppn "$MPIJOB_PPN"');
  }
  const groups = [...preset.launcherArgs];
  if (openmpi && v.sshPort !== 22) groups.push({ key: 'mca:plm_rsh_args', args: ['--mca', 'plm_rsh_args', `-p ${v.sshPort}`] });
  const kept = applyUserOverrides({ ...preset, launcherArgs: groups }, v.options, v.env).launcherArgs;
  for (const g of kept) auto.push(shellJoin(g.args));
  const rankEnv = input.runtime === 'singularity' ? RANK_DIR_FALLBACKS.map(([, fallback]) => fallback) : [];
  for (const name of [...forwarded, ...rankEnv]) auto.push(openmpi ? `-x ${name}` : `-genv ${name} "$${name}"`);
  // Secrets by name only: -genv NAME "$NAME" would put the value in the launcher's arguments.
  const secretNames = (input.secrets ?? []).map((s) => s.env);
  if (secretNames.length) auto.push(...(openmpi ? secretNames.map((n) => `-x ${n}`) : [`-genvlist ${secretNames.join(',')}`]));
  auto.push('${mpijob_extra[@]+"${mpijob_extra[@]}"}');
  const userOptions = v.options.map(launcherWord);
  lines.push(['exec', launcherWord(v.launcher), ...userOptions, ...auto, ...rankProgram(v)].join(' '));
  return lines;
}

/**
 * The launch part of the application command, run where the launcher runs (the host, or inside the docker
 * container): the node's profile and the pre-execution command as user code, then our launcher or the user's own.
 */
function launchScript(v: Validated, preset: FabricPreset, forwarded: readonly string[]): string[] {
  const { input } = v;
  const lines: string[] = input.runtime === 'docker' ? [GLUE_STRICT] : [];
  lines.push(USER_MODE, NODE_PROFILE, GLUE_STRICT);
  if (input.preExecutionCommand !== undefined) lines.push(...userStep('preExecutionCommand', input.preExecutionCommand));
  if (v.mode === 'managed') return [...lines, ...managedLaunch(v, preset, forwarded)];
  // The user's launch script decides the task's exit code: it is the script's last command.
  return [...lines, USER_MODE, `eval ${shellQuote(input.command)}`];
}

function ppnLines(ppn: ProcessesPerNode): string[] {
  if (typeof ppn === 'number') return [`export MPIJOB_PPN=${ppn}`];
  if (ppn === 'nproc') return ['export MPIJOB_PPN=$(nproc)'];
  if (ppn === 'cores') {
    // Physical cores (lscpu counts unique core/socket pairs); nproc counts SMT threads too.
    return [
      "mpijob_cores=$( (lscpu -p=CORE,SOCKET 2>/dev/null || true) | (grep -v '^#' || true) | sort -u | wc -l)",
      'if [ "$mpijob_cores" -lt 1 ]; then mpijob_cores=$(nproc); fi',
      'export MPIJOB_PPN=$mpijob_cores',
    ];
  }
  return [
    'if ! command -v nvidia-smi >/dev/null 2>&1; then echo "[mpijob] processesPerNode gpus: nvidia-smi is not on this node (no NVIDIA driver), cannot count GPUs" >&2; exit 1; fi',
    "mpijob_gpus=$( (nvidia-smi -L || true) | (grep -c '^GPU ' || true))",
    'if [ "$mpijob_gpus" -lt 1 ]; then echo "[mpijob] processesPerNode gpus: nvidia-smi lists no GPU on this node" >&2; exit 1; fi',
    'export MPIJOB_PPN=$mpijob_gpus MPIJOB_GPUS=$mpijob_gpus',
  ];
}

/** Host-side prologue of the application command: rank counts, the host list and file in the launcher's format. */
function rankSetup(v: Validated, preset: FabricPreset): string[] {
  const { input } = v;
  const openmpi = input.mpiRuntime === 'openmpi';
  const lines = [GLUE_STRICT];
  if (preset.forwardUcxPkey) {
    lines.push(`if [ -r "${UCX_IB_PKEY_FILE}" ]; then mpijob_pkey=$(cat "${UCX_IB_PKEY_FILE}"); export UCX_IB_PKEY="\${mpijob_pkey#UCX_IB_PKEY=}"; fi`);
  }
  lines.push(': "${AZ_BATCH_HOST_LIST:?AZ_BATCH_HOST_LIST is not set: not running as a multi-instance task}"');
  lines.push(...ppnLines(input.processesPerNode));
  lines.push(`export MPIJOB_NODES=${input.nodes}`);
  lines.push('export MPIJOB_NP=$((MPIJOB_NODES * MPIJOB_PPN))');
  // Open MPI wants slots per host (a:2,b:2); Hydra launchers take the plain list plus -ppn/-perhost.
  lines.push(openmpi ? 'export MPIJOB_HOSTS="${AZ_BATCH_HOST_LIST//,/:${MPIJOB_PPN},}:${MPIJOB_PPN}"' : 'export MPIJOB_HOSTS="$AZ_BATCH_HOST_LIST"');
  lines.push(`export MPIJOB_HOSTFILE="\${AZ_BATCH_TASK_WORKING_DIR:-$PWD}/${HOSTFILE_NAME}"`);
  lines.push(
    `for mpijob_h in \${AZ_BATCH_HOST_LIST//,/ }; do printf ${openmpi ? "'%s slots=%s\\n'" : "'%s:%s\\n'"} "$mpijob_h" "$MPIJOB_PPN"; done > "$MPIJOB_HOSTFILE"`,
  );
  if (input.schedulerCompat) lines.push(...schedulerCompatLines(input.schedulerCompat));
  if (input.runtime === 'singularity') {
    lines.push(`export MPIJOB_IMAGE=${sifPathExpr(input.sifCacheKey as string, 0)}`);
    lines.push(...RANK_DIR_FALLBACKS.map(([batchVar, fallback]) => `export ${fallback}="$${batchVar}"`));
  }
  // On the host (docker: before docker exec, which passes them in by name), before any user code runs.
  lines.push(...secretFetchLines(input.secrets ?? []));
  return lines;
}

function coordinationPrologue(input: MpiTaskInput): string[] {
  const lines = [GLUE_STRICT];
  if (input.nodeSetupCommand !== undefined) lines.push(input.nodeSetupCommand);
  if (input.shardDownloadCommand !== undefined) lines.push(`eval ${shellQuote(input.shardDownloadCommand)}`);
  return lines;
}

function dockerRunOptions(v: Validated, preset: FabricPreset, envNames: readonly string[]): string[] {
  const name = v.input.containerName as string;
  const o = v.container;
  const opts = ['-d', '--name', name, '--net=host', `--shm-size=${o.shmSize ?? '1g'}`];
  const ulimits = { ...(preset.containerRdmaDevices ? { memlock: '-1' } : {}), ...(o.ulimits ?? {}) };
  for (const [k, val] of Object.entries(ulimits)) opts.push('--ulimit', `${k}=${val}`);
  for (const c of o.capAdd ?? []) opts.push(`--cap-add=${c}`);
  if (o.privileged) opts.push('--privileged');
  if (o.gpus) opts.push('--gpus', 'all');
  for (const b of o.binds ?? []) opts.push('-v', `${b.source}:${b.target}${b.readOnly ? ':ro' : ''}`);
  for (const n of [...BATCH_ENV_INTO_CONTAINER, ...envNames]) opts.push('-e', n);
  return opts;
}

export function buildMpiTaskCommands(input: MpiTaskInput): MpiTaskCommands {
  const v = validate(input);
  const fabric = resolveFabric(input.fabric ?? 'auto', input.vmSize);
  const preset = applyUserOverrides(fabricPreset(input.mpiRuntime, fabric, input.mpiVersion), v.options, v.env);
  const { env, forwarded } = taskEnvironment(v, preset);
  const launch = launchScript(v, preset, forwarded);

  if (input.runtime !== 'docker') {
    const coordination = coordinationPrologue(input);
    if (input.coordinationCommand !== undefined) {
      coordination.push(USER_MODE, NODE_PROFILE, GLUE_STRICT, ...userStep('coordinationCommand', input.coordinationCommand));
    }
    coordination.push(':');
    const application = [...rankSetup(v, preset), ...launch];
    return {
      coordinationCommandLine: bashCommandLine(coordination.join('; ')),
      applicationCommandLine: bashCommandLine(application.join('; ')),
      environment: env,
      fabric,
    };
  }

  const name = input.containerName as string;
  const qName = shellQuote(name);
  const runOptions = dockerRunOptions(
    v,
    preset,
    env.map((e) => e.name),
  );
  const containerCommand =
    input.coordinationCommand !== undefined ? `/bin/sh -c ${shellQuote(input.coordinationCommand)}` : `/usr/sbin/sshd -D -p ${v.sshPort}`;
  const coordination = coordinationPrologue(input);
  coordination.push(`docker rm -f ${qName} >/dev/null 2>&1 || true`);
  if (preset.containerRdmaDevices) {
    coordination.push('mpijob_dev=()', 'for d in /dev/infiniband/*; do if [ -e "$d" ]; then mpijob_dev+=("--device=$d"); fi; done');
  }
  coordination.push(
    [
      'docker run',
      shellJoin(runOptions),
      ...(preset.containerRdmaDevices ? ['${mpijob_dev[@]+"${mpijob_dev[@]}"}'] : []),
      '-v "$AZ_BATCH_NODE_ROOT_DIR:$AZ_BATCH_NODE_ROOT_DIR" -w "$AZ_BATCH_TASK_WORKING_DIR"',
      shellQuote(input.image as string),
      containerCommand,
    ].join(' '),
  );
  // The coordination command must leave a ready service behind: a container that exits at once (bad sshd config,
  // missing binary) fails here with its logs instead of as an opaque launcher error later.
  coordination.push(
    `sleep 1; if [ "$(docker inspect -f '{{.State.Running}}' ${qName} 2>/dev/null)" != true ]; then echo "container ${name} is not running after start" >&2; docker logs ${qName} >&2 || true; exit 1; fi`,
  );

  const execEnv = [
    ...MPIJOB_RUN_ENV,
    ...(input.processesPerNode === 'gpus' ? ['MPIJOB_GPUS'] : []),
    ...(preset.forwardUcxPkey ? ['UCX_IB_PKEY'] : []),
    ...(input.schedulerCompat ? ['MPIJOB_NODEFILE', ...COMPAT_VARIABLES[input.schedulerCompat.kind]] : []),
    ...(input.secrets ?? []).map((s) => s.env),
  ];
  const application = [
    ...rankSetup(v, preset),
    ['exec docker exec', ...execEnv.map((n) => `-e ${n}`), '-w "$AZ_BATCH_TASK_WORKING_DIR"', qName, '/bin/bash -c', shellQuote(launch.join('; '))].join(' '),
  ];
  return {
    coordinationCommandLine: bashCommandLine(coordination.join('; ')),
    applicationCommandLine: bashCommandLine(application.join('; ')),
    environment: env,
    containerRunOptions: [
      ...runOptions,
      ...(preset.containerRdmaDevices ? ['--device=/dev/infiniband/*'] : []),
      '-v',
      '$AZ_BATCH_NODE_ROOT_DIR:$AZ_BATCH_NODE_ROOT_DIR',
      '-w',
      '$AZ_BATCH_TASK_WORKING_DIR',
    ],
    fabric,
  };
}

/**
 * Removes the job's containers on this node (job release task, and the sweep's per-node cleanup task). The exit
 * code is the verdict the sweep relies on: 0 only when none of the containers is left (missing ones are fine);
 * a container runtime that cannot list its containers is a failure, not "nothing there".
 */
export function buildContainerCleanupCommand(containerNames: readonly string[]): string {
  for (const n of containerNames) {
    if (!CONTAINER_NAME.test(n)) throw new PlanningError(`invalid container name ${JSON.stringify(n)}`, { containerName: n });
  }
  if (containerNames.length === 0) return bashCommandLine(':');
  const present = (v: string) => `printf '%s\\n' "$${v}" | grep -Fxq -- "$c"`;
  return bashCommandLine(
    'left=0; ' +
      `for c in ${shellJoin(containerNames)}; do ` +
      'if ! before=$(docker ps -a --format "{{.Names}}"); then echo "docker ps failed: cannot tell whether $c is on this node" >&2; left=1; continue; fi; ' +
      `if ! ${present('before')}; then echo "no container $c"; continue; fi; ` +
      'docker rm -f -v "$c" >/dev/null 2>&1; ' +
      `if after=$(docker ps -a --format "{{.Names}}") && ! ${present('after')}; then echo "removed container $c"; ` +
      'else echo "container $c is still on this node after docker rm" >&2; left=1; fi; ' +
      'done; exit $left',
  );
}

export interface RegistryLogin {
  server: string;
  username: string;
  /** Name of a task environment variable holding the password or token, so the secret is never in a command line. */
  passwordEnvVar: string;
}

export interface PullCommandInput {
  runtime: ContainerRuntime;
  /** Docker: an image reference. Singularity: a reference or URI (docker://, oras://, library://; bare = docker://). */
  image?: string;
  /** Singularity: a SIF file the task downloaded (a blob through a resource file), relative to its directory. */
  downloadedSif?: string;
  /** Singularity: the job's SIF directory key and this image's index in it (singularity.ts). */
  sifCacheKey?: string;
  sifIndex?: number;
  registryLogin?: RegistryLogin;
}

/** One node's pull of one image. Exit code 0 means the image is present; stderr carries the registry's message otherwise. */
export function buildPullCommand(input: PullCommandInput): string {
  return bashCommandLine([GLUE_STRICT, ...pullLines(input)].join('; '));
}

/** The lines of one image's pull, for a strict script (several images share one task). */
export function pullLines(input: PullCommandInput): string[] {
  if (input.runtime === 'none') {
    throw new PlanningError('runtime none runs natively and has no image to pull', { image: input.image });
  }
  const login = input.registryLogin;
  if (login && !ENV_NAME.test(login.passwordEnvVar)) {
    throw new PlanningError('registryLogin.passwordEnvVar must be an environment variable name', { passwordEnvVar: login.passwordEnvVar });
  }
  const lines: string[] = [];
  if (input.runtime === 'docker') {
    if (!input.image || /\s/.test(input.image)) throw new PlanningError('image name must be non-empty without spaces', { image: input.image });
    if (login) {
      lines.push(`printf '%s' "$${login.passwordEnvVar}" | docker login --username ${shellQuote(login.username)} --password-stdin ${shellQuote(login.server)}`);
    }
    lines.push(`docker pull ${shellQuote(input.image)}`);
    return lines;
  }
  if (!input.sifCacheKey) throw new PlanningError("a singularity pull needs the job's sifCacheKey", {});
  let source: SifSource;
  if (input.downloadedSif !== undefined) {
    source = { downloadedFile: input.downloadedSif };
  } else {
    if (!input.image || /\s/.test(input.image)) throw new PlanningError('image name must be non-empty without spaces', { image: input.image });
    source = { uri: singularityUri(input.image) };
  }
  if (login) {
    lines.push(`export SINGULARITY_DOCKER_USERNAME=${shellQuote(login.username)}`);
    lines.push(`export SINGULARITY_DOCKER_PASSWORD="$${login.passwordEnvVar}"`);
  }
  lines.push(...sifPullLines(input.sifCacheKey, input.sifIndex ?? 0, source));
  return lines;
}

export { SINGULARITY_CACHE_DIR };
