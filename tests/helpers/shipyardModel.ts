/**
 * A pure model of what Batch Shipyard 3.9.1 has Batch run for a task, written from the design folder's reading of its
 * source (shared/notes/batch-shipyard.md §2, "The generated multi-instance task"; §1.3 for the settings' defaults).
 * Each flag says where it comes from: "§2.1 n" is item n of the docker run options list, "§2 table" the MPI launcher
 * table. Where the notes are silent, the Shipyard source line is named (convoy/settings.py, convoy/batch.py at
 * bf190ec). The corpus test runs what this model returns and what our builders return under the same bash, with the
 * same recording stubs, and compares them flag by flag.
 *
 * Only what the recipes use is modelled: labels, ports, entrypoint, user identity, data volumes and input/output
 * data are not (none of the MPI recipes sets them; shared data volumes appear as a symbolic bind).
 */
import { shellQuote } from '../../shared/core/mpi/shellQuote';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** §1.1 vm_size: the SR-IOV and NetworkDirect InfiniBand patterns; GPU sizes from convoy/settings.py L59-72. */
export const SRIOV_RE = /^standard_((hb|hc)[\d]+m?rs?(_v[\d])?)$/i;
const SRIOV_TRANSITION_RE = /^standard_(nc[\d]+rs_v3)$/i;
export const NETWORKDIRECT_RE = /^standard_((a8|a9)|((h|nc|nd)[\d]+m?rs?(_v[1-3])?))(_promo)?$/i;
const GPU_COMPUTE_RE = /^standard_n[cd][\d]+r?s?(_v[\d])?(_promo)?$/i;
const GPU_VIS_RE = /^standard_nv[\d]+s?(_v2)?(_promo)?$/i;

export const isSriov = (size: string) => SRIOV_RE.test(size) || SRIOV_TRANSITION_RE.test(size);
export const isNetworkDirect = (size: string) => NETWORKDIRECT_RE.test(size) && !SRIOV_TRANSITION_RE.test(size);
export const isRdmaPool = (size: string) => isSriov(size) || isNetworkDirect(size);
export const isGpuPool = (size: string) => GPU_COMPUTE_RE.test(size) || GPU_VIS_RE.test(size);

/** §2.1: where the SR-IOV node preparation leaves the partition key. */
export const UCX_IB_PKEY_FILE = '$AZ_BATCH_NODE_STARTUP_DIR/wd/UCX_IB_PKEY';

export interface ShipyardPoolModel {
  /** The nodes' VM size. The corpus test passes the size our spec runs on: "what Shipyard would run on the same nodes". */
  vmSize: string;
  interNodeCommunication: boolean;
  /** §1.1.3 `native: true`. */
  native: boolean;
  publisher?: string;
  offer?: string;
}

export interface ShipyardTask {
  native: boolean;
  runtime: 'docker' | 'singularity';
  multiInstance: boolean;
  image: string;
  /** §2.1 3: `<job id>-<image with / and : replaced by ->`. */
  containerName?: string;
  /** §2.1 (docker run options) or §2.3 (singularity run options), in the order Shipyard appends them. */
  runOptions: string[];
  /** §2.1: the coordination command line every node runs (non-native docker); §2.2 native; §2.3 ':' for singularity. */
  coordinationCommandLine?: string;
  /** SHIPYARD_USER_PROLOGUE_CMD (the pre-execution command). */
  userPrologue?: string;
  /** SHIPYARD_USER_CMD: the MPI line (§2 table) or the task's command. */
  userCommand: string;
  /** Task environment: job then task variables (§1.3), then the InfiniBand variables (§2 table). */
  environment: Record<string, string>;
  infiniband: boolean;
  gpu: string;
  numInstances: number;
  /** Singularity: exec or run (§2.3). */
  singularityCmd?: string;
}

/** Effective task setting: the task's, else the job's (convoy/settings.py task_settings reads both). */
function setting(job: Obj, task: Obj, key: string): unknown {
  return task[key] ?? job[key];
}

