/**
 * Shipyard's `multi_instance.mpi` block as the spec's launcher. Shipyard built one line (convoy/batch.py
 * _construct_mpi_command): `<executable_path> <options…> <automatic args> <command>`, the automatic args being hosts,
 * rank count and ranks per node when `processes_per_node` is set, and the fabric flags of the runtime.
 *
 * - `processes_per_node` a number, `nproc` or a GPU count → the managed launcher: it writes the hosts, rank count,
 *   ranks per node and fabric flags itself, after the user's options (as Shipyard did).
 * - no `processes_per_node` (the user's options give ranks and hosts, e.g. from a setup script's `$np`), an expression
 *   the spec cannot express, or options/executable the managed launcher cannot take → a custom launcher whose script
 *   is Shipyard's line, with the fabric flags of our preset for the same runtime and VM size.
 * - no `mpi` block (the image's own script launches) → a custom launcher running the command as it is.
 * Pure.
 */
import { splitShellWords } from '../../../shared/core/mpi/shellWords';
import { fabricPreset, presetFamilyFor, resolveFabric, type Fabric, type MpiRuntime } from '../../../shared/core/mpi/rdmaPresets';
import { LAUNCHER_EXECUTABLE_RE, LAUNCHER_OPTION_RE } from '../../../shared/core/spec/sections/launch';
import type { MappingStatus } from './report';

export type ProcessesPerNode = number | 'nproc' | 'cores' | 'gpus';

export interface LaunchDraft {
  runtime: MpiRuntime;
  version?: string;
  processesPerNode: ProcessesPerNode;
  mode: 'managed' | 'custom';
  executable?: string;
  options: string[];
  command: string;
}

export interface LaunchVerdict {
  /** Relative to the mpi block, e.g. "runtime", "options[1]"; "" for the block itself. */
  path: string;
  status: MappingStatus;
  target?: string;
  note: string;
}

export interface LaunchInput {
  /** The `mpi` block, or undefined when the task has none. */
  mpi: Record<string, unknown> | undefined;
  command: string;
  containerRuntime: 'docker' | 'singularity';
  vmSize: string;
  fabric: Fabric;
}

/** Shipyard's runtimes (schemas/jobs.yaml) → ours. `intelmpi-ofa` means Intel MPI before 2019: our 2018 preset. */
const RUNTIMES: Record<string, { runtime: MpiRuntime; version?: string; note: string }> = {
  intelmpi: {
    runtime: 'intelmpi',
    note: 'Intel MPI 2019 and later (the default preset: I_MPI_FABRICS=shm:ofi with FI_PROVIDER=mlx on InfiniBand, tcp elsewhere). Shipyard set shm:ofi/mlx only on SR-IOV sizes; on NetworkDirect sizes it set I_MPI_FABRICS=shm:dapl (I_MPI_DAPL_PROVIDER=ofa-v2-ib0) and on sizes without RDMA nothing: an image with Intel MPI 2017/2018 needs mpi.version set to its generation',
  },
  'intelmpi-ofa': {
    runtime: 'intelmpi',
    version: '2018',
    note: 'Intel MPI before 2019 over OFA: the 2018 preset (I_MPI_FABRICS=shm:ofa, I_MPI_FALLBACK=0), as Shipyard set on InfiniBand',
  },
  intelmpi_ofa: { runtime: 'intelmpi', version: '2018', note: 'spelling of Shipyard\'s docs for "intelmpi-ofa": Intel MPI before 2019, the 2018 preset' },
  openmpi: { runtime: 'openmpi', note: 'Open MPI (the 4.x preset)' },
  mpich: { runtime: 'mpich', note: 'MPICH (the 4.x preset)' },
  mvapich: { runtime: 'mvapich', note: 'MVAPICH2' },
};

/** Shell expressions for ranks per node the spec has a word for. */
const PPN_WORDS: { re: RegExp; value: ProcessesPerNode; exact: boolean; what: string }[] = [
  { re: /^nproc$/, value: 'nproc', exact: true, what: 'the CPUs nproc counts on the master' },
  { re: /^(?:nproc --all|getconf _NPROCESSORS_ONLN|grep -c \^?processor \/proc\/cpuinfo)$/, value: 'nproc', exact: false, what: 'counted with nproc instead' },
  { re: /^nvidia-smi (?:-L|--list-gpus) \| wc -l$/, value: 'gpus', exact: true, what: 'the GPUs nvidia-smi -L lists on the master' },
];

