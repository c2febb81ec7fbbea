/**
 * Finding 8: SAS lifetimes were uncapped (a spec's data.retention of P520W gave node URLs valid until 2036). The real
 * mpiJob orchestrator, replayed by the library's executor: the shard URLs it asks for expire no later than the
 * deployment's cap, and never beyond the job's wall clock plus the margin.
 */
import { parseJobSpec } from '../../shared/spec';
import { mpiJobOrchestrator } from '../../orchestrations/mpiJob';
import type { MpiJobInput, PipelineSettings } from '../../shared/contract';
import { simulate, type Activity } from '../durable/helpers/simulator';
import { smallSpec } from '../ops/helpers';

const SIMULATOR_CLOCK_ORIGIN = Date.parse('2030-01-01T00:00:00Z');

const SETTINGS: PipelineSettings = {
  poll: { initialMs: 10_000, maxMs: 60_000, factor: 2 },
  stagingAccounts: ['stage1'],
  copyConcurrency: 4,
  sasMarginMinutes: 60,
  sasMaxLifetimeMinutes: 24 * 60,
  nodeTaskMaxAttempts: 3,
};

/** Runs a healthy one-node job with one input blob and returns how long after its start the shard URLs expire. */
async function shardUrlLifetimeMs(spec: Record<string, unknown>): Promise<number> {
  const parsed = parseJobSpec(smallSpec('sas', { nodes: 1, command: 'true', data: { inputs: [{ account: 'data1', container: 'inputs', prefix: 'x/' }], retention: 'P520W' }, ...spec }), 'application/yaml');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const input: MpiJobInput = { jobId: 'sas', spec: parsed.spec, settings: SETTINGS };
  let asked: { expiresAt: string } | undefined;
  const node = { id: 'node-0', state: 'idle', ipAddress: '10.0.0.1', affinityId: 'aff-0' };
  const activities: Record<string, Activity> = {
    jobTransition: () => null,
    jobFinish: () => null,
    costPrice: () => ({ vmSize: 'x', currency: 'USD', source: 'test' }),
    poolCreate: () => ({ created: true }),
    poolObserve: () => ({ state: 'active', allocationState: 'steady', currentDedicatedNodes: 1, targetDedicatedNodes: 1, resizeErrors: [], nodes: [node] }),
    batchJobCreate: (i) => (i as { batchJobId: string }).batchJobId,
    inputsList: () => [{ account: 'data1', container: 'inputs', name: 'x/a.bin', size: 1_000_000, etag: 'e' }],
    shardCopy: (i) => ({ shardId: (i as { shard: { id: string } }).shard.id, bytes: 1_000_000, md5: 'm', skipped: false }),
    shardUrls: (i) => {
      asked = i as { expiresAt: string };
      return Object.fromEntries((i as { shards: { id: string }[] }).shards.map((s) => [s.id, `https://stage1/sas?${s.id}`]));
    },
    nodeTasksAdd: () => null,
    nodeTasksObserve: (i) => (i as { taskIds: string[] }).taskIds.map((id) => ({ id, state: 'completed', exitCode: 0, nodeId: 'node-0' })),
    mpiTaskAdd: () => null,
    batchJobAutoComplete: () => null,
    mpiTaskObserve: () => ({ state: 'completed' }),
    mpiResultCollect: () => ({ exitCode: 0, subtasks: [], logs: [], stdoutTail: '' }),
    batchJobTerminate: () => 'terminated',
    poolDelete: () => ({ deleted: true }),
    stagedDataDelete: () => 1,
  };
  const r = await simulate(mpiJobOrchestrator, input, activities, { clockStepMs: 1000 });
  expect(r.state.status).toBe('Completed');
  if (!asked) throw new Error('the orchestrator never asked for shard URLs');
  // The simulator's clock starts here and moves a second per episode: the URLs are minted seconds into the run.
  return Date.parse(asked.expiresAt) - SIMULATOR_CLOCK_ORIGIN;
}

describe('shard SAS URLs', () => {
  it('expire within the deployment cap even when the spec keeps its data for ten years', async () => {
    const lifetime = await shardUrlLifetimeMs({ limits: { maxWallClock: undefined } });
    expect(lifetime).toBeLessThanOrEqual(SETTINGS.sasMaxLifetimeMinutes * 60_000 + 60_000);
    expect(lifetime).toBeGreaterThan(SETTINGS.sasMaxLifetimeMinutes * 60_000 - 60_000);
  });

  it('expire at the job\'s wall clock plus the margin when that is sooner', async () => {
    const lifetime = await shardUrlLifetimeMs({ limits: { maxWallClock: 'PT2H' } });
    expect(lifetime).toBeLessThanOrEqual((120 + SETTINGS.sasMarginMinutes) * 60_000 + 60_000);
    expect(lifetime).toBeGreaterThan((120 + SETTINGS.sasMarginMinutes) * 60_000 - 60_000);
  });
});