export function shipyardTask(pool: ShipyardPoolModel, job: Obj, task: Obj, numInstances: number, config: Obj = {}): ShipyardTask {
  const docker = typeof task.docker_image === 'string';
  const image = (docker ? task.docker_image : task.singularity_image) as string;
  const mi = isObj(task.multi_instance) ? task.multi_instance : undefined;
  const size = pool.vmSize;
  // §1.3 infiniband: "defaults to true on an RDMA VM size when inter-node communication is on". Only the task's own
  // value is read: convoy/settings.py task_settings reads the job's without assigning it.
  const infiniband = typeof task.infiniband === 'boolean' ? task.infiniband : isRdmaPool(size) && pool.interNodeCommunication;
  // §1.3 gpus: "default all on GPU sizes, otherwise disable".
  const gpu = setting(job, task, 'gpus') !== undefined ? String(setting(job, task, 'gpus')) : isGpuPool(size) ? 'all' : 'disable';
  const env: Record<string, string> = {};
  for (const scope of [job, task]) {
    if (isObj(scope.environment_variables)) for (const [k, v] of Object.entries(scope.environment_variables)) env[k] = String(v);
  }

  const opts: string[] = [];
  const bind = docker ? '-v' : '-B';
  let containerName: string | undefined;
  let singularityCmd: string | undefined;
  if (docker) {
    // §2.1 1: additional_docker_run_options.
    opts.push(...((task.additional_docker_run_options as string[] | undefined) ?? []));
    // §1.3 remove_container_after_exit, default true: --rm (removed again for multi-instance, §2.1 1 / 11).
    if ((setting(job, task, 'remove_container_after_exit') ?? true) && !opts.includes('--rm')) opts.push('--rm');
    // §2.1 2: --shm-size.
    const shm = setting(job, task, 'shm_size');
    if (shm !== undefined && !opts.some((o) => o.startsWith('--shm-size='))) opts.push(`--shm-size=${String(shm)}`);
    // §2.1 3: the container name (multi-instance: job id and image; otherwise the task id).
    containerName = mi ? `${String(job.id)}-${image.replace(/[/:]/g, '-')}` : String(task.name ?? task.id ?? 'task');
    opts.push(`--name ${containerName}`);
    // §2.1 5: the working directory.
    opts.push('-w $AZ_BATCH_TASK_WORKING_DIR');
  } else {
    opts.push(...((task.additional_singularity_options as string[] | undefined) ?? []));
    singularityCmd = isObj(task.singularity_execution) && typeof task.singularity_execution.cmd === 'string' ? task.singularity_execution.cmd : 'exec';
    // §2.3: --pwd $AZ_BATCH_TASK_WORKING_DIR.
    opts.push('--pwd $AZ_BATCH_TASK_WORKING_DIR');
  }
  // §2.1 6 / §2.3: the node's Batch root (non-native only).
  if (!pool.native) opts.push(`${bind} $AZ_BATCH_NODE_ROOT_DIR:$AZ_BATCH_NODE_ROOT_DIR`);
  // §2.1 7: the job's auto_scratch (BeeOND) is bound at $AZ_BATCH_TASK_DIR/auto_scratch (convoy/settings.py L4063-4068).
  if (job.auto_scratch !== undefined && job.auto_scratch !== false)
    opts.push(`${bind} $AZ_BATCH_NODE_ROOT_DIR/mounts/auto_scratch/${String(job.id)}:$AZ_BATCH_TASK_DIR/auto_scratch`);
  // §2.1 7: shared data volumes, bound from where Shipyard mounted them on the node (under
  // $AZ_BATCH_NODE_ROOT_DIR/mounts, convoy/settings.py _HOST_MOUNTS_DIR; the folder is named by the volume here, by
  // driver, account and container in Shipyard) to their container_path.
  const volumes =
    isObj(config.global_resources) && isObj(config.global_resources.volumes) && isObj(config.global_resources.volumes.shared_data_volumes)
      ? config.global_resources.volumes.shared_data_volumes
      : {};
  for (const name of [...((job.shared_data_volumes as string[] | undefined) ?? []), ...((task.shared_data_volumes as string[] | undefined) ?? [])]) {
    const v = isObj(volumes[name]) ? volumes[name] : {};
    opts.push(`${bind} $AZ_BATCH_NODE_ROOT_DIR/mounts/${name}:${String(v.container_path)}${v.bind_options ? `:${String(v.bind_options)}` : ''}`);
  }
  // §2.1 8 (docker, non-native) / §2.3 --nv (singularity).
  if (gpu !== 'disable') {
    if (!docker) opts.push('--nv');
    else if (!pool.native) opts.push(`--gpus=${gpu}`);
  }
  // §2.1 9: InfiniBand.
  if (infiniband) {
    if (isNetworkDirect(size)) opts.push(`${bind} /opt/intel:/opt/intel:ro`);
    if (!pool.native && docker) {
      opts.push('--net=host', '--ulimit memlock=9223372036854775807', '--device=/dev/infiniband/rdma_cm', '--device=/dev/infiniband/uverbs0');
      if (isSriov(size))
        opts.push(
          '--device=/dev/infiniband/issm0',
          '--device=/dev/infiniband/ucm0',
          '--device=/dev/infiniband/umad0',
          `${bind} /etc/dat.conf:/etc/dat.conf:ro`,
        );
    }
    if (!docker) {
      // §2.3: namespace and contain options are stripped for InfiniBand.
      for (const o of ['-c', '--contain', '-C', '--containall', '-n', '--net']) {
        const i = opts.indexOf(o);
        if (i >= 0) opts.splice(i, 1);
      }
    }
    // §2.1 9: NetworkDirect DAPL configuration binds on CentOS-HPC (convoy/settings.py L4333-4365).
    if (isNetworkDirect(size) && /^openlogic$/i.test(pool.publisher ?? '') && /^centos-hpc$/i.test(pool.offer ?? '')) {
      opts.push(`${bind} /etc/rdma:/etc/rdma:ro`, `${bind} /etc/rdma/dat.conf:/etc/dat.conf:ro`);
    }
  }
  // §2.1 10: the environment file of the long-running container.
  if (docker && !pool.native) opts.push('--env-file .shipyard.envlist');
  if (mi && docker && !pool.native) {
    // §2.1 1 and 11: no --rm for multi-instance, -d and --net=host.
    const rm = opts.indexOf('--rm');
    if (rm >= 0) opts.splice(rm, 1);
    opts.push('-d');
    if (!opts.includes('--net=host')) opts.push('--net=host');
  }

  const out: ShipyardTask = {
    native: pool.native,
    runtime: docker ? 'docker' : 'singularity',
    multiInstance: !!mi,
    image,
    containerName,
    runOptions: opts,
    userCommand: String(task.command ?? ''),
    environment: env,
    infiniband,
    gpu,
    numInstances,
    singularityCmd,
  };
  if (!mi) return out;

  if (typeof mi.pre_execution_command === 'string') out.userPrologue = mi.pre_execution_command;
  const mpi = isObj(mi.mpi) ? mi.mpi : undefined;
  if (mpi) {
    const { line, ibEnv } = mpiCommand(mpi, numInstances, size, infiniband, out);
    out.userCommand = line;
    Object.assign(out.environment, ibEnv);
  }
  const cc = typeof mi.coordination_command === 'string' && mi.coordination_command ? ` ${mi.coordination_command}` : '';
  if (pool.native) {
    // §2.2: the user's coordination command, or sshd on port 23.
    out.coordinationCommandLine = cc ? cc.trim() : '/usr/sbin/sshd -p 23';
  } else if (docker) {
    // §2.1 coordination command, wrapped with wait=False.
    const dump = 'env | grep -vE "^_=|^HOME=|^HOSTNAME=|^PATH=|^PWD=|^SHLVL=|^USER=" > .shipyard.envlist';
    const name = containerName as string;
    out.coordinationCommandLine = `/bin/bash -c 'set -e; set -o pipefail; ${dump}; set +e; docker kill ${name}; docker rm -v ${name}; set -e; docker run ${opts.join(' ')} ${image}${cc}'`;
  } else {
    // §2.3: a no-op unless the user gives one.
    out.coordinationCommandLine = cc ? cc.trim() : ':';
  }
  return out;
}

