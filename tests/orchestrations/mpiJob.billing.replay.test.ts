/**
 * The running cost's inputs, replayed with the real mpiJob orchestrator: the price looked up once before provisioning
 * is published in the custom status beside the nodes billed and since when (what the dashboard multiplies out).
 */
import { healthyJob } from './fakeActivities';
import { pipelineJob, replay, scheduledInputs } from './jobReplay';

describe('billing in the published status, replayed', () => {
  it('carries the price, its source, the billed nodes and the allocation time', async () => {
    const job = healthyJob({});
    const r = await replay(pipelineJob('billing'), job);
    expect(job.finished().state).toBe('Succeeded');
    const status = JSON.parse(r.state.customStatus ?? '{}') as {
      billing?: { nodes: number; since?: string; pricePerNodeHour?: number; currency: string; priceSource: string };
    };
    expect(status.billing).toMatchObject({ pricePerNodeHour: 0.5, currency: 'USD', priceSource: 'test table' });
    const [created] = scheduledInputs(r.history, 'poolCreate');
    expect(created).toBeDefined();
    expect(status.billing!.nodes).toBeGreaterThan(0);
    expect(Date.parse(status.billing!.since!)).not.toBeNaN();
  });
});
