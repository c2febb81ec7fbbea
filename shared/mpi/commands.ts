/**
 * Command lines for the multi-instance MPI task, the per-node image pulls and the job release cleanup.
 *
 * Shape of what we build (all lines are `/bin/bash -c '<one-line script>'` because Batch does not use a shell):
 *  - coordination (every node): download this node's shards, then for docker start the long-running container with
 *    host networking and sshd; for singularity/none nothing else.
 *  - application (master only): compute ranks from `$AZ_BATCH_HOST_LIST` and processes-per-node, then run the
 *    launcher (`mpirun`) with the user's options first and our automatic ones after, as Shipyard does. For docker the
 *    launcher runs inside the container through `docker exec`.
 *
 * Data never becomes code: the user's command is one word handed to `/bin/sh -c` on each rank, options and image
 * names are quoted words, and environment values are not in the command line at all: they travel in the task's
 * environment settings and are forwarded by name (`-x NAME` / `-genv NAME "$NAME"` / `docker run -e NAME`).
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
  resolveFabric,
} from './rdmaPresets';
import { bashCommandLine, shellJoin, shellQuote } from './shellQuote';

export type ContainerRuntime = 'docker' | 'singularity' | 'none';

export interface MpiTaskInput {
  runtime: ContainerRuntime;
  mpiRuntime: MpiRuntime;
  nodes: number;
  /** A number, or 'nproc' for the node's CPU count evaluated on the master at run time. */
  processesPerNode: number | 'nproc';
  /** The user's program and arguments as one string; each rank runs it with `/bin/sh -c`. */
  command: string;
  /** Extra launcher arguments, one argv word per element (`['--mca', 'btl', 'self,tcp']`). They go first. */
  options?: string[];
  /** Default 'auto': RDMA when the VM size has InfiniBand. */
  fabric?: Fabric;
  vmSize: string;
  /** Required for docker and singularity. */
  image?: string;
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
  /** Docker `--shm-size`. Default '1g' (Docker's 64m is too small for Intel MPI's shared-memory transport). */
  shmSize?: string;
  /** Launcher executable. Default 'mpirun'. */
  launcher?: string;
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
export const SHARD_MANIFEST_ENV = 'MPIJOB_SHARD_MANIFEST';

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

function noNul(field: string, value: string): void {
  if (value.includes('\0')) throw new PlanningError(`${field} contains a NUL byte`, { field });
}

interface Validated {
  input: MpiTaskInput;
  options: string[];
  env: Record<string, string>;
  sshPort: number;
  launcher: string;
}

function validate(input: MpiTaskInput): Validated {
  const fail = (message: string, details: Record<string, unknown>): never => {
    throw new PlanningError(`invalid MPI task input: ${message}`, details);
  };
  if (!['docker', 'singularity', 'none'].includes(input.runtime)) fail('unknown runtime', { runtime: input.runtime });
  if (!['intelmpi', 'openmpi', 'mpich', 'mvapich'].includes(input.mpiRuntime)) {
    fail('unknown mpiRuntime', { mpiRuntime: input.mpiRuntime });
  }
  if (!Number.isSafeInteger(input.nodes) || input.nodes < 1) fail('nodes must be a positive whole number', { nodes: input.nodes });
  const ppn = input.processesPerNode;
  if (ppn !== 'nproc' && (!Number.isSafeInteger(ppn) || ppn < 1)) {
    fail(`processesPerNode must be a positive whole number or 'nproc'`, { processesPerNode: ppn });
  }
  if (typeof input.command !== 'string' || input.command.trim() === '') fail('command must be a non-empty string', {});
  noNul('command', input.command);
  const options = input.options ?? [];
  options.forEach((o, i) => noNul(`options[${i}]`, o));
  const env = input.env ?? {};
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name)) fail(`environment variable name ${JSON.stringify(name)} is not a valid identifier`, { name });
    if (RESERVED_ENV_PREFIXES.some((p) => name.startsWith(p))) {
      fail(`environment variable ${name} uses a reserved prefix (${RESERVED_ENV_PREFIXES.join(', ')})`, { name });
    }
    if (typeof value !== 'string') fail(`environment variable ${name} must be a string`, { name });
    noNul(`env.${name}`, value);
  }
  if (input.runtime !== 'none') {
    if (!input.image || /\s/.test(input.image)) fail(`runtime ${input.runtime} needs an image name without spaces`, { image: input.image });
  }
  if (input.runtime === 'docker') {
    if (!input.containerName || !CONTAINER_NAME.test(input.containerName)) {
      fail('docker runtime needs a containerName matching [A-Za-z0-9][A-Za-z0-9_.-]*', { containerName: input.containerName });
    }
    if (input.shmSize !== undefined && !SHM_SIZE.test(input.shmSize)) fail('shmSize must look like 512m or 2g', { shmSize: input.shmSize });
  }
  const sshPort = input.sshPort ?? (input.runtime === 'docker' ? 23 : 22);
  if (!Number.isSafeInteger(sshPort) || sshPort < 1 || sshPort > 65535) fail('sshPort must be 1..65535', { sshPort });
  for (const f of ['preExecutionCommand', 'coordinationCommand', 'shardDownloadCommand', 'shardManifestPath', 'nodeSetupCommand'] as const) {
    const v = input[f];
    if (v !== undefined) noNul(f, v);
  }
  const launcher = input.launcher ?? 'mpirun';
  if (launcher.trim() === '') fail('launcher must not be empty', {});
  noNul('launcher', launcher);
  return { input, options, env, sshPort, launcher };
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
  if (v.input.shardManifestPath !== undefined) {
    all.set(SHARD_MANIFEST_ENV, v.input.shardManifestPath);
    forwarded.add(SHARD_MANIFEST_ENV);
  }
  const env = [...all.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, value]) => ({ name, value }));
  return { env, forwarded: [...forwarded].sort() };
}

