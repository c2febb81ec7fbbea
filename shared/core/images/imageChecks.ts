/**
 * What a job spec expects of its node image, checked against the image catalog (catalog.ts) before any node is
 * allocated: every `module load` name, every host path a command sources or runs under /opt, and the container
 * runtime. Pure: the spec and the catalog in, findings out (with the catalog's nearest name as "did you mean").
 *
 * Which commands run on the host (where the image matters): the pool's start task always; the coordination command
 * always (docker's own coordination starts the container); the pre-execution command and a custom launch script
 * unless the job runs in docker (`docker exec` runs them in the container); the ranks' command natively. Inside a
 * container the image's modules and /opt do not exist anyway, so those commands are not checked.
 */
import { beeondProblem } from './beeond';
import { nodeImageFor, type DeclaredCustomImage, type NodeImage } from './catalog';

export type ImageCheckMode = 'refuse' | 'warn';
export const DEFAULT_IMAGE_CHECK_MODE: ImageCheckMode = 'refuse';

export interface ImageFinding {
  /** The spec field, dotted ("mpi.preExecutionCommand"). */
  path: string;
  kind: 'module' | 'path' | 'runtime' | 'scratch';
  /** What is missing, e.g. "mpi/impi". */
  name: string;
  message: string;
  /** The catalog's nearest name, when there is one. */
  suggestion?: string;
}

export interface ImageCheckResult {
  /** The catalog entry the checks used; undefined when the pool's image is not in the catalog (nothing checked). */
  image?: NodeImage;
  findings: ImageFinding[];
  /** What the checks assumed or skipped, for explain. */
  notes: string[];
}

/** The fields of a spec the checks read (a JobSpec fits; so does a hand-made object in tests). */
export interface ImageCheckSpec {
  pool: { image?: { publisher: string; offer: string; sku: string }; customImageId?: string; poolId?: string; startTask?: { command: string } };
  container: { runtime: 'docker' | 'singularity' | 'none' };
  mpi: { command: string; preExecutionCommand?: string; coordinationCommand?: string; launcher: { mode: 'managed' | 'custom' } };
  scratch?: { kind: string };
}

