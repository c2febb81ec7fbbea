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
  problems: string[];
}