function launcherScript(v: Validated, preset: FabricPreset, forwarded: readonly string[]): string {
  const { input } = v;
  const openmpi = input.mpiRuntime === 'openmpi';
  // For docker this script is the whole `bash -c` inside the container; otherwise it continues rankSetup's script.
  const lines: string[] = input.runtime === 'docker' ? ['set -euo pipefail'] : [];
  if (input.preExecutionCommand !== undefined) lines.push(`eval ${shellQuote(input.preExecutionCommand)}`);
  lines.push('mpijob_extra=()');
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
  for (const name of forwarded) auto.push(openmpi ? `-x ${name}` : `-genv ${name} "$${name}"`);
  auto.push('${mpijob_extra[@]+"${mpijob_extra[@]}"}');

  const program: string[] = [];
  if (input.runtime === 'singularity') {
    program.push(
      'singularity exec --pwd "$AZ_BATCH_TASK_WORKING_DIR" -B "$AZ_BATCH_NODE_ROOT_DIR:$AZ_BATCH_NODE_ROOT_DIR"',
      shellQuote(input.image as string),
    );
  }
  program.push('/bin/sh -c', shellQuote(input.command));
  const userOptions = v.options.length > 0 ? [shellJoin(v.options)] : [];
  lines.push(['exec', shellQuote(v.launcher), ...userOptions, ...auto, ...program].join(' '));
  return lines.join('; ');
}

/** Host-side prologue of the application command: rank counts and the host list in the launcher's format. */
function rankSetup(v: Validated, preset: FabricPreset): string[] {
  const { input } = v;
  const lines = ['set -euo pipefail'];
  if (preset.forwardUcxPkey) {
    lines.push(
      `if [ -r "${UCX_IB_PKEY_FILE}" ]; then mpijob_pkey=$(cat "${UCX_IB_PKEY_FILE}"); export UCX_IB_PKEY="\${mpijob_pkey#UCX_IB_PKEY=}"; fi`,
    );
  }
  lines.push(input.processesPerNode === 'nproc' ? 'export MPIJOB_PPN=$(nproc)' : `export MPIJOB_PPN=${input.processesPerNode}`);
  lines.push(`export MPIJOB_NODES=${input.nodes}`);
  lines.push('export MPIJOB_NP=$((MPIJOB_NODES * MPIJOB_PPN))');
  lines.push(': "${AZ_BATCH_HOST_LIST:?AZ_BATCH_HOST_LIST is not set: not running as a multi-instance task}"');
  // Open MPI wants slots per host (a:2,b:2); Hydra launchers take the plain list plus -ppn/-perhost.
  lines.push(
    input.mpiRuntime === 'openmpi'
      ? 'export MPIJOB_HOSTS="${AZ_BATCH_HOST_LIST//,/:${MPIJOB_PPN},}:${MPIJOB_PPN}"'
      : 'export MPIJOB_HOSTS="$AZ_BATCH_HOST_LIST"',
  );
  return lines;
}

