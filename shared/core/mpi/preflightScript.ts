/**
 * The shell and C parts of the preflight check (docs/scheduling.md). The check is a multi-instance task built by the
 * same builder as the MPI task (commands.ts), so it goes through the job's own launch path (the node's profile, the
 * user's pre-execution command, the launcher, its fabric preset and ssh port, the job's container for docker); this
 * file gives it its master script (run as the pre-execution step) and its rank program, a ping-pong compiled on the
 * master with the launcher's `mpicc`.
 *
 * Everything the master learns is printed on its stdout as `MPIJOB_PREFLIGHT …` and `MPIJOB_PINGPONG …` lines, which
 * shared/core/planning/preflight.ts parses. No single quote appears in what is built here: the script is quoted again at
 * each level it is nested in (eval, bash -c, docker exec), and only single quotes grow with each level.
 */

import { HEALTH_ARG, healthProbeCases } from './healthProbe';
import { HEALTH_CHECKS } from '../spec/sections/preflight';

/** The variable the master exports with the ping-pong's path; the launcher forwards it to every rank. */
export const PINGPONG_BIN_ENV = 'MPIJOB_PINGPONG_BIN';
/** What every rank runs. */
export const PINGPONG_RANK_COMMAND = `exec "$${PINGPONG_BIN_ENV}"`;

/**
 * A ring of ping-pongs: rank r with rank r+1 (mod n), so each node is measured with two partners and a slow node shows
 * in both of its pairs while a slow partner shows in one. The ring's pairs run in phases of disjoint pairs, all pairs of
 * a phase at once: the even pairs, the odd pairs and, for an odd ring, its last pair alone; so the check takes two or
 * three pair times whatever the node count (one pair at a time took n). Latency: the median half round trip of 8-byte
 * messages; bandwidth: 1 MiB messages back and forth. Each measurement stops after about a second (at least 10 round
 * trips), so a degraded link makes the check slower, not endless. Rank 0 prints one line per pair:
 * `MPIJOB_PINGPONG <rank a> <rank b> <latency µs> <bandwidth MB/s> <latency round trips> <bandwidth round trips>`.
 */
export const PINGPONG_C = `#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define SMALL 8
#define BIG (1 << 20)
#define MAXLAT 1000
#define MAXBW 50
static int cmp(const void *x, const void *y) { double a = *(const double *)x, b = *(const double *)y; return (a > b) - (a < b); }
static void step(int lead, int peer, char *buf, int size) {
  if (lead) { MPI_Send(buf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD); MPI_Recv(buf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
  else { MPI_Recv(buf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(buf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD); }
}
static int agree(int lead, int peer, int count) {
  if (lead) MPI_Send(&count, 1, MPI_INT, peer, 2, MPI_COMM_WORLD); else MPI_Recv(&count, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return count;
}
/* Pair p is ranks p and p+1 (mod n). Pairs of one phase share no rank. */
static int phase_of(int p, int n) { return (n % 2 && p == n - 1) ? 2 : p % 2; }
/* The figures of one pair: res = {latency us, bandwidth MB/s, latency round trips, bandwidth round trips}. */
static void measure(int lead, int peer, char *buf, double *lat, double *res) {
  int k, count;
  double t;
  for (k = 0; k < 5; k++) step(lead, peer, buf, SMALL);
  t = MPI_Wtime();
  for (k = 0; k < 10; k++) step(lead, peer, buf, SMALL);
  t = (MPI_Wtime() - t) / 10;
  count = agree(lead, peer, t > 0 ? (int)(1.0 / t) : MAXLAT);
  if (count < 10) count = 10;
  if (count > MAXLAT) count = MAXLAT;
  for (k = 0; k < count; k++) { t = MPI_Wtime(); step(lead, peer, buf, SMALL); lat[k] = (MPI_Wtime() - t) / 2 * 1e6; }
  qsort(lat, count, sizeof(double), cmp);
  res[0] = lat[count / 2];
  res[2] = count;
  step(lead, peer, buf, BIG);
  t = MPI_Wtime();
  step(lead, peer, buf, BIG);
  t = MPI_Wtime() - t;
  count = agree(lead, peer, t > 0 ? (int)(1.0 / t) : MAXBW);
  if (count < 2) count = 2;
  if (count > MAXBW) count = MAXBW;
  t = MPI_Wtime();
  for (k = 0; k < count; k++) step(lead, peer, buf, BIG);
  t = MPI_Wtime() - t;
  res[1] = t > 0 ? 2.0 * BIG * count / t / 1e6 : 0;
  res[3] = count;
}
int main(int argc, char **argv) {
  int rank, n, p, ph, pairs, phases;
  static double lat[MAXLAT];
  char *buf = malloc(BIG);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  memset(buf, 7, BIG);
  pairs = n < 2 ? 0 : n == 2 ? 1 : n;
  phases = n < 2 ? 0 : n == 2 ? 1 : n % 2 ? 3 : 2;
  for (ph = 0; ph < phases; ph++) {
    double res[4] = {0, 0, 0, 0}, got[4];
    MPI_Barrier(MPI_COMM_WORLD);
    for (p = 0; p < pairs; p++) {
      int a = p, b = (p + 1) % n;
      if (phase_of(p, n) != ph || (rank != a && rank != b)) continue;
      measure(rank == a, rank == a ? b : a, buf, lat, res);
      if (rank == a && a != 0) MPI_Send(res, 4, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD);
    }
    if (rank == 0) {
      for (p = 0; p < pairs; p++) {
        if (phase_of(p, n) != ph) continue;
        if (p == 0) memcpy(got, res, sizeof got);
        else MPI_Recv(got, 4, MPI_DOUBLE, p, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("MPIJOB_PINGPONG %d %d %.2f %.1f %d %d\\n", p, (p + 1) % n, got[0], got[1], (int)got[2], (int)got[3]);
      }
      fflush(stdout);
    }
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
`;

