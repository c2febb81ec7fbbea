/**
 * One node's preflight figures, as the job result and the progress show them. A contract type of its own so
 * the dashboard (browser code) can read it without the planner's Node-only imports.
 */
export interface NodePreflight {
  ok: boolean;
  ip: string;
  sshMs?: number;
  freeGB?: number;
  /** The worst (largest) median latency of the node's pairs, µs. */
  latencyUs?: number;
  /** The worst (smallest) bandwidth of the node's pairs, MB/s. */
  bandwidthMBps?: number;
  /** The node health checks (per VM size, and the site's check), when they ran. */
  health?: HealthResult[];
  problems: string[];
}

/**
 * One node health figure judged against its VM size's threshold (shared/core/planning/health.ts): AzNHC's checks and the
 * site's own. `skipped`: measured nowhere or not judged (the tool is not on the node, no threshold for the size).
 */
// A type, not an interface: it travels as JSON (JsonValue needs an index signature).
export type HealthResult = {
  /** cpu, memory, ib, ibbw, stream, gpu, linkflap, site. */
  check: string;
  /** The InfiniBand device or port the figure is of. */
  device?: string;
  ok: boolean;
  /** What the node showed, with its unit ("100 Gb/s", "Down/Polling", "exit 3: no scratch"). */
  measured: string;
  /** What it had to be ("≥ 200 Gb/s, Active, LinkUp"). */
  threshold?: string;
  /** Where the threshold comes from (the AzNHC file and check). */
  source?: string;
  skipped?: string;
};
