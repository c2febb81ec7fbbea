/**
 * The preflight check before the MPI task (docs/scheduling.md): the Batch task that runs it, the thresholds it is
 * judged by, the parse of what the master printed and the verdict per node. Pure; the orchestrator runs the task
 * (orchestrations/stages/preflight.ts) and replaces the nodes named here.
 */
import { parseLicenseServer } from '../spec/sections/secrets';
import { buildMpiTaskCommands, launcherWord } from '../mpi/commands';
import { resolveFabric } from '../mpi/rdmaPresets';
import { shellQuote } from '../mpi/shellQuote';
import { PINGPONG_BIN_ENV, PINGPONG_RANK_COMMAND, preflightMasterScript } from '../mpi/preflightScript';
import { parseIsoDuration } from '../spec/duration';
import type { JobSpec } from '../spec/schema';
import { PINGPONG_DEFAULTS } from '../spec/sections/preflight';
import type { JobPlan } from './jobPlan';
import { containerNameFor, containerOptionsFor, multiInstanceShape, rankSetup, type MpiTaskUrls } from './mpiTaskRequest';
import type { MpiTaskRequest } from '../contract/batchTasks';
import { nodeSetupScript } from './workloadData';
import type { NodePreflight } from '../contract/preflight';
import { healthPlan, healthProblem, judgeHealth, parseHealthLine, type HealthLine, type HealthPlan } from './health';
import { healthProbeArgs, hostHealthScript } from '../mpi/healthProbe';
import type { PreflightFailureRun } from './failureExplain';

/**
 * What every node must have before MPI starts, beyond free disk: the pool's mounts, as `mount:<name>` (each node
 * resolves it under its own `$AZ_BATCH_NODE_MOUNTS_DIR` and lists it within 10 s, so a mount that is missing or hangs,
 * such as a stale NFS mount, fails the node). Checked where the launcher's ranks run: on the node for native and
 * Singularity jobs. Not for docker: there the check runs inside the job's container, which sees a mount only when the
 * spec binds it (container.runOptions.binds), so a mount not bound would fail every node.
 */
export function requiredNodePaths(spec: JobSpec): string[] {
  // Every node must reach every licence server's lmgrd port and vendor daemon port (a TCP connect, 5 s).
  const licenses = (spec.licenses ?? []).flatMap((l) => {
    const server = parseLicenseServer(l.server);
    if (!server) return [];
    return [`tcp:${server.host}:${server.port}`, ...(l.vendorPort ? [`tcp:${server.host}:${l.vendorPort}`] : [])];
  });
  if (spec.container.runtime === 'docker') return licenses;
  return [...(spec.mounts ?? []).map((m) => `mount:${m.name}`), ...licenses];
}

export interface PreflightThresholds {
  maxSshMs: number;
  minFreeMB: number;
  requiredPaths: string[];
  /** The check runs the job's pre-execution command first (a failure of it then explains a silent check). */
  runsPreExecution: boolean;
  /** A threshold left out is not judged (the figure is still recorded). */
  pingPong: { enabled: boolean; maxLatencyUs?: number; minBandwidthMBps?: number };
  /** The node health checks each node runs and the thresholds they are judged by (shared/core/planning/health.ts). */
  health?: HealthPlan;
}

/**
 * The thresholds a job is judged by: the spec's, else the defaults of an RDMA fabric (PINGPONG_DEFAULTS) unless the
 * deployment turned those off (`fabricDefaults` false, the PREFLIGHT_FABRIC_DEFAULTS setting).
 */
export function preflightThresholds(spec: JobSpec, vmSize: string, fabricDefaults = true, healthChecks: readonly string[] = []): PreflightThresholds {
  const p = spec.preflight;
  const defaults: { maxLatencyUs?: number; minBandwidthMBps?: number } =
    fabricDefaults && resolveFabric(spec.mpi.fabric, vmSize) === 'rdma' ? PINGPONG_DEFAULTS.rdma : {};
  const maxLatencyUs = p.pingPong.maxLatencyUs ?? defaults.maxLatencyUs;
  const minBandwidthMBps = p.pingPong.minBandwidthMBps ?? defaults.minBandwidthMBps;
  return {
    maxSshMs: p.maxSshMs,
    minFreeMB: Math.round(p.minFreeDiskGB * 1024),
    requiredPaths: requiredNodePaths(spec),
    runsPreExecution: spec.mpi.preExecutionCommand !== undefined && p.runPreExecutionCommand,
    pingPong: {
      enabled: p.pingPong.enabled,
      ...(maxLatencyUs !== undefined ? { maxLatencyUs } : {}),
      ...(minBandwidthMBps !== undefined ? { minBandwidthMBps } : {}),
    },
    health: healthPlan(spec, vmSize, healthChecks),
  };
}