export interface PreflightScriptInput {
  /** The launcher's ssh port (22 is the node's own sshd: no -p flag, as the launcher does it). */
  sshPort: number;
  maxSshMs: number;
  /**
   * What must exist on every node: absolute paths (checked with `test -e`) and pool mounts as `mount:<name>` (the
   * node's `$AZ_BATCH_NODE_MOUNTS_DIR/<name>`, listed within 10 s; a stale mount hangs instead of failing).
   */
  requiredPaths: readonly string[];
  pingPong: boolean;
  /** Open MPI wants `host:slots` in its host list; the Hydra launchers take plain hosts. */
  openmpi: boolean;
  /** The launcher, as the launch line names it (a shell word, commands.ts launcherWord). */
  launcher: string;
  /** The node health checks each node runs on itself (healthProbe.ts healthProbeArgs); none when absent. */
  health?: readonly string[];
}

/** `"…"` for bash: the characters double quotes keep special are escaped, so the text arrives as written. */
export function bashDoubleQuoted(text: string): string {
  return `"${text.replace(/[\\"$`]/g, (c) => `\\${c}`)}"`;
}

/** Text as one line for `printf "%b"`: backslashes doubled, line ends as `\n` (command lines carry no line breaks). */
export function oneLine(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** C source without leading indentation and whole-line comments: the same program in fewer characters. */
export function compactC(source: string): string {
  return source
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !/^\/\*.*\*\/$/.test(l))
    .join('\n');
}

/** How many copies of the ping-pong the master sends at once. */
const COPY_WAVE = 16;

/** Safe path characters only (the spec validates mount and scratch paths the same way), or a mount by name. */
// tcp:<host>:<port>: a licence server's port every node must connect to (licenses).
const SAFE_PATH = /^(\/[A-Za-z0-9._/-]*|mount:[A-Za-z0-9][A-Za-z0-9_-]{0,63}|tcp:[A-Za-z0-9.-]{1,253}:\d{1,5})$/;

/**
 * The master's part of the check, as one line of bash run in the launcher's shell right before the launcher: probe
 * every node over ssh (the master itself locally), print what each answered, compile the ping-pong and copy it to the
 * reachable nodes, then narrow the host list the launcher reads to the nodes the program reached (or stop, exit 0, when
 * there is nothing to ping-pong). The launcher line that follows runs the ping-pong.
 */
