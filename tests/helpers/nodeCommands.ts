/**
 * Runs the command lines the builders in shared/core/mpi produce the way a Batch node does: split into argv as Batch splits
 * them, started under a real /bin/bash with the task environment. `mpirun`, `docker`, `singularity`, `nproc`, `lscpu`
 * (and, when asked, `nvidia-smi`) are recording stubs on PATH: the one boundary replaced, since there is no container
 * engine, IB fabric or GPU here. The stubs record argv exactly as the program would receive it.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { splitShellWords } from '../../shared/core/mpi/shellWords';
import type { MpiTaskInput } from '../../shared/core/mpi/commands';

/** A small native Open MPI task on two nodes: what each builder test varies. */
export const BASE_INPUT: MpiTaskInput = {
  runtime: 'none',
  mpiRuntime: 'openmpi',
  nodes: 2,
  processesPerNode: 2,
  command: './hello --size 10',
  vmSize: 'Standard_D4s_v3',
};

const STUBS: Record<string, string> = {
  mpirun: `#!/bin/sh
printf '%s\\0' "$@" > "$STUB_OUT/mpirun.args"
env -0 > "$STUB_OUT/mpirun.env"
echo x >> "$STUB_OUT/mpirun.count"
exit \${MPIRUN_STUB_EXIT:-0}
`,
  docker: `#!/bin/sh
n=$(cat "$STUB_OUT/docker.count" 2>/dev/null || echo 0)
printf '%s\\0' "$@" > "$STUB_OUT/docker.$n.args"
env -0 > "$STUB_OUT/docker.$n.env"
echo $((n + 1)) > "$STUB_OUT/docker.count"
if [ "$1" = login ]; then cat > "$STUB_OUT/login.stdin"; fi
if [ "$1" = inspect ]; then echo true; fi
# A container set for the cleanup command: ps lists $STUB_OUT/containers, rm drops a name unless told to fail.
if [ "$1" = ps ] && [ -z "$DOCKER_STUB_EXIT" ]; then cat "$STUB_OUT/containers" 2>/dev/null; fi
if [ "$1" = rm ] && [ -z "$DOCKER_STUB_RM_KEEPS" ] && [ -f "$STUB_OUT/containers" ]; then
  for a in "$@"; do last="$a"; done
  grep -Fxv -- "$last" "$STUB_OUT/containers" > "$STUB_OUT/containers.new"; mv "$STUB_OUT/containers.new" "$STUB_OUT/containers"
fi
# DOCKER_STUB_EXEC: play the container's part of "docker exec [-e N] [-w dir] <name> <cmd...>" (same env, that dir).
if [ "$1" = exec ] && [ -n "$DOCKER_STUB_EXEC" ]; then
  shift
  while :; do case "$1" in -e) shift 2 ;; -w) cd "$2" || exit 126; shift 2 ;; *) break ;; esac; done
  shift
  exec "$@"
fi
exit \${DOCKER_STUB_EXIT:-0}
`,
  singularity: `#!/bin/sh
printf '%s\\0' "$@" > "$STUB_OUT/singularity.args"
echo "$1" >> "$STUB_OUT/singularity.calls"
# pull [--force] <file> <uri>: leave a file where singularity would write the SIF.
if [ "$1" = pull ]; then for a in "$@"; do prev="$last"; last="$a"; done; echo "sif of $last" > "$prev"; fi
`,
  nproc: `#!/bin/sh
echo 3
`,
  // 2 sockets x 2 cores, 2 threads each (what lscpu -p=CORE,SOCKET prints on an SMT machine).
  lscpu: `#!/bin/sh
echo '# The following is the parsable format'
echo '# CORE,SOCKET'
for c in 0 0 1 1; do echo "$c,0"; done
for c in 2 2 3 3; do echo "$c,1"; done
`,
};

const GPU_STUB = `#!/bin/sh
i=0; while [ $i -lt \${GPU_STUB_COUNT:-4} ]; do echo "GPU $i: NVIDIA A100-SXM4-80GB (UUID: GPU-$i)"; i=$((i + 1)); done
`;