/**
 * §2 table, "MPI command" (convoy/batch.py _construct_mpi_command): `<executable_path> <options…> <auto args>
 * <command>`. The executable is lowercased (§1.3 mpi.executable_path, "a latent bug").
 */
function mpiCommand(mpi: Obj, n: number, size: string, infiniband: boolean, task: ShipyardTask): { line: string; ibEnv: Record<string, string> } {
  const runtime = String(mpi.runtime ?? '').toLowerCase();
  const opts: string[] = [...((mpi.options as string[] | undefined) ?? [])];
  const ppn = mpi.processes_per_node;
  const ibEnv: Record<string, string> = {};
  const perNode = (flag: string) => (typeof ppn === 'number' ? `${flag} ${ppn}` : `${flag} $(${String(ppn)})`);
  const np = () => (typeof ppn === 'number' ? `-np ${n * ppn}` : `-np $(expr ${n} \\* $(${String(ppn)}))`);
  const given = typeof ppn === 'number' || typeof ppn === 'string';
  if (runtime.startsWith('intelmpi')) {
    if (given) opts.push('-hosts $AZ_BATCH_HOST_LIST', np(), perNode('-perhost'));
    if (infiniband) {
      ibEnv.I_MPI_FALLBACK = '0';
      ibEnv.MANPATH = '/usr/share/man:/usr/local/man';
      if (isNetworkDirect(size)) {
        Object.assign(ibEnv, {
          I_MPI_FABRICS: 'shm:dapl',
          I_MPI_DAPL_PROVIDER: 'ofa-v2-ib0',
          I_MPI_DYNAMIC_CONNECTION: '0',
          I_MPI_DAPL_TRANSLATION_CACHE: '0',
        });
      } else if (isSriov(size)) {
        if (runtime === 'intelmpi-ofa') ibEnv.I_MPI_FABRICS = 'shm:ofa';
        else Object.assign(ibEnv, { I_MPI_FABRICS: 'shm:ofi', FI_PROVIDER: 'mlx' });
      }
    }
  } else if (runtime === 'mpich' || runtime === 'mvapich') {
    if (given) opts.push('-hosts $AZ_BATCH_HOST_LIST', np(), perNode('-ppn'));
    if (infiniband && isSriov(size)) opts.push(`-env $(cat ${UCX_IB_PKEY_FILE})`);
  } else if (runtime === 'openmpi') {
    if (given)
      opts.push(
        '--oversubscribe',
        '-host $AZ_BATCH_HOST_LIST',
        np(),
        typeof ppn === 'number' ? `--map-by ppr:${ppn}:node` : `--map-by ppr:$(${String(ppn)}):node`,
      );
    if (infiniband && isSriov(size)) opts.push('--mca pml ucx', '--mca btl ^vader,tcp,openib', '-x UCX_NET_DEVICES=mlx5_0:1', `-x $(cat ${UCX_IB_PKEY_FILE})`);
    else opts.push('--mca btl_tcp_if_include eth0');
  }
  const exe = String(mpi.executable_path ?? 'mpirun').toLowerCase();
  if (task.runtime === 'singularity') {
    // §2.3: the host MPI launches `singularity <exec|run> <run_opts> <image> <command>`.
    return { line: `${exe} ${opts.join(' ')} singularity ${task.singularityCmd} ${task.runOptions.join(' ')} ${task.image} ${task.userCommand}`, ibEnv };
  }
  if (runtime === 'openmpi') opts.push('--allow-run-as-root');
  return { line: `${exe} ${opts.join(' ')} ${task.userCommand}`, ibEnv };
}