export function mapLaunch(input: LaunchInput): { draft: LaunchDraft; verdicts: LaunchVerdict[] } {
  const verdicts: LaunchVerdict[] = [];
  if (!input.mpi) {
    verdicts.push({
      path: '',
      status: 'approximated',
      target: 'mpi.launcher.mode',
      note: 'no mpi block: the command launches the ranks itself (a script in the image), so it becomes a custom launch script run once on the master, as Shipyard ran it; mpi.runtime "openmpi" only chooses the exported fabric variables and host file format',
    });
    return { draft: { runtime: 'openmpi', processesPerNode: 'nproc', mode: 'custom', options: [], command: input.command }, verdicts };
  }
  const mpi = input.mpi;
  const rt = typeof mpi.runtime === 'string' ? RUNTIMES[mpi.runtime.toLowerCase()] : undefined;
  const runtime: MpiRuntime = rt?.runtime ?? 'openmpi';
  if (rt)
    verdicts.push({
      path: 'runtime',
      status: mpi.runtime === 'intelmpi_ofa' ? 'approximated' : 'mapped',
      target: rt.version ? 'mpi.runtime, mpi.version' : 'mpi.runtime',
      note: rt.note,
    });
  else
    verdicts.push({
      path: 'runtime',
      status: 'unsupported',
      note: `runtime ${JSON.stringify(mpi.runtime ?? null)} is none of Shipyard's (intelmpi, intelmpi-ofa, mpich, mvapich, openmpi): set mpi.runtime yourself (openmpi written as a placeholder)`,
    });

  // The executable: Shipyard lowercased it (settings.py, a latent bug); the spec keeps what the user wrote.
  const exeRaw = mpi.executable_path;
  const exe = typeof exeRaw === 'string' && exeRaw.trim() ? exeRaw.trim() : 'mpirun';
  const exeFits = LAUNCHER_EXECUTABLE_RE.test(exe);

  const ppn = ppnOf(mpi.processes_per_node);
  const options = Array.isArray(mpi.options) ? mpi.options : mpi.options === undefined || mpi.options === null ? [] : undefined;
  const optionWords = (options ?? []).map((o) => wordsOf(o));
  const optionsFit = options !== undefined && optionWords.every((w) => w !== undefined && w.every((x) => LAUNCHER_OPTION_RE.test(x)));
  const managed = ppn.kind === 'word' && exeFits && optionsFit;

  const draft: LaunchDraft = {
    runtime,
    ...(rt?.version ? { version: rt.version } : {}),
    processesPerNode: ppn.kind === 'word' ? ppn.value : 'nproc',
    mode: managed ? 'managed' : 'custom',
    options: [],
    command: input.command,
  };

  if (managed) {
    draft.options = optionWords.flatMap((w) => w ?? []);
    if (exe !== 'mpirun') draft.executable = exe;
    // Shipyard always asked Open MPI to oversubscribe when it gave ranks per node; so does the import.
    if (runtime === 'openmpi' && !draft.options.includes('--oversubscribe')) draft.options.push('--oversubscribe');
    verdicts.push(ppnVerdict(ppn));
    (options ?? []).forEach((_, i) =>
      verdicts.push({ path: `options[${i}]`, status: 'mapped', target: 'mpi.options', note: 'launcher option, before the automatic ones as in Shipyard' }),
    );
  } else {
    draft.command = customLine(exe, (options ?? []).map(String), ppn, runtime, rt?.version, input);
    const why =
      ppn.kind === 'absent'
        ? 'no processes_per_node: the options give ranks and hosts themselves (e.g. from a setup script)'
        : ppn.kind === 'expression'
          ? `processes_per_node "${ppn.text}" is a shell expression the spec has no word for`
          : !exeFits
            ? 'the executable path is not one the managed launcher takes'
            : 'an option is not a plain launcher word';
    verdicts.push({
      path: '',
      status: 'mapped',
      target: 'mpi.launcher.mode, mpi.command',
      note: `custom launcher: ${why}, so the launch script is Shipyard's own line: executable, options, ${ppn.kind === 'expression' ? 'hosts and ranks from the expression, ' : ''}the fabric flags of our preset for this runtime and VM size, then the command`,
    });
    if (ppn.kind === 'expression')
      verdicts.push({
        path: 'processes_per_node',
        status: 'mapped',
        target: 'mpi.command',
        note: `evaluated on the master in the launch script, as Shipyard did ($(${ppn.text}))`,
      });
    else if (ppn.kind === 'word') verdicts.push({ ...ppnVerdict(ppn), target: 'mpi.command' });
    else if (ppn.kind === 'invalid')
      verdicts.push({ path: 'processes_per_node', status: 'unsupported', note: `${ppn.text}: must be a whole number ≥ 1 or a shell command` });
    (options ?? []).forEach((_, i) =>
      verdicts.push({ path: `options[${i}]`, status: 'mapped', target: 'mpi.command', note: 'in the launch script as written' }),
    );
    if (options === undefined) verdicts.push({ path: 'options', status: 'unsupported', note: 'must be a list of option strings' });
  }
  if (exeRaw !== undefined) {
    const lowered = typeof exeRaw === 'string' && exeRaw !== exeRaw.toLowerCase();
    verdicts.push({
      path: 'executable_path',
      status: lowered ? 'approximated' : 'mapped',
      target: managed ? 'mpi.launcher.executable' : 'mpi.command',
      note: lowered ? `kept as written: Shipyard lowercased it (settings.py), so it ran "${exe.toLowerCase()}"` : 'launcher program',
    });
  }
  return { draft, verdicts };
}

