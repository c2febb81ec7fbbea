import type { NodeRef, PipelineSettings, StagingContainerRef } from '../../shared/contract';
import { Orchestration, PipelineRun } from '../runtime/pipelineRun';
import { nodeTaskWindow } from '../runtime/nodeTaskWindow';
import { buildNodeManifests, planShards } from '../../shared/planning/shards';
import { stagingContainerFor } from '../../shared/planning/jobPlan';
import { resolveDestination } from '../../shared/spec/normalize';
import { parseIsoDuration } from '../../shared/spec/duration';
import type { JobSpec } from '../../shared/spec/schema';

export interface StagedData {
  /** Where every node holds its shards (may reference node environment variables). */
  destination: string;
  containers: StagingContainerRef[];
  shards: number;
  bytes: number;
  /** Per node slot (the node's place in the job's node list): the resource files of its shards (read-only SAS URLs). */
  nodeFiles: { httpUrl: string; filePath: string }[][];
}

export interface StageDataRequest {
  jobId: string;
  batchJobId: string;
  nodes: NodeRef[];
  spec: JobSpec;
  settings: PipelineSettings;
  /**
   * Shards copied and URLs minted by an earlier attempt: only the nodes in `only` (nodes that replace failed ones, in
   * the failed nodes' places) download theirs, under their own task-id prefix.
   */
  previous?: StagedData;
  only?: readonly string[];
  taskPrefix?: string;
}

/**
 * Stage shards: list the inputs, plan 80–100 MB shards spread over the staging accounts, copy them with
 * bounded concurrency (a re-run skips verified shards), mint read-only SAS URLs that outlive the run by a
 * margin, and have every node download exactly its own shards through Batch resource files.
 */
export function* stageData(run: PipelineRun, req: StageDataRequest): Orchestration<StagedData> {
  const staged = req.previous ?? (yield* stageShards(run, req));
  yield* downloadShards(run, req, staged);
  return staged;
}

/** Lists the inputs, plans the shards, copies them and mints the nodes' read-only URLs. */
function* stageShards(run: PipelineRun, req: StageDataRequest): Orchestration<StagedData> {
  const { spec } = req;
  const destination = resolveDestination(spec, req.jobId, '$AZ_BATCH_NODE_SHARED_DIR');
  const stagingAccounts = spec.data.stagingAccounts.length ? spec.data.stagingAccounts : req.settings.stagingAccounts;

  const listing = spec.data.inputs.length ? yield* run.call('inputsList', { inputs: spec.data.inputs }) : [];
  const plan = planShards(listing, {
    stagingAccounts,
    nodes: req.nodes.length,
    minBytes: spec.data.shardSizeMB.min * 1_000_000,
    maxBytes: spec.data.shardSizeMB.max * 1_000_000,
    recordAlignment: spec.data.recordBytes,
    container: stagingContainerFor(req.jobId),
    namePrefix: '',
  });
  const containers = [...new Set(plan.shards.map((s) => `${s.account}/${s.container}`))].map((k) => {
    const [account, container] = k.split('/');
    return { account, container };
  });
  run.report({ resources: { stagingContainers: containers }, progress: { shardsStaged: { done: 0, total: plan.shards.length } } });

  for (let i = 0; i < plan.shards.length; i += req.settings.copyConcurrency) {
    const batch = plan.shards.slice(i, i + req.settings.copyConcurrency);
    yield* run.all(batch.map((shard) => run.start('shardCopy', { jobId: req.jobId, shard })));
    run.report({ progress: { shardsStaged: { done: i + batch.length, total: plan.shards.length } } });
    run.throwIfCancelled();
  }

  // Nodes read their shards once, right now; the URLs must not outlive the job's wall clock (plus a margin for
  // nodes that download late), nor the deployment's cap however long the job may run.
  const capMs = req.settings.sasMaxLifetimeMinutes * 60_000;
  const wallClockMs = spec.limits.maxWallClock ? parseIsoDuration(spec.limits.maxWallClock) : undefined;
  const validForMs = Math.min(capMs, (wallClockMs ?? capMs) + req.settings.sasMarginMinutes * 60_000);
  const expiresAt = new Date(run.now().getTime() + validForMs).toISOString();
  const urls = plan.shards.length
    ? yield* run.call('shardUrls', { shards: plan.shards.map(({ id, account, container, blobName }) => ({ id, account, container, blobName })), expiresAt })
    : {};
  const nodeFiles = buildNodeManifests(plan).map((m) => m.shards.map((s) => ({ httpUrl: urls[s.shardId], filePath: `shards/${s.shardId}` })));
  return { destination, containers, shards: plan.shards.length, bytes: plan.totalBytes, nodeFiles };
}

/** Every node (of `only`, when given) downloads the shards of its slot. */
function* downloadShards(run: PipelineRun, req: StageDataRequest, staged: StagedData): Orchestration<void> {
  const slot = new Map(req.nodes.map((n, i) => [n.id, i]));
  const nodes = req.only ? req.nodes.filter((n) => req.only!.includes(n.id)) : req.nodes;
  if (nodes.length === 0) return;
  const { destination } = staged;
  // Every node gets a download task, also nodes without shards, so the destination exists everywhere.
  yield* nodeTaskWindow(run, {
    stage: 'StagingData',
    batchJobId: req.batchJobId,
    nodes,
    items: ['shards'],
    concurrency: Math.max(1, Math.min(nodes.length, req.spec.container.pullConcurrency)),
    maxAttempts: req.settings.nodeTaskMaxAttempts,
    taskPrefix: req.taskPrefix ?? 'dl',
    progressKey: 'shardsDownloaded',
    inFlightState: 'downloading',
    doneState: 'ready',
    taskFor: (node) => ({
      commandLine: `/bin/sh -c "mkdir -p ${destination} && if [ -d shards ]; then mv -f shards/* ${destination}/; fi && ls ${destination} | wc -l"`,
      resourceFiles: staged.nodeFiles[slot.get(node.id) ?? -1] ?? [],
    }),
  });
}