/**
 * What runs where the user's command runs (§2.1 "The runner then does the following", scripts/shipyard_task_runner.sh):
 * inside the master's container for non-native docker (through docker exec), on the host for singularity. Strict
 * mode, modules, the user prologue, then `eval "$SHIPYARD_USER_CMD"`.
 */
export function taskRunnerScript(): string {
  return [
    'set -e',
    'set -o pipefail',
    'if [ -f /etc/profile.d/modules.sh ]; then source /etc/profile.d/modules.sh; fi',
    'if [ -n "$SHIPYARD_USER_PROLOGUE_CMD" ]; then eval "$SHIPYARD_USER_PROLOGUE_CMD"; fi',
    'set +e',
    'eval "$SHIPYARD_USER_CMD"',
  ].join('; ');
}

/** §2.2: a native pool's task command line, `<pre_execution_command>; <mpi command or command>`. */
export function nativeTaskScript(t: ShipyardTask): string {
  return [t.userPrologue, t.userCommand].filter((x): x is string => !!x).join('; ');
}

/** A non-multi-instance docker task (non-native): `docker run <run_opts> <image> <command>` on the host. */
export function singleTaskScript(t: ShipyardTask): string {
  return `docker run ${t.runOptions.join(' ')} ${shellQuote(t.image)} ${t.userCommand}`;
}
