/**
 * The MPI a container image holds, read from its image config (the registry's config blob: `config.Labels` and
 * `config.Env`), for a spec that declares no `mpi.version`. Evidence, strongest first:
 * 1. a label naming the MPI and its version (`mpi.version`, `org.opencontainers.image.mpi`, `*.mpi`, `*.mpi.version`:
 *    "intelmpi-2018", "openmpi 4.1.5", "mpich:3.4");
 * 2. the runtimes' own variables: I_MPI_ROOT (/opt/intel/compilers_and_libraries_2018.5.274/linux/mpi,
 *    /opt/intel/impi/2017.4.239, /opt/intel/oneapi/mpi/2021.13), OMPI_VERSION, MPICH_VERSION, MVAPICH2_VERSION;
 * 3. PATH entries of an install (/opt/intel/impi/2017…/bin64, /opt/intel/compilers_and_libraries_2018…).
 * Each answer names the evidence (label or variable and its value) so the dry run can say why a preset was chosen.
 * Pure: the caller fetches the config blob.
 */
import type { MpiRuntime } from '../mpi/rdmaPresets';

export interface MpiEvidence {
  runtime: MpiRuntime;
  /** "2018", "2021.13", "4.1.5". */
  version: string;
  /** What it was read from, e.g. `Env I_MPI_ROOT=/opt/intel/compilers_and_libraries_2018.5.274/linux/mpi`. */
  evidence: string;
}

const NAMES: [RegExp, MpiRuntime][] = [
  [/^(?:intel[-_ ]?mpi|impi)$/i, 'intelmpi'],
  [/^(?:open[-_ ]?mpi|ompi|hpcx)$/i, 'openmpi'],
  [/^mpich2?$/i, 'mpich'],
  [/^mvapich2?$/i, 'mvapich'],
];
const LABEL_KEY_RE = /(?:^|\.)mpi(?:\.version)?$/i;
const LABEL_VALUE_RE = /^\s*([a-z][a-z0-9_ -]*?)[-_ :@/]?v?(\d{4}(?:\.\d+)*|\d{1,2}\.\d+(?:\.\d+)*)\s*$/i;

/** Intel MPI's generation from an install path, or undefined. */
function intelFromPath(p: string): string | undefined {
  const m = /\/opt\/intel\/(?:compilers_and_libraries_(\d{4})(?:\.\d+)*|impi\/(\d{4})(?:\.\d+)*|oneapi\/mpi\/(\d{4}(?:\.\d+)?))/.exec(p);
  return m ? (m[1] ?? m[2] ?? m[3]) : undefined;
}

function runtimeOf(name: string): MpiRuntime | undefined {
  return NAMES.find(([re]) => re.test(name.trim()))?.[1];
}

/** The image config's MPI, or undefined when it holds no evidence (or something that is not an image config). */
export function mpiEvidenceFromImageConfig(imageConfig: unknown): MpiEvidence | undefined {
  const cfg = typeof imageConfig === 'object' && imageConfig !== null ? (imageConfig as { config?: unknown }).config : undefined;
  if (typeof cfg !== 'object' || cfg === null) return undefined;
  const { Labels, Env } = cfg as { Labels?: unknown; Env?: unknown };
  if (typeof Labels === 'object' && Labels !== null) {
    for (const [key, value] of Object.entries(Labels as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b))) {
      if (!LABEL_KEY_RE.test(key) || typeof value !== 'string') continue;
      const m = LABEL_VALUE_RE.exec(value);
      const runtime = m ? runtimeOf(m[1]) : undefined;
      if (m && runtime) return { runtime, version: m[2], evidence: `label ${key}=${value}` };
    }
  }
  const env = new Map<string, string>();
  if (Array.isArray(Env)) {
    for (const e of Env) {
      if (typeof e !== 'string') continue;
      const i = e.indexOf('=');
      if (i > 0) env.set(e.slice(0, i), e.slice(i + 1));
    }
  }
  const root = env.get('I_MPI_ROOT');
  const fromRoot = root ? intelFromPath(root) : undefined;
  if (root && fromRoot) return { runtime: 'intelmpi', version: fromRoot, evidence: `Env I_MPI_ROOT=${root}` };
  const versions: [string, MpiRuntime][] = [
    ['OMPI_VERSION', 'openmpi'],
    ['MPICH_VERSION', 'mpich'],
    ['MVAPICH2_VERSION', 'mvapich'],
  ];
  for (const [name, runtime] of versions) {
    const v = env.get(name);
    const m = v ? /^v?(\d+\.\d+(?:\.\d+)*)/.exec(v.trim()) : null;
    if (v && m) return { runtime, version: m[1], evidence: `Env ${name}=${v}` };
  }
  for (const dir of (env.get('PATH') ?? '').split(':')) {
    const v = intelFromPath(dir);
    if (v) return { runtime: 'intelmpi', version: v, evidence: `Env PATH entry ${dir}` };
  }
  return undefined;
}
