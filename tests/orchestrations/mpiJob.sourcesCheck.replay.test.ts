/**
 * "Fail before paying", replayed with the real mpiJob orchestrator against typed fakes: after admission and before any
 * pool, the job's sources are looked up in one activity; a miss fails the job with the field path, without creating,
 * cleaning up or even pricing anything. Runs started before the check (no settings.checkSources) replay without it.
 */
import { missMessage, sourceChecks } from '../../shared/core/planning/sourcesCheck';
import { healthyJob } from './fakeActivities';
import { expectFinishedOnceAndLast, jobInput, pipelineJob, replay, scheduled, scheduledInputs, SETTINGS, threeShards } from './jobReplay';

const checked = <T extends { settings: object }>(input: T): T => ({ ...input, settings: { ...SETTINGS, checkSources: true } });

const startTaskJob = (id: string) =>
  checked(
    jobInput(id, {
      nodes: 2,
      command: 'osu_pingpong',
      pool: {
        vmSize: 'Standard_HB120rs_v3',
        nodes: 2,
        startTask: { command: 'make', resourceFiles: [{ account: 'data1', container: 'software', blob: 'osu_pingpong.c', path: 'osu_pingpong.c' }] },
      },
    }),
  );

describe('fail before paying, replayed', () => {
  it('a missing input prefix: Failed with the field path, before any pool, with nothing to clean up', async () => {
    const input = checked(pipelineJob('src-missing'));
    const [check] = sourceChecks(input.spec);
    const job = healthyJob({ inputsList: threeShards, sourcesMissing: ({ checks }) => checks.map((c) => ({ path: c.path, message: missMessage(c, true) })) });
    const r = await replay(input, job);

    const outcome = job.finished();
    expect(outcome.state).toBe('Failed');
    expect(outcome.reason).toBe(
      'missing input (checked before any pool was created): data.inputs[0].prefix: no blob under inputsacct/inputs/deck/ (container "inputs" does not exist)',
    );
    expect(outcome.reason).not.toMatch(/unexpected|Activity function|sourcesMissing/);
    expect(scheduledInputs(r.history, 'sourcesMissing')).toEqual([{ checks: [check] }]);
    // Nothing that costs or creates anything, and no CleaningUp stage.
    expect(scheduled(r.history)).toEqual(['jobTransition', 'admissionRequest', 'sourcesMissing', 'admissionRelease', 'jobFinish', 'jobEnded']);
    expect(scheduledInputs(r.history, 'jobTransition').map((t) => t.to)).toEqual(['Queued']);
    expectFinishedOnceAndLast(r, job);
  });

  it('a missing start-task blob: the same, naming pool.startTask.resourceFiles[0].blob', async () => {
    const job = healthyJob({ sourcesMissing: ({ checks }) => checks.map((c) => ({ path: c.path, message: missMessage(c, false) })) });
    const r = await replay(startTaskJob('src-starttask'), job);
    expect(job.finished()).toMatchObject({
      state: 'Failed',
      reason: 'missing input (checked before any pool was created): pool.startTask.resourceFiles[0].blob: blob data1/software/osu_pingpong.c does not exist',
    });
    expect(scheduled(r.history)).not.toContain('poolCreate');
  });

  it("lookups that cannot be made fail the job before any pool, in the storage error's own words", async () => {
    const job = healthyJob({
      sourcesMissing: () => {
        throw new Error('AuthorizationPermissionMismatch: This request is not authorized');
      },
    });
    const r = await replay(startTaskJob('src-error'), job);
    const outcome = job.finished();
    expect(outcome.state).toBe('Failed');
    expect(outcome.reason).toMatch(/^could not check the job's inputs before creating its pool: .*AuthorizationPermissionMismatch/);
    expect(outcome.reason).not.toMatch(/Activity function/);
    expect(scheduled(r.history)).not.toContain('poolCreate');
  });

  it('everything there: the lookup comes after admission and before the pool, and the job runs as before', async () => {
    const job = healthyJob({ inputsList: threeShards });
    const r = await replay(checked(pipelineJob('src-ok')), job);
    expect(job.finished().state).toBe('Succeeded');
    const names = scheduled(r.history);
    expect(names.indexOf('sourcesMissing')).toBeGreaterThan(names.indexOf('admissionRequest'));
    expect(names.indexOf('sourcesMissing')).toBeLessThan(names.indexOf('poolCreate'));
    expectFinishedOnceAndLast(r, job);
  });

  it('a run started before the check (no settings.checkSources) replays without it', async () => {
    const job = healthyJob({ inputsList: threeShards });
    const r = await replay(pipelineJob('src-old'), job);
    expect(job.finished().state).toBe('Succeeded');
    expect(scheduled(r.history)).not.toContain('sourcesMissing');
  });
});
