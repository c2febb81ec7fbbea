/**
 * The scheduling section of the spec and the pure parts of dependencies and arrays: validation with field paths,
 * array expansion, the array's summary state, dependency conditions, and the intake checks (unknown and foreign
 * parents, cycles).
 */
import fc from 'fast-check';
import { canonicalJson, parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { arrayValues, expandArray, pathTo, summarizeArray } from '../../shared/core/scheduling/arrays';
import { checkDependencies, dependencyStatus } from '../../shared/core/scheduling/dependencies';
import { demandOf, submissionOrder } from '../../shared/core/scheduling/demand';
import { vmSizeInfo } from '../../shared/core/planning/vmSizes';
import { planJob } from '../../shared/core/planning/jobPlan';
import { mpiTaskRequest } from '../../shared/core/planning/mpiTaskRequest';
import { canTransition, JOB_STATES, type JobRecord, type JobState } from '../../shared/adapters/state';

const base = { name: 'sched', pool: { vmSize: 'Standard_D2s_v5', nodes: 2 }, mpi: { runtime: 'openmpi', command: 'app' } };

function spec(extra: Record<string, unknown> = {}): JobSpec {
  const r = parseJobSpec({ ...base, ...extra });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
}

function errors(extra: Record<string, unknown>): { path: string; message: string }[] {
  const r = parseJobSpec({ ...base, ...extra });
  return r.ok ? [] : r.errors;
}

function row(id: string, state: JobState, extra: Partial<JobRecord> = {}): JobRecord {
  return { id, name: id, owner: 'alice', tags: {}, specHash: 'h', state, stage: state, progress: null, createdAt: '', updatedAt: '', eventSeq: 1, ...extra };
}

describe('the scheduling section of the spec', () => {
  it('adds nothing to a spec that does not use it (its hash and idempotency stay as they were)', () => {
    const s = spec();
    for (const k of ['queue', 'priority', 'dependsOn', 'array']) expect(k in s).toBe(false);
    expect(canonicalJson(s)).not.toMatch(/queue|priority|dependsOn|"array"/);
  });

  it('refuses bad values with their paths', () => {
    expect(errors({ queue: 'Bad Queue' })).toEqual([{ path: 'queue', message: expect.stringMatching(/queue name/) }]);
    expect(errors({ priority: 1.5 })[0].path).toBe('priority');
    expect(errors({ priority: 5000 })[0].path).toBe('priority');
    expect(errors({ dependsOn: [{ job: 'a', condition: 'maybe' }] })).toEqual([
      { path: 'dependsOn[0].condition', message: 'must be "succeeded" or "finished"' },
    ]);
    expect(errors({ dependsOn: [{ job: 'A!' }] })[0].path).toBe('dependsOn[0].job');
    expect(errors({ id: 'me', dependsOn: [{ job: 'other' }, { job: 'me' }] })).toEqual([
      { path: 'dependsOn[1].job', message: 'a job cannot depend on itself (a cycle)' },
    ]);
    expect(errors({ dependsOn: [{ job: 'x' }, { job: 'x' }] })).toEqual([{ path: 'dependsOn[1].job', message: 'job x is listed twice' }]);
    expect(errors({ array: { range: { from: 5, to: 1 } } })).toEqual([{ path: 'array.range.to', message: 'the range from 5 to 1 by 1 is empty' }]);
    expect(errors({ array: { range: { from: 0, to: 1000 } } })[0].message).toMatch(/1001 values; an array runs at most 500/);
    expect(errors({ array: { range: { from: 0, to: 3, step: 0 } } })[0].path).toBe('array.range.step');
    expect(errors({ array: { parameters: [] } })[0].path).toBe('array.parameters');
    expect(errors({ array: { parameters: ['a\nb'] } })[0].path).toBe('array.parameters[0]');
    expect(errors({ array: { parameters: ['a'], range: { from: 0, to: 1 } } })[0].path).toBe('array');
    expect(errors({ id: 'x'.repeat(62), array: { range: { from: 0, to: 10 } } })).toEqual([
      { path: 'id', message: expect.stringMatching(/too long for an array of 11.*at most 61 here/) },
    ]);
    expect(errors({ array: { parameters: ['a'] }, mpi: { ...base.mpi, env: { MPIJOB_ARRAY_INDEX: '1' } } })).toEqual([
      { path: 'mpi.env.MPIJOB_ARRAY_INDEX', message: expect.stringMatching(/set by the pipeline/) },
    ]);
  });

  it('keeps what it was given', () => {
    expect(spec({ queue: 'urgent', priority: -3, dependsOn: [{ job: 'a' }, { job: 'b', condition: 'finished' }] })).toMatchObject({
      queue: 'urgent',
      priority: -3,
      dependsOn: [
        { job: 'a', condition: 'succeeded' },
        { job: 'b', condition: 'finished' },
      ],
    });
  });
});

describe('arrays', () => {
  it('expands into jobs "<id>-<index>" with the index and the parameter in the environment, each a valid spec', () => {
    const s = spec({ array: { parameters: ['deck-a', 42, 'x y'] }, dependsOn: [{ job: 'prep' }], mpi: { ...base.mpi, env: { OMP_NUM_THREADS: '4' } } });
    const out = expandArray('sweep', s);
    if (!out.ok) throw new Error(JSON.stringify(out.errors));
    expect(out.children.map((c) => c.id)).toEqual(['sweep-0', 'sweep-1', 'sweep-2']);
    expect(out.children[1].spec.mpi.env).toEqual({ OMP_NUM_THREADS: '4', MPIJOB_ARRAY_INDEX: '1', MPIJOB_ARRAY_PARAM: '42' });
    for (const c of out.children) {
      expect(c.spec.id).toBe(c.id);
      expect('array' in c.spec).toBe(false);
      expect(c.spec.dependsOn).toEqual([{ job: 'prep', condition: 'succeeded' }]);
      expect(parseJobSpec(c.spec).ok).toBe(true);
    }
  });

  it('the MPI task exports the array variables on every rank as quoted literals, not as forwarded user environment', () => {
    const out = expandArray('sweep', spec({ array: { parameters: ["it's $HOME; rm -rf /"] } }));
    if (!out.ok) throw new Error('expand');
    const c = out.children[0];
    const task = mpiTaskRequest(planJob(c.id, c.spec), c.spec, [{ id: 'n1' }], '/data', 'bj');
    expect(task.applicationCommandLine).toContain('export MPIJOB_ARRAY_INDEX=0; export MPIJOB_ARRAY_PARAM=');
    expect(task.environment.map((e) => e.name)).not.toContain('MPIJOB_ARRAY_PARAM');
    // The parameter is data: no part of it runs. (Run through the shell, the rank would print it back verbatim.)
    expect(task.applicationCommandLine).not.toMatch(/MPIJOB_ARRAY_PARAM=it's/);
  });

  it('a range gives from, from+step, … up to to', () => {
    expect(arrayValues({ range: { from: 10, to: 20, step: 5 } })).toEqual([10, 15, 20]);
    expect(arrayValues({ range: { from: 3, to: -3, step: -2 } })).toEqual([3, 1, -1, -3]);
    fc.assert(
      fc.property(fc.integer({ min: -50, max: 50 }), fc.integer({ min: -50, max: 50 }), fc.integer({ min: 1, max: 7 }), (from, to, step) => {
        const values = arrayValues({ range: { from, to, step } });
        for (const v of values) expect(Number(v) >= from && Number(v) <= to).toBe(true);
        expect(values.length).toBe(to >= from ? Math.floor((to - from) / step) + 1 : 0);
      }),
    );
  });

  it('a child that would break a limit of its own is refused with its id', () => {
    const env = Object.fromEntries(Array.from({ length: 127 }, (_, i) => [`V${i}`, 'x']));
    const out = expandArray('big', spec({ array: { parameters: ['a'] }, mpi: { ...base.mpi, env } }));
    expect(out.ok).toBe(false);
    expect(!out.ok && out.errors[0]).toMatchObject({
      path: 'mpi.env',
      message: expect.stringMatching(/^in the array's job big-0: must have at most 128 entries/),
    });
  });

  it('summarises: Queued until one starts, Running until all end, then Failed > Cancelled > Succeeded', () => {
    const s = (...states: JobState[]) => summarizeArray(states.map((st, i) => row(`c-${i}`, st))).state;
    expect(s('Queued', 'Submitted')).toBe('Queued');
    expect(s('Queued', 'Provisioning')).toBe('Running');
    expect(s('Succeeded', 'Queued')).toBe('Running');
    expect(s('Succeeded', 'Succeeded')).toBe('Succeeded');
    expect(s('Succeeded', 'Cancelled')).toBe('Cancelled');
    expect(s('Cancelled', 'Failed', 'Succeeded')).toBe('Failed');
    expect(summarizeArray([row('a', 'Succeeded'), undefined]).state).toBe('Failed');
    expect(summarizeArray([row('a', 'Succeeded'), row('b', 'Running')]).counts).toEqual({ Succeeded: 1, Running: 1 });
  });

  it('moves the array row along legal steps through Queued, Running and CleaningUp only', () => {
    expect(pathTo('Submitted', 'Queued')).toEqual(['Queued']);
    expect(pathTo('Queued', 'Succeeded')).toEqual(['Running', 'CleaningUp', 'Succeeded']);
    expect(pathTo('Queued', 'Cancelled')).toEqual(['Cancelled']);
    expect(pathTo('Running', 'Failed')).toEqual(['CleaningUp', 'Failed']);
    expect(pathTo('Running', 'Queued')).toEqual([]);
    expect(pathTo('Succeeded', 'Failed')).toEqual([]);
    for (const from of JOB_STATES) {
      for (const to of JOB_STATES) {
        const path = pathTo(from, to);
        [from, ...path].slice(0, -1).forEach((s, i) => expect(canTransition(s, path[i])).toBe(true));
        for (const mid of path.slice(0, -1)) expect(['Queued', 'Running', 'CleaningUp']).toContain(mid);
      }
    }
  });
});

describe('dependencies', () => {
  const child = spec({ dependsOn: [{ job: 'a' }, { job: 'b', condition: 'finished' }] });
  const parents = (a: JobRecord | undefined, b: JobRecord | undefined) =>
    new Map([
      ['a', a],
      ['b', b],
    ]);

  it('met once every parent reached its condition; pending lists the others', () => {
    expect(dependencyStatus(child, parents(row('a', 'Succeeded'), row('b', 'Failed')))).toEqual({ state: 'met' });
    expect(dependencyStatus(child, parents(row('a', 'Running'), row('b', 'Queued')))).toEqual({ state: 'pending', pending: ['a', 'b'] });
    expect(dependencyStatus(child, parents(row('a', 'Succeeded'), row('b', 'CleaningUp')))).toEqual({ state: 'pending', pending: ['b'] });
  });

  it('impossible, with the reason, when a parent that had to succeed did not, or is gone', () => {
    const failed = row('a', 'Failed', { error: { code: 'PipelineFailed', message: 'MPI task exited with code 3' } });
    expect(dependencyStatus(child, parents(failed, row('b', 'Running')))).toEqual({
      state: 'impossible',
      reason: 'dependency a ended Failed: MPI task exited with code 3 (this job needed it to succeed)',
    });
    expect(dependencyStatus(child, parents(row('a', 'Cancelled'), row('b', 'Running'))).state).toBe('impossible');
    expect(dependencyStatus(child, parents(undefined, row('b', 'Running')))).toEqual({ state: 'impossible', reason: 'dependency a no longer exists' });
  });

  it("intake refuses unknown parents and other owners' jobs alike, and cycles, with the path", async () => {
    const rows = new Map<string, JobRecord>([
      ['a', row('a', 'Running')],
      ['theirs', row('theirs', 'Running', { owner: 'bob' })],
      // b → c → new: submitting "new" with dependsOn b closes a cycle.
      ['b', row('b', 'Queued', { spec: spec({ dependsOn: [{ job: 'c' }] }) })],
      ['c', row('c', 'Queued', { spec: spec({ dependsOn: [{ job: 'new' }] }) })],
    ]);
    const lookup = async (id: string) => rows.get(id);
    expect(await checkDependencies('new', spec({ dependsOn: [{ job: 'a' }] }), 'alice', lookup)).toEqual([]);
    expect(await checkDependencies('new', spec({ dependsOn: [{ job: 'a' }, { job: 'nope' }, { job: 'theirs' }] }), 'alice', lookup)).toEqual([
      { path: 'dependsOn[1].job', message: 'no job nope: a job can only depend on existing jobs of its own owner' },
      { path: 'dependsOn[2].job', message: 'no job theirs: a job can only depend on existing jobs of its own owner' },
    ]);
    expect(await checkDependencies('new', spec({ dependsOn: [{ job: 'a' }, { job: 'b' }] }), 'alice', lookup)).toEqual([
      { path: 'dependsOn[1].job', message: 'job b depends (through its own dependencies) on new: a cycle' },
    ]);
  });
});

describe('demand', () => {
  it('a new pool holds its cores (from the VM size table) and a pool; a reused pool only its nodes', () => {
    expect(demandOf('j', spec())).toEqual({ family: 'standardDSv5Family', cores: 4, nodes: 2, pools: 1 });
    expect(demandOf('j', spec({ pool: { vmSize: 'Standard_HB120rs_v3', nodes: 3 } }))).toEqual({
      family: 'standardHBv3Family',
      cores: 360,
      nodes: 3,
      pools: 1,
    });
    expect(demandOf('j', spec({ pool: { poolId: 'shared', nodes: 3 } }))).toMatchObject({ cores: 0, nodes: 3, pools: 0 });
  });

  it('an unlisted size counts the vCPUs its name carries, in the unlisted family', () => {
    expect(vmSizeInfo('standard_hb120-96rs_v3')).toEqual({ cores: 120, family: 'standardHBv3Family', listed: true });
    expect(vmSizeInfo('Standard_L16s_v3')).toEqual({ cores: 16, family: 'unlistedFamily', listed: false });
    expect(vmSizeInfo('Weird')).toEqual({ cores: 1, family: 'unlistedFamily', listed: false });
  });

  it('submission order sorts by time, then by index in the array', () => {
    const keys = [submissionOrder('2030-01-01T00:00:01.000Z'), submissionOrder('2030-01-01T00:00:00.000Z', 10), submissionOrder('2030-01-01T00:00:00.000Z', 9)];
    expect([...keys].sort()).toEqual([keys[2], keys[1], keys[0]]);
  });
});