/**
 * The spec the check runs by on a deployment that waits at least `minSshMs` for a node's ssh answer
 * (PREFLIGHT_SSH_WAIT_MIN_MS: emulated nodes sharing a few cores answer late; Azure's nodes do not, and keep the
 * spec's maxSshMs). The same spec when there is no floor or the spec's wait is longer.
 */
export function withSshWaitFloor(spec: JobSpec, minSshMs: number | undefined): JobSpec {
  if (!minSshMs || spec.preflight.maxSshMs >= minSshMs) return spec;
  return { ...spec, preflight: { ...spec.preflight, maxSshMs: minSshMs } };
}

/** The preflight task of attempt `attempt`, check `round` (ids stay unique in the Batch job). */
export function preflightTaskId(attempt: number, round: number): string {
  return `preflight-${attempt}-${round}`;
}

/**
 * The check as a multi-instance task over `nodes`, built like the MPI task (same launcher, options, fabric preset,
 * ssh port, pre-execution command and, for docker, the job's container with its sshd), one rank per node. A
 * Singularity job's launcher runs on the host, so its check does too (the ping-pong is compiled against the host's
 * MPI, not the image's). A custom launcher cannot be run for a check: the managed launcher of the same runtime is.
 */
export function preflightTaskRequest(
  plan: JobPlan,
  spec: JobSpec,
  nodes: { id: string }[],
  batchJobId: string,
  taskId: string,
  urls: MpiTaskUrls = { commonResourceFiles: [] },
  healthChecks: readonly string[] = [],
): MpiTaskRequest {
  const docker = spec.container.runtime === 'docker';
  const managed = spec.mpi.launcher.mode === 'managed';
  const vmSize = spec.pool.vmSize ?? plan.poolCreate.vmSize;
  const th = preflightThresholds(spec, vmSize, true, healthChecks);
  const healthArgs = healthProbeArgs(th.health?.checks ?? [], spec.preflight.siteCheck);
  // Docker: the health checks run on each node's host in the coordination step (the tools are the host image's),
  // and the probe in the container reads their lines back.
  const hostHealth = docker && healthArgs.length ? hostHealthScript(healthArgs) : undefined;
  const setup = nodeSetupScript(spec, plan.jobId);
  const script = preflightMasterScript({
    health: hostHealth ? ['hosthealth'] : healthArgs,
    sshPort: spec.mpi.sshPort,
    maxSshMs: th.maxSshMs,
    requiredPaths: th.requiredPaths,
    pingPong: th.pingPong.enabled,
    openmpi: spec.mpi.runtime === 'openmpi',
    launcher: launcherWord((managed ? spec.mpi.launcher.executable : undefined) ?? 'mpirun'),
  });
  // The same rank setup as the MPI task (scratch, array exports) and the same files: a pre-execution command that
  // sources a file from `files` finds it.
  const { env, prefix } = rankSetup(spec, plan.jobId);
  const userPre = th.runsPreExecution ? spec.mpi.preExecutionCommand : undefined;
  const preExecutionCommand = userPre
    ? `${prefix}eval ${shellQuote(userPre)}; mjpf_rc=$?; if [ "$mjpf_rc" -ne 0 ]; then echo "[mpijob] preExecutionCommand exited with status $mjpf_rc" >&2; exit "$mjpf_rc"; fi; ${script}`
    : `${prefix}${script}`;
  const commands = buildMpiTaskCommands({
    runtime: docker ? 'docker' : 'none',
    mpiRuntime: spec.mpi.runtime,
    mpiVersion: spec.mpi.version,
    nodes: nodes.length,
    processesPerNode: 1,
    command: PINGPONG_RANK_COMMAND,
    launcherMode: 'managed',
    launcher: managed ? spec.mpi.launcher.executable : undefined,
    options: managed ? spec.mpi.options : [],
    fabric: spec.mpi.fabric,
    vmSize,
    image: docker ? (spec.container.images[0] as string) : undefined,
    containerName: docker ? containerNameFor(plan.jobId) : undefined,
    containerOptions: docker ? containerOptionsFor(spec) : undefined,
    sshPort: spec.mpi.sshPort,
    env,
    preExecutionCommand,
    // Docker: the container's own command, if the job overrides sshd. Natively the job's coordination command is user
    // code run on every node; the check runs none of it.
    coordinationCommand: docker ? spec.mpi.coordinationCommand : undefined,
    forwardNames: [PINGPONG_BIN_ENV],
    nodeSetupCommand: hostHealth ? [setup, hostHealth].filter((x) => x).join('; ') : setup,
  });
  return {
    ...multiInstanceShape(commands, batchJobId, taskId, nodes.length, urls),
    maxWallClockSeconds: Math.ceil((parseIsoDuration(spec.preflight.timeout) ?? 180_000) / 1000),
    maxTaskRetryCount: 0,
  };
}

