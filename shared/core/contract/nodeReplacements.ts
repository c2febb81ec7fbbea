/**
 * Node replacements on the job's timeline: every node the pipeline replaced and why (a start task that failed, a node
 * Batch marked unusable, a preflight check it failed with the measured figure and the threshold, an attempt that failed
 * on it). The orchestrator writes them as timeline notes whose `data` is a `NodesReplaced`; the CLI (`hpcjob status`)
 * and the dashboard read them back with `nodeReplacements`. Pure and browser-safe (the dashboard imports it).
 */
import type { HealthResult } from './preflight';

export type ReplacementCause = 'startTask' | 'unusable' | 'preflight' | 'attempt';

// A type, not an interface: it travels as JSON (JsonValue needs an index signature).
export type NodeReplacement = {
  node: string;
  cause: ReplacementCause;
  /** Why, one line per problem ("health ib mlx5_ib0:1: measured Down/Polling, 10 Gb/s, threshold …"). */
  reasons: string[];
  /** The node health checks it failed (preflight), with measured values and thresholds. */
  checks?: HealthResult[];
};

/** The `data` of a timeline note that records replaced nodes. */
// A type, not an interface: it travels as JSON (JsonValue needs an index signature).
export type NodesReplaced = {
  kind: 'nodesReplaced';
  stage: string;
  attempt?: number;
  round?: number;
  nodes: NodeReplacement[];
};

/** A timeline event as the API serves it (GET /api/jobs/{id} `timeline`), as much of it as is read here. */
export interface TimelineNote {
  at: string;
  kind: string;
  reason: string;
  data?: unknown;
}

export interface ReplacementEntry extends NodeReplacement {
  at: string;
  stage: string;
}

function isNodesReplaced(data: unknown): data is NodesReplaced {
  const d = data as NodesReplaced | undefined;
  return !!d && d.kind === 'nodesReplaced' && Array.isArray(d.nodes);
}

/** Every replaced node of a timeline, oldest first. Notes of other kinds (and of older runs without `data`) are left out. */
export function nodeReplacements(timeline: readonly TimelineNote[] | undefined): ReplacementEntry[] {
  return (timeline ?? [])
    .filter((e) => e.kind === 'note' && isNodesReplaced(e.data))
    .sort((a, b) => Date.parse(a.at) - Date.parse(b.at))
    .flatMap((e) =>
      (e.data as NodesReplaced).nodes
        .filter((n) => typeof n?.node === 'string')
        .map((n) => ({ ...n, reasons: Array.isArray(n.reasons) ? n.reasons.map(String) : [], at: e.at, stage: (e.data as NodesReplaced).stage })),
    );
}

/** One line per replaced node: "node-3 (preflight, StagingData): health ib mlx5_ib0:1: measured …; …". */
export function replacementLine(r: ReplacementEntry): string {
  return `${r.node} (${r.cause}, ${r.stage}): ${r.reasons.join('; ') || 'no reason recorded'}`;
}