function coordinationPrologue(input: MpiTaskInput): string[] {
  const lines = ['set -euo pipefail'];
  if (input.nodeSetupCommand !== undefined) lines.push(input.nodeSetupCommand);
  if (input.shardDownloadCommand !== undefined) lines.push(`eval ${shellQuote(input.shardDownloadCommand)}`);
  return lines;
}

function dockerRunOptions(v: Validated, preset: FabricPreset, envNames: readonly string[]): string[] {
  const name = v.input.containerName as string;
  const opts = ['-d', '--name', name, '--net=host', `--shm-size=${v.input.shmSize ?? '1g'}`];
  if (preset.containerRdmaDevices) opts.push('--ulimit', 'memlock=-1');
  for (const n of [...BATCH_ENV_INTO_CONTAINER, ...envNames]) opts.push('-e', n);
  return opts;
}

export function buildMpiTaskCommands(input: MpiTaskInput): MpiTaskCommands {
  const v = validate(input);
  const fabric = resolveFabric(input.fabric ?? 'auto', input.vmSize);
  const preset = applyUserOverrides(fabricPreset(input.mpiRuntime, fabric), v.options, v.env);
  const { env, forwarded } = taskEnvironment(v, preset);
  const launcher = launcherScript(v, preset, forwarded);

  if (input.runtime !== 'docker') {
    const coordination = coordinationPrologue(input);
    if (input.coordinationCommand !== undefined) coordination.push(`eval ${shellQuote(input.coordinationCommand)}`);
    coordination.push(':');
    const application = [...rankSetup(v, preset), launcher];
    return {
      coordinationCommandLine: bashCommandLine(coordination.join('; ')),
      applicationCommandLine: bashCommandLine(application.join('; ')),
      environment: env,
      fabric,
    };
  }

  const name = input.containerName as string;
  const qName = shellQuote(name);
  const runOptions = dockerRunOptions(v, preset, env.map((e) => e.name));
  const containerCommand =
    input.coordinationCommand !== undefined
      ? `/bin/sh -c ${shellQuote(input.coordinationCommand)}`
      : `/usr/sbin/sshd -D -p ${v.sshPort}`;
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

  const execEnv = ['MPIJOB_PPN', 'MPIJOB_NODES', 'MPIJOB_NP', 'MPIJOB_HOSTS', ...(preset.forwardUcxPkey ? ['UCX_IB_PKEY'] : [])];
  const application = [
    ...rankSetup(v, preset),
    [
      'exec docker exec',
      ...execEnv.map((n) => `-e ${n}`),
      '-w "$AZ_BATCH_TASK_WORKING_DIR"',
      qName,
      '/bin/bash -c',
      shellQuote(launcher),
    ].join(' '),
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
  image: string;
  registryLogin?: RegistryLogin;
}

/** One node's pull task. Exit code 0 means the image is present; stderr carries the registry's message otherwise. */
export function buildPullCommand(input: PullCommandInput): string {
  if (input.runtime === 'none') {
    throw new PlanningError('runtime none runs natively and has no image to pull', { image: input.image });
  }
  if (!input.image || /\s/.test(input.image)) throw new PlanningError('image name must be non-empty without spaces', { image: input.image });
  const login = input.registryLogin;
  if (login && !ENV_NAME.test(login.passwordEnvVar)) {
    throw new PlanningError('registryLogin.passwordEnvVar must be an environment variable name', { passwordEnvVar: login.passwordEnvVar });
  }
  const lines = ['set -euo pipefail'];
  const image = shellQuote(input.image);
  if (input.runtime === 'docker') {
    if (login) {
      lines.push(
        `printf '%s' "$${login.passwordEnvVar}" | docker login --username ${shellQuote(login.username)} --password-stdin ${shellQuote(login.server)}`,
      );
    }
    lines.push(`docker pull ${image}`);
  } else {
    if (login) {
      lines.push(`export SINGULARITY_DOCKER_USERNAME=${shellQuote(login.username)}`);
      lines.push(`export SINGULARITY_DOCKER_PASSWORD="$${login.passwordEnvVar}"`);
    }
    // Running a no-op fills the node's image cache exactly as the MPI run will look it up.
    lines.push(`singularity exec ${image} /bin/true`);
  }
  return bashCommandLine(lines.join('; '));
}