// ---- what the master printed ----------------------------------------------------------------------------------

export interface NodeProbe {
  ip: string;
  /** local: the master itself; ssh: reached over the launcher's ssh port. */
  via: 'local' | 'ssh';
  /** The probe's exit status: 0, 255 (ssh failed: refused, no route), 124 (no answer in time), other (the remote shell). */
  rc: number;
  ms: number;
  freeKB?: number;
  missing: string[];
  /** What a failed probe said (ssh's error). */
  message?: string;
  /** The node health checks' lines (shared/core/mpi/healthProbe.ts), when it ran them. */
  health?: HealthLine[];
}

export interface PingPongPair {
  a: string;
  b: string;
  latencyUs: number;
  bandwidthMBps: number;
}

export interface PreflightReport {
  probes: NodeProbe[];
  /** The hosts the ping-pong ran on (rank order), when it ran. */
  ranks?: string[];
  pairs: PingPongPair[];
  /** Nodes (ip) that answered the probe but the ping-pong program could not be copied to: left out of the ring. */
  copyFailed?: string[];
  /** Why there was no ping-pong: disabled, no-mpicc, compile-failed, fewer-than-2-reachable-nodes. */
  skipped?: string;
  /** Compiler messages when the ping-pong did not compile. */
  compiler?: string[];
}

const NUM = '(-?\\d+(?:\\.\\d+)?)';
const NODE_LINE = /^MPIJOB_PREFLIGHT node (\S+) via=(local|ssh) rc=(\d+) ms=(-?\d+)$/;
const OUT_LINE = /^MPIJOB_PREFLIGHT out (\S+) (.*)$/;
const PAIR_LINE = new RegExp(`^MPIJOB_PINGPONG (\\d+) (\\d+) ${NUM} ${NUM} (\\d+) (\\d+)$`);

/** Parses the master's stdout (unknown lines, such as the launcher's own messages, are skipped). */
export function parsePreflightOutput(stdout: string): PreflightReport {
  const report: PreflightReport = { probes: [], pairs: [] };
  const byIp = new Map<string, NodeProbe>();
  const rankPairs: [number, number, number, number][] = [];
  for (const raw of stdout.split('\n')) {
    const line = raw.trimEnd();
    let m: RegExpExecArray | null;
    if ((m = NODE_LINE.exec(line))) {
      const probe: NodeProbe = { ip: m[1], via: m[2] as NodeProbe['via'], rc: Number(m[3]), ms: Number(m[4]), missing: [] };
      byIp.set(probe.ip, probe);
      report.probes.push(probe);
    } else if ((m = OUT_LINE.exec(line))) {
      const probe = byIp.get(m[1]);
      if (!probe) continue;
      const text = m[2];
      const free = /^free_kb=(\d+)$/.exec(text);
      const missing = /^missing=(\/\S*)$/.exec(text);
      const unreachable = /^unreachable=(\S+)$/.exec(text);
      const health = parseHealthLine(text);
      if (health) (probe.health ??= []).push(health);
      else if (free) probe.freeKB = Number(free[1]);
      else if (missing) probe.missing.push(missing[1]);
      else if (unreachable) probe.missing.push(`licence server port ${unreachable[1]} (no TCP connection within 5 s)`);
      else if (!/^free_kb=/.test(text)) probe.message ??= text.slice(0, 300);
    } else if (line.startsWith('MPIJOB_PREFLIGHT ranks ')) {
      report.ranks = line.slice('MPIJOB_PREFLIGHT ranks '.length).split(',').filter(Boolean);
    } else if (line.startsWith('MPIJOB_PREFLIGHT pingpong skipped=')) {
      report.skipped = line.slice('MPIJOB_PREFLIGHT pingpong skipped='.length);
    } else if (line.startsWith('MPIJOB_PREFLIGHT copy-failed ')) {
      (report.copyFailed ??= []).push(line.slice('MPIJOB_PREFLIGHT copy-failed '.length));
    } else if (line.startsWith('MPIJOB_PREFLIGHT cc ')) {
      (report.compiler ??= []).push(line.slice('MPIJOB_PREFLIGHT cc '.length));
    } else if ((m = PAIR_LINE.exec(line))) {
      rankPairs.push([Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4])]);
    }
  }
  for (const [a, b, latencyUs, bandwidthMBps] of rankPairs) {
    const ha = report.ranks?.[a];
    const hb = report.ranks?.[b];
    if (ha && hb) report.pairs.push({ a: ha, b: hb, latencyUs, bandwidthMBps });
  }
  return report;
}