export interface RunResult {
  status: number | null;
  stdout: string;
  stderr: string;
  out: string;
  nodeDir: string;
}

export interface CommandHarness {
  root(): string;
  bin(): string;
  /** A PATH entry holding an nvidia-smi stub (not on PATH unless a test adds it). */
  gpuBin(): string;
  run(commandLine: string, taskEnv: { name: string; value: string }[], extraEnv?: Record<string, string>, setup?: (nodeDir: string) => void): RunResult;
}

/** Registers beforeAll/afterAll for a temporary stub directory and returns the runner. */
export function commandHarness(prefix: string): CommandHarness {
  let root = '';
  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    fs.mkdirSync(path.join(root, 'bin'));
    fs.mkdirSync(path.join(root, 'gpu-bin'));
    for (const [name, body] of Object.entries(STUBS)) fs.writeFileSync(path.join(root, 'bin', name), body, { mode: 0o755 });
    fs.writeFileSync(path.join(root, 'gpu-bin', 'nvidia-smi'), GPU_STUB, { mode: 0o755 });
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
  return {
    root: () => root,
    bin: () => path.join(root, 'bin'),
    gpuBin: () => path.join(root, 'gpu-bin'),
    run(commandLine, taskEnv, extraEnv = {}, setup) {
      const argv = splitShellWords(commandLine);
      expect(argv.slice(0, 2)).toEqual(['/bin/bash', '-c']);
      expect(argv).toHaveLength(3);
      const out = fs.mkdtempSync(path.join(root, 'run-'));
      const nodeDir = path.join(out, 'node');
      fs.mkdirSync(path.join(nodeDir, 'startup', 'wd'), { recursive: true });
      fs.mkdirSync(path.join(nodeDir, 'task', 'wd'), { recursive: true });
      setup?.(nodeDir);
      const env: Record<string, string> = {
        PATH: `${path.join(root, 'bin')}:/usr/bin:/bin`,
        STUB_OUT: out,
        AZ_BATCH_HOST_LIST: '10.0.0.4,10.0.0.5',
        AZ_BATCH_NODE_ROOT_DIR: nodeDir,
        AZ_BATCH_NODE_SHARED_DIR: path.join(nodeDir, 'shared'),
        AZ_BATCH_NODE_STARTUP_DIR: path.join(nodeDir, 'startup'),
        AZ_BATCH_TASK_WORKING_DIR: path.join(nodeDir, 'task', 'wd'),
        ...Object.fromEntries(taskEnv.map((e) => [e.name, e.value])),
        ...extraEnv,
      };
      // stdin from /dev/null: with a socket on stdin (Node's default pipes) bash thinks rshd started it and reads ~/.bashrc.
      // The task's working directory is where Batch starts it (resource files land there).
      const r = spawnSync(argv[0], argv.slice(1), { env, cwd: out, encoding: 'utf8', timeout: 20_000, stdio: ['ignore', 'pipe', 'pipe'] });
      return { status: r.status, stdout: r.stdout, stderr: r.stderr, out, nodeDir };
    },
  };
}

export function readNulList(file: string): string[] {
  const parts = fs.readFileSync(file, 'utf8').split('\0');
  parts.pop();
  return parts;
}

export function readEnv(file: string): Record<string, string> {
  return Object.fromEntries(readNulList(file).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
}

export function dockerCalls(out: string): string[][] {
  const n = fs.existsSync(path.join(out, 'docker.count')) ? Number(fs.readFileSync(path.join(out, 'docker.count'), 'utf8')) : 0;
  return Array.from({ length: n }, (_, i) => readNulList(path.join(out, `docker.${i}.args`)));
}

/** The value following `flag` in argv. */
export function after(argv: string[], flag: string): string | undefined {
  const i = argv.indexOf(flag);
  return i >= 0 ? argv[i + 1] : undefined;
}
