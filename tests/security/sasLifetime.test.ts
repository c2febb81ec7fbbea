/**
 * Issue 23 (low): a job without maxWallClock used to get the whole cap (7 days by default); intake now writes the
 * deployment's default wall clock into its spec, so its URLs expire at that plus the margin.
 * Finding 8: SAS lifetimes were uncapped (a spec's data.retention of P520W gave node URLs valid until 2036). The real
 * mpiJob orchestrator, replayed by the library's executor with typed fake activities: the shard URLs it asks for
 * expire no later than the deployment's cap, and never beyond the job's wall clock plus the margin.
 */
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { recordedSpec } from '../../shared/adapters/intake/submit';
import type { MpiJobInput } from '../../shared/core/contract';
import { smallSpec } from '../ops/helpers';
import { healthyJob } from '../orchestrations/fakeActivities';
import { replay, scheduledInputs, SETTINGS, threeShards } from '../orchestrations/jobReplay';

/** The simulator's clock starts here and moves a second per episode here: the URLs are minted seconds into the run. */
const SIMULATOR_CLOCK_ORIGIN = Date.parse('2030-01-01T00:00:00Z');
const CAP_MINUTES = 24 * 60;

/** How long after the job's start the shard URLs it asked for expire. */
async function shardUrlLifetimeMs(limits: Record<string, unknown>, atIntake: (spec: JobSpec) => JobSpec = (s) => s): Promise<number> {
  const text = smallSpec('sas', {
    nodes: 2,
    command: 'true',
    limits,
    data: { inputs: [{ account: 'inputsacct', container: 'inputs', prefix: 'deck/' }], retention: 'P520W' },
  });
  const parsed = parseJobSpec(text, 'application/yaml');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const input: MpiJobInput = { jobId: 'sas', spec: atIntake(parsed.spec), settings: { ...SETTINGS, sasMaxLifetimeMinutes: CAP_MINUTES } };
  const job = healthyJob({ inputsList: threeShards });
  const r = await replay(input, job, { clockStepMs: 1000 });
  expect(job.finished().state).toBe('Succeeded');
  const [asked] = scheduledInputs(r.history, 'shardUrls');
  return Date.parse(asked.expiresAt) - SIMULATOR_CLOCK_ORIGIN;
}

describe('shard SAS URLs', () => {
  it("of a job submitted without a wall clock expire at the deployment's default wall clock plus the margin, not the cap", async () => {
    const defaultHours = 6;
    const atIntake = (spec: JobSpec) =>
      recordedSpec(spec, 'queue', 'sas', { accounts: [], stagingAccounts: [], defaultMaxWallClockMinutes: defaultHours * 60 });
    const lifetime = await shardUrlLifetimeMs({ maxWallClock: undefined }, atIntake);
    expect(lifetime).toBeGreaterThan((defaultHours * 60 + SETTINGS.sasMarginMinutes) * 60_000);
    expect(lifetime).toBeLessThanOrEqual((defaultHours * 60 + SETTINGS.sasMarginMinutes) * 60_000 + 60_000);
  });

  it('of a job recorded before that rule (no wall clock) expire within the deployment cap even when the spec keeps its data for ten years', async () => {
    const lifetime = await shardUrlLifetimeMs({ maxWallClock: undefined });
    expect(lifetime).toBeGreaterThan(CAP_MINUTES * 60_000);
    expect(lifetime).toBeLessThanOrEqual(CAP_MINUTES * 60_000 + 60_000);
  });

  it("expire at the job's wall clock plus the margin when that is sooner", async () => {
    const lifetime = await shardUrlLifetimeMs({ maxWallClock: 'PT2H' });
    expect(lifetime).toBeGreaterThan((120 + SETTINGS.sasMarginMinutes) * 60_000);
    expect(lifetime).toBeLessThanOrEqual((120 + SETTINGS.sasMarginMinutes) * 60_000 + 60_000);
  });
});