// ---- the verdict --------------------------------------------------------------------------------------------

export interface PreflightVerdict {
  /** Node id → figures. */
  nodes: Record<string, NodePreflight>;
  /** Nodes to replace. */
  outliers: string[];
  /** A failure no node can be blamed for (every pair slow on 3+ nodes, no output at all). */
  unattributed?: string;
  /** "measured over N pairs", or why there was no ping-pong. */
  pingPong: string;
  pass: boolean;
}

/** Also what a failure is explained with (failureExplain.ts: the master's stderr tail, the failed subtasks' on their nodes). */
export interface PreflightRun extends PreflightFailureRun {
  /** The preflight task's exit code and failure, as Batch reports them. */
  exitCode?: number;
  failure?: string;
  report: PreflightReport;
}

const round1 = (n: number) => Math.round(n * 10) / 10;

/**
 * Judges the nodes by the report. A node is bad when it did not answer on the launcher's ssh port (refused, timed
 * out, slower than maxSshMs), has less free disk than asked, lacks a required path, did not take the ping-pong program
 * (so it was left out of the ring), or every ping-pong pair it is in
 * is slow (latency above or bandwidth below the threshold) — so on three or more nodes a slow node is told from its
 * partners. With two nodes a slow pair cannot be pinned on either, and both are replaced. Every pair slow on three
 * or more nodes is a fabric-wide problem: no node is replaced and the check fails.
 */