type Ppn =
  | { kind: 'word'; value: ProcessesPerNode; exact: boolean; what: string }
  | { kind: 'expression'; text: string }
  | { kind: 'absent' }
  | { kind: 'invalid'; text: string };

function ppnOf(v: unknown): Ppn {
  if (v === undefined || v === null) return { kind: 'absent' };
  if (typeof v === 'number')
    return Number.isInteger(v) && v >= 1 && v <= 1024 ? { kind: 'word', value: v, exact: true, what: `${v}` } : { kind: 'invalid', text: String(v) };
  if (typeof v !== 'string' || !v.trim()) return { kind: 'invalid', text: JSON.stringify(v) };
  const text = v.trim().replace(/\s+/g, ' ');
  if (/^\d+$/.test(text)) return ppnOf(Number(text));
  const word = PPN_WORDS.find((w) => w.re.test(text));
  return word ? { kind: 'word', value: word.value, exact: word.exact, what: word.what } : { kind: 'expression', text };
}

function ppnVerdict(ppn: Ppn): LaunchVerdict {
  if (ppn.kind !== 'word') throw new Error('not a word');
  return { path: 'processes_per_node', status: ppn.exact ? 'mapped' : 'approximated', target: 'mpi.processesPerNode', note: ppn.what };
}

function wordsOf(option: unknown): string[] | undefined {
  if (typeof option !== 'string') return undefined;
  try {
    return splitShellWords(option);
  } catch {
    return undefined;
  }
}

/**
 * Shipyard's launcher line for a custom launch script. The options are written as the user wrote them (the same shell
 * splits them), ranks from an expression as Shipyard computed them, and the fabric flags from our preset: Open MPI
 * forwards the preset's variables with -x (they are exported to the script); Hydra launchers forward the whole
 * environment by themselves.
 */
function customLine(exe: string, options: string[], ppn: Ppn, runtime: MpiRuntime, version: string | undefined, input: LaunchInput): string {
  const words: string[] = [exe, ...options];
  const openmpi = runtime === 'openmpi';
  if (ppn.kind === 'expression' || ppn.kind === 'word') {
    const per = ppn.kind === 'expression' ? `$(${ppn.text})` : '"$MPIJOB_PPN"';
    const np = ppn.kind === 'expression' ? `$(expr "$MPIJOB_NODES" \\* ${per})` : '"$MPIJOB_NP"';
    if (openmpi) words.push('--oversubscribe', '-host "$AZ_BATCH_HOST_LIST"', `-np ${np}`, `--map-by ppr:${per}:node`);
    else words.push('-hosts "$AZ_BATCH_HOST_LIST"', `-np ${np}`, `${runtime === 'intelmpi' ? '-perhost' : '-ppn'} ${per}`);
  }
  const family = presetFamilyFor(runtime, version);
  if (!('error' in family)) {
    const preset = fabricPreset(runtime, resolveFabric(input.fabric, input.vmSize), version);
    for (const g of preset.launcherArgs) words.push(...g.args.map((a) => (/^[A-Za-z0-9_.,:=+/@%^-]+$/.test(a) ? a : `'${a}'`)));
    if (openmpi) {
      for (const e of preset.env) words.push('-x', e.name);
      if (preset.forwardUcxPkey) words.push('${UCX_IB_PKEY:+-x UCX_IB_PKEY}');
    }
  }
  if (openmpi && input.containerRuntime === 'docker') words.push('--allow-run-as-root');
  words.push(input.command);
  return words.join(' ');
}