/** The default image of a new pool (schema.ts DEFAULT_IMAGE): not imported to keep this module free of the schema. */
const DEFAULT_POOL_IMAGE = { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204' };

/** Names loaded by `module load|add` / `ml` in a command line (variables and option words skipped). */
export function moduleLoads(command: string): string[] {
  const out: string[] = [];
  for (const words of simpleCommands(command)) {
    let i = 0;
    if (words[0] === 'module' && (words[1] === 'load' || words[1] === 'add')) i = 2;
    else if (words[0] === 'ml' && words.length > 1 && !['list', 'avail', 'purge', 'unload', 'show'].includes(words[1])) i = 1;
    else continue;
    for (const w of words.slice(i)) if (!w.startsWith('-') && !w.includes('$')) out.push(w);
  }
  return out;
}

/** Whether a command adds its own module directories (`module use`): its module names are then not the image's. */
function usesOwnModules(command: string): boolean {
  return simpleCommands(command).some((w) => w[0] === 'module' && w[1] === 'use');
}

/** Absolute host paths under /opt that a command sources (`source X`, `. X`) or runs as a program. */
export function hostPaths(command: string): string[] {
  const out: string[] = [];
  for (const words of simpleCommands(command)) {
    const candidates = words[0] === 'source' || words[0] === '.' ? [words[1]] : [words[0]];
    for (const w of candidates) if (w && /^\/opt\//.test(w) && !/[$`*?]/.test(w)) out.push(w.replace(/\/+$/, ''));
  }
  return out;
}

/**
 * A command line cut into simple commands (at `;`, `&&`, `||`, `|`, newlines), each as words with quotes removed.
 * Enough to find `module load` and sourced scripts; `bash -c '…'` bodies are read too (their quoted text is cut again).
 */
function simpleCommands(command: string): string[][] {
  const out: string[][] = [];
  for (const part of command.split(/;|&&|\|\||\||\n/)) {
    const words = part
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map((w) => w.replace(/^['"]|['"]$/g, ''));
    if (!words.length) continue;
    // bash -c 'a; b': the body was split at its ';' already; its first words follow "-c".
    const c = words.findIndex((w, i) => w === '-c' && i > 0 && /(^|\/)(ba)?sh$/.test(words[i - 1]));
    out.push(c >= 0 ? words.slice(c + 1) : words);
  }
  return out.filter((w) => w.length);
}

function levenshtein(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0];
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = d[j];
      d[j] = Math.min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return d[b.length];
}

/**
 * Names of CentOS-HPC and older HPC images whose successor on the current images differs in more than a typo.
 * Sources: catalog.ts (CENTOS_HPC_7 and the azhpc-images install_mpis.sh of both generations).
 */
const RENAMED_MODULES: Record<string, string> = {
  'mpi/impi': 'mpi/impi-2021',
  'mpi/impi-2019': 'mpi/impi-2021',
  'mpi/mvapich2': 'mpi/mvapich',
};

/** The catalog's module nearest to `name`: a known rename, then the shortest name it prefixes, then edit distance ≤ 3. */
export function nearestModule(name: string, image: NodeImage): string | undefined {
  const names = image.modules.map((m) => m.name);
  const renamed = RENAMED_MODULES[name];
  if (renamed && names.includes(renamed)) return renamed;
  const prefixed = names.filter((n) => n.startsWith(name) || name.startsWith(n)).sort((a, b) => a.length - b.length)[0];
  if (prefixed) return prefixed;
  const scored = names
    .map((n) => ({ n, d: levenshtein(name, n) }))
    .filter((s) => s.d <= 3)
    .sort((a, b) => a.d - b.d);
  return scored[0]?.n;
}

/** Whether the image holds a path (it is, or lies under, one of the catalog's paths). */
export function imageHasPath(image: NodeImage, p: string): boolean {
  return image.paths.some((q) => p === q || p.startsWith(`${q}/`));
}

/** The catalog path that shares the longest leading directories with `p` (at least /opt/<x>), for "did you mean". */
export function nearestPath(p: string, image: NodeImage): string | undefined {
  const segs = p.split('/').filter(Boolean);
  let best: { path: string; score: number } | undefined;
  for (const q of image.paths) {
    const qs = q.split('/').filter(Boolean);
    let n = 0;
    while (n < segs.length && n < qs.length && segs[n] === qs[n]) n++;
    // A sourced script wants a script: prefer the image's environment scripts under the same vendor directory.
    const score = n * 10 + (/\.sh$/.test(p) && /\.sh$/.test(q) ? 5 : 0) + (/\/mpi\//.test(p) && /\/mpi\//.test(q) ? 5 : 0) - qs.length;
    if (n >= 2 && (!best || score > best.score)) best = { path: q, score };
  }
  return best?.path;
}

/** Commands that run on the node itself (not in the job's container), with their spec field. */
export function hostCommands(spec: ImageCheckSpec): { path: string; command: string }[] {
  const out: { path: string; command: string }[] = [];
  const docker = spec.container.runtime === 'docker';
  if (spec.pool.startTask?.command) out.push({ path: 'pool.startTask.command', command: spec.pool.startTask.command });
  if (spec.mpi.coordinationCommand) out.push({ path: 'mpi.coordinationCommand', command: spec.mpi.coordinationCommand });
  if (!docker && spec.mpi.preExecutionCommand) out.push({ path: 'mpi.preExecutionCommand', command: spec.mpi.preExecutionCommand });
  if (spec.container.runtime === 'none' || (spec.container.runtime === 'singularity' && spec.mpi.launcher.mode === 'custom')) {
    out.push({ path: 'mpi.command', command: spec.mpi.command });
  }
  return out;
}

const RUNTIME_INSTALL_RE: Record<'docker' | 'singularity', RegExp> = {
  docker: /\b(docker|moby)/,
  singularity: /\b(singularity|apptainer)\b/,
};

/** Checks a spec against the catalog entry of its pool's image (custom images: as the deployment declares them). */
export function checkImage(spec: ImageCheckSpec, custom: readonly DeclaredCustomImage[] = []): ImageCheckResult {
  if (spec.pool.poolId) return { findings: [], notes: ['node image checks: skipped, the job reuses an existing pool whose image the spec does not name'] };
  const ref = spec.pool.customImageId ? undefined : (spec.pool.image ?? DEFAULT_POOL_IMAGE);
  const image = nodeImageFor({ image: ref, customImageId: spec.pool.customImageId }, custom);
  if (!image) {
    const what = spec.pool.customImageId
      ? `custom image ${spec.pool.customImageId} is not declared by this deployment (NODE_IMAGES_CUSTOM)`
      : `image ${ref!.publisher}/${ref!.offer}/${ref!.sku} is not in the image catalog`;
    return { findings: [], notes: [`node image checks: skipped, ${what}; module names, host paths and runtimes are not checked`] };
  }
  const findings: ImageFinding[] = [];
  const notes: string[] = [];
  const startTask = spec.pool.startTask?.command ?? '';
  const commands = hostCommands(spec);
  const where = `${image.title} (${image.source})`;

  for (const { path, command } of commands) {
    if (!usesOwnModules(command)) {
      for (const name of moduleLoads(command)) {
        if (image.modules.some((m) => m.name === name)) continue;
        if (!image.modulePath) {
          findings.push({
            path,
            kind: 'module',
            name,
            message: `\`module load ${name}\`: ${image.title} has no environment modules (\`module\` is not installed); use an Azure HPC image (ubuntu-hpc, almalinux-hpc) or install the software in pool.startTask`,
          });
          continue;
        }
        const suggestion = nearestModule(name, image);
        findings.push({
          path,
          kind: 'module',
          name,
          ...(suggestion ? { suggestion } : {}),
          message: `\`module load ${name}\`: no module "${name}" on ${where}${suggestion ? `; did you mean "${suggestion}"?` : `; it has ${image.modules.map((m) => m.name).join(', ')}`}`,
        });
      }
    }
    for (const p of hostPaths(command)) {
      if (imageHasPath(image, p)) continue;
      // A start task that names the directory installs or builds it: trust it, and say so.
      const top = p.split('/').slice(0, 3).join('/');
      if (path !== 'pool.startTask.command' && startTask.includes(top)) {
        notes.push(`${path}: ${p} is not part of ${image.title}; pool.startTask names ${top}, so it is taken to provide it`);
        continue;
      }
      if (path === 'pool.startTask.command') continue;
      const suggestion = nearestPath(p, image);
      findings.push({
        path,
        kind: 'path',
        name: p,
        ...(suggestion ? { suggestion } : {}),
        message: `${p}: not on ${where}${suggestion ? `; did you mean "${suggestion}"?` : ''}`,
      });
    }
  }

  const runtime = spec.container.runtime;
  if (runtime !== 'none' && !image.runtimes[runtime]) {
    if (RUNTIME_INSTALL_RE[runtime].test(startTask)) {
      notes.push(`container.runtime ${runtime}: not part of ${image.title}; pool.startTask names it, so it is taken to install it`);
    } else {
      const other = runtime === 'singularity' ? 'docker' : 'singularity';
      const alt = image.runtimes[other] ? `, or use container.runtime "${other}", which the image has` : '';
      findings.push({
        path: 'container.runtime',
        kind: 'runtime',
        name: runtime,
        message: `${runtime === 'singularity' ? 'Singularity/Apptainer' : 'docker'} is not installed on ${where}: install it in pool.startTask (e.g. ${runtime === 'singularity' ? 'the apptainer package' : 'moby-engine'})${alt}`,
      });
    }
  }
  if (spec.scratch?.kind === 'beeond') {
    const problem = beeondProblem(image);
    if (problem) findings.push({ path: 'scratch.kind', kind: 'scratch', name: 'beeond', message: problem });
  }
  return { image, findings, notes };
}

/** A one-line summary of the image for explain. */
export function imageSummary(image: NodeImage): string {
  const mpis = image.modules.filter((m) => !/-\d/.test(m.name) && !/_\d/.test(m.name)).map((m) => `${m.name} (${m.what})`);
  const rt = Object.entries(image.runtimes)
    .filter(([, v]) => v)
    .map(([k]) => k);
  return `${image.title}: ${mpis.length ? mpis.join(', ') : 'no MPI modules'}; container runtimes: ${rt.length ? rt.join(', ') : 'none'}; source: ${image.source}`;
}