export function evaluatePreflight(run: PreflightRun, nodes: readonly { id: string; ipAddress: string }[], th: PreflightThresholds): PreflightVerdict {
  const { report } = run;
  const figures: Record<string, NodePreflight> = {};
  const idByIp = new Map(nodes.map((n) => [n.ipAddress, n.id]));
  const probeByIp = new Map(report.probes.map((p) => [p.ip, p]));
  const anyOutput = report.probes.length > 0;

  for (const n of nodes) {
    const f: NodePreflight = { ok: true, ip: n.ipAddress, problems: [] };
    figures[n.id] = f;
    const probe = probeByIp.get(n.ipAddress);
    if (!probe) {
      if (anyOutput) f.problems.push('no probe result (the check did not reach it)');
      continue;
    }
    f.sshMs = probe.ms;
    if (probe.rc !== 0) {
      f.problems.push(
        probe.rc === 124
          ? `no answer on the launcher's ssh port within ${th.maxSshMs} ms`
          : `unreachable on the launcher's ssh port (exit ${probe.rc}${probe.message ? `: ${probe.message}` : ''})`,
      );
    } else if (probe.via === 'ssh' && probe.ms > th.maxSshMs) {
      f.problems.push(`ssh round trip ${probe.ms} ms > ${th.maxSshMs} ms`);
    }
    if (probe.freeKB !== undefined) {
      f.freeGB = round1(probe.freeKB / 1024 / 1024);
      if (th.minFreeMB > 0 && probe.freeKB < th.minFreeMB * 1024) f.problems.push(`free disk ${f.freeGB} GB < ${round1(th.minFreeMB / 1024)} GB`);
    }
    for (const p of probe.missing) f.problems.push(`missing ${p}`);
    if (probe.rc === 0 && report.copyFailed?.includes(n.ipAddress))
      f.problems.push("the ping-pong program could not be copied to it over the launcher's ssh port");
    if (probe.rc === 0 && th.health?.checks.length) {
      f.health = judgeHealth(probe.health ?? [], th.health);
      for (const r of f.health) if (!r.ok) f.problems.push(healthProblem(r));
    }
  }

  // Ping-pong: a pair is slow past either threshold; a node is slow when all of its pairs are.
  const { maxLatencyUs, minBandwidthMBps } = th.pingPong;
  const judged = maxLatencyUs !== undefined || minBandwidthMBps !== undefined;
  const slow = (p: PingPongPair) =>
    (maxLatencyUs !== undefined && p.latencyUs > maxLatencyUs) || (minBandwidthMBps !== undefined && p.bandwidthMBps < minBandwidthMBps);
  const limits = [maxLatencyUs !== undefined ? `latency ${maxLatencyUs} µs` : '', minBandwidthMBps !== undefined ? `bandwidth ${minBandwidthMBps} MB/s` : '']
    .filter(Boolean)
    .join(', ');
  let pingPong: string;
  let unattributed: string | undefined;
  const expected = th.pingPong.enabled && (report.ranks?.length ?? 0) >= 2;
  if (report.pairs.length) {
    pingPong = `measured over ${report.pairs.length} pair(s)${judged ? '' : ' (no thresholds: recorded, not judged)'}`;
    const pairsOf = new Map<string, PingPongPair[]>();
    for (const p of report.pairs) for (const ip of [p.a, p.b]) pairsOf.set(ip, [...(pairsOf.get(ip) ?? []), p]);
    const slowIps: string[] = [];
    for (const [ip, pairs] of pairsOf) {
      const id = idByIp.get(ip);
      const f = id ? figures[id] : undefined;
      if (!f) continue;
      f.latencyUs = Math.max(...pairs.map((p) => p.latencyUs));
      f.bandwidthMBps = Math.min(...pairs.map((p) => p.bandwidthMBps));
      if (pairs.every(slow)) slowIps.push(ip);
    }
    const allSlow = report.pairs.every(slow);
    if (allSlow && pairsOf.size >= 3) {
      unattributed = `every ping-pong pair is over the thresholds (${limits}): a fabric-wide problem, not one node`;
    } else {
      for (const ip of slowIps) {
        const f = figures[idByIp.get(ip) as string];
        f.problems.push(
          `slow fabric: latency ${f.latencyUs} µs, bandwidth ${f.bandwidthMBps} MB/s (thresholds: ${limits})${pairsOf.size === 2 ? '; with two nodes the slow pair cannot be pinned on one' : ''}`,
        );
      }
    }
  } else if (!th.pingPong.enabled) {
    pingPong = 'skipped: disabled';
  } else if (report.skipped) {
    pingPong = `skipped: ${report.skipped}${report.compiler?.length ? ` (${report.compiler[0]})` : ''}`;
  } else if (expected) {
    pingPong = 'did not complete';
    unattributed = `the ping-pong did not complete (task exit ${run.exitCode ?? 'unknown'}${run.failure ? `: ${run.failure}` : ''})`;
  } else {
    pingPong = 'not run';
  }

  if (!anyOutput) {
    // What the master's stderr ended with (e.g. a pre-execution command's `cd: …: No such file or directory`) is the
    // reason the user needs; "printed nothing" alone hides it.
    const said = lastLine(run.stderrTail);
    unattributed = said
      ? `the check stopped before its first probe (task exit ${run.exitCode ?? 'unknown'}${run.failure ? `: ${run.failure}` : ''}): ${said}`
      : `the check printed nothing (task exit ${run.exitCode ?? 'unknown'}${run.failure ? `: ${run.failure}` : ''})`;
    // Its first step is the job's pre-execution command: a job whose command needs what its coordination command
    // built (or does the job's work) fails here, and the spec can say so.
    if (th.runsPreExecution)
      unattributed +=
        "; the job's mpi.preExecutionCommand ran first: if it does the job's work rather than set up its environment, set preflight.runPreExecutionCommand: false";
  }
  const outliers = nodes.map((n) => n.id).filter((id) => figures[id].problems.length > 0);
  for (const id of outliers) figures[id].ok = false;
  return { nodes: figures, outliers, unattributed, pingPong, pass: outliers.length === 0 && !unattributed };
}

/** The last two non-empty lines of a stderr tail (the failing command's message and the wrapper's status line), or undefined. */
function lastLine(tail: string | undefined): string | undefined {
  const lines = (tail ?? '')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-2)
    .join(' / ');
  return lines === '' ? undefined : lines.length > 400 ? `${lines.slice(0, 400)}…` : lines;
}