export function preflightMasterScript(input: PreflightScriptInput): string {
  for (const p of input.requiredPaths)
    if (!SAFE_PATH.test(p)) throw new Error(`preflight: required path ${JSON.stringify(p)} is not an absolute path of safe characters nor mount:<name>`);
  const health = input.health ?? [];
  for (const a of health)
    if (!HEALTH_ARG.test(a))
      throw new Error(`preflight: health argument ${JSON.stringify(a.slice(0, 40))} is not health:<check>, site:<base64> or siteimage:<P|U>:<base64>`);
  const port = Number.isSafeInteger(input.sshPort) && input.sshPort > 0 && input.sshPort < 65536 ? input.sshPort : 22;
  const portOpt = port === 22 ? '' : ` -p ${port}`;
  const timeoutS = Math.max(0.1, input.maxSshMs / 1000).toFixed(1);
  const connectS = Math.max(1, Math.ceil(input.maxSshMs / 1000));
  // Declared once in the script as an array (the probe and the copy both use it): the command line is the budget.
  const sshArray = `mjpf_ssh=(timeout ${timeoutS} ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=${connectS}${portOpt})`;
  const ssh = '"${mjpf_ssh[@]}"';
  const paths = [...input.requiredPaths, ...health].join(' ');
  const lines = [
    'mjpf_dir="$PWD/mpijob-preflight"',
    sshArray,
    'rm -rf "$mjpf_dir"',
    'mkdir -p "$mjpf_dir"',
    // Runs on each node: free space under the Batch directory and the required paths. Sent to the others over ssh.
    // A mount resolves under the node's own mounts directory; an ssh session on Azure carries no AZ_BATCH_* variables,
    // and there the directory is the same under every node's Batch root (/mnt/batch/tasks/fsmounts).
    'mjpf_probe() { local r="$1"; shift; local f p; f=$(df -Pk "$r" 2>/dev/null | tail -n 1 | tr -s " " | cut -d " " -f 4); echo "free_kb=${f:-unknown}"; for p in "$@"; do case $p in mount:*) p=${AZ_BATCH_NODE_MOUNTS_DIR:-$r/fsmounts}/${p#mount:}; timeout 10 ls -d "$p/." >/dev/null 2>&1 || echo "missing=$p";; tcp:*) p=${p#tcp:}; timeout 5 bash -c ": <>/dev/tcp/${p%:*}/${p##*:}" >/dev/null 2>&1 || echo "unreachable=$p";; ' +
      (health.length ? `${healthProbeCases()} ` : '') +
      '*) [ -e "$p" ] || echo "missing=$p";; esac; done; true; }',
    // With health checks, the master's working directory first (taskwd: each node rebases it on its own root).
    `mjpf_args=$(printf " %q" "\${AZ_BATCH_NODE_ROOT_DIR:-$PWD}"${health.length ? ' "taskwd:$PWD"' : ''}${paths ? ` ${paths}` : ''})`,
    'mjpf_hosts=(${AZ_BATCH_HOST_LIST//,/ })',
    'echo "MPIJOB_PREFLIGHT begin nodes=${#mjpf_hosts[@]} port=' + port + ' max_ssh_ms=' + input.maxSshMs + '"',
    'mjpf_i=0',
    'for mjpf_h in "${mjpf_hosts[@]}"; do ' +
      '( mjpf_s=$(date +%s%N); ' +
      'if [ "$mjpf_i" -eq 0 ]; then mjpf_via=local; mjpf_out=$(eval "mjpf_probe$mjpf_args" 2>&1); mjpf_rc=$?; ' +
      `else mjpf_via=ssh; mjpf_out=$(printf "%s\\nmjpf_probe%s\\n" "$(declare -f mjpf_probe)" "$mjpf_args" | ${ssh} "$mjpf_h" bash -s 2>&1); mjpf_rc=$?; fi; ` +
      'mjpf_e=$(date +%s%N); ' +
      '{ echo "MPIJOB_PREFLIGHT node $mjpf_h via=$mjpf_via rc=$mjpf_rc ms=$(( (mjpf_e - mjpf_s) / 1000000 ))"; ' +
      `printf "%s\\n" "$mjpf_out" | head -n ${20 + 8 * (health.length + (health.includes('hosthealth') ? HEALTH_CHECKS.length : 0))} | ` +
      'while IFS= read -r mjpf_l; do if [ -n "$mjpf_l" ]; then echo "MPIJOB_PREFLIGHT out $mjpf_h $mjpf_l"; fi; done; } > "$mjpf_dir/probe.$mjpf_i"; ' +
      'echo "$mjpf_rc" > "$mjpf_dir/rc.$mjpf_i" ) & ' +
      'mjpf_i=$((mjpf_i + 1)); done',
    'wait',
    'mjpf_ok=()',
    'for ((mjpf_i = 0; mjpf_i < ${#mjpf_hosts[@]}; mjpf_i++)); do cat "$mjpf_dir/probe.$mjpf_i"; if [ "$(cat "$mjpf_dir/rc.$mjpf_i")" = 0 ] || [ "$mjpf_i" -eq 0 ]; then mjpf_ok+=("${mjpf_hosts[$mjpf_i]}"); fi; done',
  ];
  if (!input.pingPong) {
    lines.push('echo "MPIJOB_PREFLIGHT pingpong skipped=disabled"', 'exit 0');
    return lines.join('; ');
  }
  lines.push(
    `export ${PINGPONG_BIN_ENV}="$mjpf_dir/pingpong"`,
    'if [ "${#mjpf_ok[@]}" -lt 2 ]; then echo "MPIJOB_PREFLIGHT pingpong skipped=fewer-than-2-reachable-nodes"; exit 0; fi',
    `if ! command -v ${input.launcher} >/dev/null 2>&1; then echo "MPIJOB_PREFLIGHT pingpong skipped=no-launcher"; exit 0; fi`,
    'if ! command -v mpicc >/dev/null 2>&1; then echo "MPIJOB_PREFLIGHT pingpong skipped=no-mpicc"; exit 0; fi',
    // Indentation and comments dropped on the way (the command line is the budget; the C is the same).
    `printf "%b" ${bashDoubleQuoted(oneLine(compactC(PINGPONG_C)))} > "$mjpf_dir/pingpong.c"`,
    `if ! mpicc -O2 -o "$${PINGPONG_BIN_ENV}" "$mjpf_dir/pingpong.c" > "$mjpf_dir/cc.txt" 2>&1; then echo "MPIJOB_PREFLIGHT pingpong skipped=compile-failed"; head -n 5 "$mjpf_dir/cc.txt" | while IFS= read -r mjpf_l; do echo "MPIJOB_PREFLIGHT cc $mjpf_l"; done; exit 0; fi`,
    // Copied under a per-host name and renamed, so a copy that meets another (the emulator's nodes share one disk) never
    // truncates it. In waves of COPY_WAVE at once: one ssh after another is a connection set-up (key exchange, login) per
    // node, tens to hundreds of milliseconds on a real network: seconds on 100 nodes, each billed on every node.
    'mjpf_i=0',
    `for mjpf_h in "\${mjpf_ok[@]:1}"; do ( if ! ${ssh} "$mjpf_h" "mkdir -p $mjpf_dir && cat > $${PINGPONG_BIN_ENV}.$mjpf_h && chmod +x $${PINGPONG_BIN_ENV}.$mjpf_h && mv -f $${PINGPONG_BIN_ENV}.$mjpf_h $${PINGPONG_BIN_ENV}" < "$${PINGPONG_BIN_ENV}"; then echo "MPIJOB_PREFLIGHT copy-failed $mjpf_h"; : > "$mjpf_dir/copy-failed.$mjpf_h"; fi ) & mjpf_i=$((mjpf_i + 1)); if [ $((mjpf_i % ${COPY_WAVE})) -eq 0 ]; then wait; fi; done`,
    'wait',
    // A node the program did not reach would fail the whole launch: it leaves the ring, and the verdict names it.
    'mjpf_ring=()',
    'for mjpf_h in "${mjpf_ok[@]}"; do [ -e "$mjpf_dir/copy-failed.$mjpf_h" ] || mjpf_ring+=("$mjpf_h"); done',
    'mjpf_ok=("${mjpf_ring[@]}")',
    'if [ "${#mjpf_ok[@]}" -lt 2 ]; then echo "MPIJOB_PREFLIGHT pingpong skipped=fewer-than-2-reachable-nodes"; exit 0; fi',
    'export AZ_BATCH_HOST_LIST="$(IFS=,; echo "${mjpf_ok[*]}")"',
    'export MPIJOB_NODES=${#mjpf_ok[@]} MPIJOB_PPN=1',
    'export MPIJOB_NP=$MPIJOB_NODES',
    input.openmpi ? 'export MPIJOB_HOSTS="${AZ_BATCH_HOST_LIST//,/:1,}:1"' : 'export MPIJOB_HOSTS="$AZ_BATCH_HOST_LIST"',
    `if [ -n "\${MPIJOB_HOSTFILE:-}" ]; then for mjpf_h in "\${mjpf_ok[@]}"; do printf ${input.openmpi ? '"%s slots=1\\n"' : '"%s:1\\n"'} "$mjpf_h"; done > "$MPIJOB_HOSTFILE"; fi`,
    'echo "MPIJOB_PREFLIGHT ranks $AZ_BATCH_HOST_LIST"',
  );
  return lines.join('; ');
}
