/**
 * Pools have owners (security issue 23, part 2): the pure decision of who may run a job on an existing pool, the
 * SHARED_POOLS setting, and the pool metadata that records the submitter on both planes. No I/O.
 * On the code before owners every pool.poolId was accepted: each refusal here would have been an acceptance.
 */
import {
  callerOfJobRow,
  checkPoolAccess,
  decidePoolAccess,
  judgePool,
  notYours,
  poolCallerOf,
  queuePoolCaller,
  type PoolCaller,
  type PoolGate,
} from '../../shared/core/intake/poolAccess';
import { parseSharedPools, type SharedPool } from '../../shared/core/config/sharedPools';
import { ConfigError, loadConfig } from '../../shared/adapters/config';
import { buildPoolAddParameter, type JobPoolSpec } from '../../shared/adapters/batch/pools';
import { buildArmPool } from '../../shared/adapters/batch/armPools';
import { JOB_KEY, OWNER_KEY, OWNER_VALUE, SUBMITTER_KEY, submitterOf } from '../../shared/adapters/batch/common';
import { parseJobSpec } from '../../shared/core/spec';
import { entityToJob, jobToEntity } from '../../shared/core/state/entityCodec';
import type { JobRecord } from '../../shared/adapters/state';
import { explainJob } from '../../shared/adapters/intake/explain';
import { defaultExplainSettings } from '../../shared/adapters/intake/settings';

const ALICE = 'tid-1/alice';
const BOB = 'tid-1/bob';
const alice: PoolCaller = { owner: ALICE, admin: false, as: 'submitter' };
const bob: PoolCaller = { owner: BOB, admin: false, as: 'submitter' };
const admin: PoolCaller = { owner: 'tid-1/root', admin: true, as: 'submitter' };
const NONE: SharedPool[] = [];

describe('decidePoolAccess', () => {
  const alicesPool = { exists: true, owner: ALICE, ownedByJob: 'alice-job' };

  it('lets the submitter recorded on the pool use it, and nobody else', () => {
    expect(decidePoolAccess('hpc-alice-job', alice, alicesPool, NONE)).toEqual({ allowed: true, basis: 'owner' });
    expect(decidePoolAccess('hpc-alice-job', bob, alicesPool, NONE)).toEqual({ allowed: false, reason: notYours('hpc-alice-job') });
  });

  it('says only "not yours": never the owner or the job', () => {
    const refused = decidePoolAccess('hpc-j7', bob, alicesPool, NONE);
    expect(refused.allowed).toBe(false);
    const reason = (refused as { reason: string }).reason;
    expect(reason).not.toMatch(/alice/i);
    // The same sentence as for any other refusal (a pool nobody created, a pool from before owners).
    expect(decidePoolAccess('hpc-j7', bob, { exists: true }, NONE)).toEqual(refused);
    expect(decidePoolAccess('hpc-j7', bob, { exists: true, ownedByJob: 'alice-job', creatorJobOwner: ALICE }, NONE)).toEqual(refused);
  });

  it('judges a pool from before owners by the row of the job that created it', () => {
    const old = { exists: true, ownedByJob: 'old-job', creatorJobOwner: ALICE };
    expect(decidePoolAccess('hpc-old-job', alice, old, NONE)).toEqual({ allowed: true, basis: 'creatorJob' });
    expect(decidePoolAccess('hpc-old-job', bob, old, NONE).allowed).toBe(false);
    // The creating job's row is gone: nobody can be shown to own it.
    expect(decidePoolAccess('hpc-old-job', alice, { exists: true, ownedByJob: 'old-job' }, NONE).allowed).toBe(false);
  });

  it('never consults the job row when the pool records a submitter (the metadata decides alone)', () => {
    expect(decidePoolAccess('p', bob, { exists: true, owner: ALICE, ownedByJob: 'j', creatorJobOwner: BOB }, NONE).allowed).toBe(false);
  });

  it('refuses a pool the control plane did not create (nothing to attribute) unless shared or an admin asks', () => {
    const foreign = { exists: true };
    expect(decidePoolAccess('ops-pool', alice, foreign, NONE).allowed).toBe(false);
    expect(decidePoolAccess('ops-pool', alice, foreign, [{ poolId: 'ops-pool', users: ['submitter'] }])).toEqual({ allowed: true, basis: 'shared' });
    expect(decidePoolAccess('ops-pool', admin, foreign, NONE)).toEqual({ allowed: true, basis: 'admin' });
  });

  it("admins may use any pool, even another user's", () => {
    expect(decidePoolAccess('hpc-alice-job', admin, alicesPool, NONE)).toEqual({ allowed: true, basis: 'admin' });
  });

  it('a shared pool serves only the doors it is declared for, and its id is matched as Batch does (case-insensitive)', () => {
    const shared: SharedPool[] = [{ poolId: 'Big-Pool', users: ['queue'] }];
    const queue = queuePoolCaller('queue');
    expect(decidePoolAccess('big-pool', queue, undefined, shared)).toEqual({ allowed: true, basis: 'shared' });
    expect(decidePoolAccess('big-pool', bob, { exists: true }, shared).allowed).toBe(false);
  });

  it('lets a pool id that does not exist through (the pipeline then says it does not exist), as before owners', () => {
    expect(decidePoolAccess('nowhere', bob, { exists: false }, NONE)).toEqual({ allowed: true, basis: 'absent' });
  });
});

describe('judgePool and checkPoolAccess (the door)', () => {
  const reads: string[] = [];
  const gate = (
    caller: PoolCaller,
    pools: Record<string, { exists: boolean; owner?: string; ownedByJob?: string }>,
    rows: Record<string, string> = {},
    shared: SharedPool[] = [],
  ): PoolGate => ({
    caller,
    shared,
    lookup: {
      inspect: async (id) => {
        reads.push(`pool ${id}`);
        return pools[id] ?? { exists: false };
      },
      jobOwner: async (id) => {
        reads.push(`row ${id}`);
        return rows[id];
      },
    },
  });
  beforeEach(() => {
    reads.length = 0;
  });

  const spec = (pool: Record<string, unknown>) => {
    const parsed = parseJobSpec({ name: 'x', pool, mpi: { runtime: 'openmpi', command: 'true' } });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    return parsed.spec;
  };

  it("refuses another owner's pool with the field path pool.poolId", async () => {
    const out = await checkPoolAccess(spec({ poolId: 'hpc-a', nodes: 1 }), gate(bob, { 'hpc-a': { exists: true, owner: ALICE, ownedByJob: 'a' } }));
    expect(out).toEqual({ ok: false, errors: [{ path: 'pool.poolId', message: notYours('hpc-a') }] });
  });

  it('reads nothing for a job that creates its pool, for an admin, or for a declared shared pool', async () => {
    expect(await checkPoolAccess(spec({ vmSize: 'Standard_D2s_v5', nodes: 1 }), gate(bob, {}))).toEqual({ ok: true });
    expect(await judgePool('any', gate(admin, {}))).toEqual({ allowed: true, basis: 'admin' });
    expect(await judgePool('shared-1', gate(bob, {}, {}, [{ poolId: 'shared-1', users: ['submitter'] }]))).toEqual({ allowed: true, basis: 'shared' });
    expect(reads).toEqual([]);
  });

  it("reads the creating job's row only for a pool without a recorded submitter", async () => {
    expect(await judgePool('hpc-old', gate(alice, { 'hpc-old': { exists: true, ownedByJob: 'old' } }, { old: ALICE }))).toEqual({
      allowed: true,
      basis: 'creatorJob',
    });
    expect(reads).toEqual(['pool hpc-old', 'row old']);
    reads.length = 0;
    await judgePool('hpc-new', gate(alice, { 'hpc-new': { exists: true, owner: ALICE, ownedByJob: 'new' } }));
    expect(reads).toEqual(['pool hpc-new']);
  });
});

describe('the callers', () => {
  it('an HTTP principal is an admin only with the admin role; the queue never is', () => {
    expect(poolCallerOf({ id: ALICE, roles: ['submitter'] })).toEqual({ owner: ALICE, admin: false, as: 'submitter' });
    expect(poolCallerOf({ id: 'tid/x', roles: ['admin'] })).toEqual({ owner: 'tid/x', admin: true, as: 'submitter' });
    expect(queuePoolCaller('queue')).toEqual({ owner: 'queue', admin: false, as: 'queue' });
  });

  it('the admission check rebuilds the caller from the job row: admin only as the door recorded it', () => {
    const ids = { queue: 'queue', operator: 'operator' };
    expect(callerOfJobRow({ owner: BOB }, ids)).toEqual({ owner: BOB, admin: false, as: 'submitter' });
    expect(callerOfJobRow({ owner: BOB, poolAccess: 'admin' }, ids)).toEqual({ owner: BOB, admin: true, as: 'submitter' });
    expect(callerOfJobRow({ owner: BOB, poolAccess: 'shared' }, ids).admin).toBe(false);
    expect(callerOfJobRow({ owner: 'operator' }, ids).admin).toBe(true);
    expect(callerOfJobRow({ owner: 'queue' }, ids)).toEqual({ owner: 'queue', admin: false, as: 'queue' });
  });

  it("the job row keeps the door's basis, and drops a value it does not know (it grants nothing)", () => {
    const row: JobRecord = {
      id: 'j',
      name: 'j',
      owner: BOB,
      poolAccess: 'admin',
      tags: {},
      specHash: 'h',
      state: 'Submitted',
      stage: 'Submitted',
      progress: null,
      createdAt: 't',
      updatedAt: 't',
      eventSeq: 1,
    };
    expect(entityToJob(jobToEntity(row) as never).poolAccess).toBe('admin');
    expect(entityToJob({ ...jobToEntity(row), poolAccess: 'root' } as never).poolAccess).toBeUndefined();
  });
});

describe('SHARED_POOLS', () => {
  const parse = (text: string) => {
    const problems: string[] = [];
    return { pools: parseSharedPools(text, problems), problems };
  };

  it('reads pool ids with the doors that may use them (both when none is named)', () => {
    expect(parse(' big , cfd=queue, gpu=submitter|queue ')).toEqual({
      pools: [
        { poolId: 'big', users: ['submitter', 'queue'] },
        { poolId: 'cfd', users: ['queue'] },
        { poolId: 'gpu', users: ['submitter', 'queue'] },
      ],
      problems: [],
    });
    expect(parse('')).toEqual({ pools: [], problems: [] });
  });

  it('names the variable and the entry for each mistake', () => {
    expect(parse('ok,,bad id,x=admin,dup,DUP,a=b=c,*').problems).toEqual([
      'SHARED_POOLS: entry 2 is empty',
      'SHARED_POOLS: entry 3: "bad id" is not a Batch pool id (letters, digits, "_", "-", up to 64)',
      'SHARED_POOLS: entry 4: "admin" is not one of submitter, queue (admins may use any pool and need no entry)',
      'SHARED_POOLS: entry 6: pool "DUP" is listed twice',
      'SHARED_POOLS: entry 7 ("a=b=c") has more than one "="; write <pool id>=<who>|<who>',
      'SHARED_POOLS: entry 8: "*" is not a Batch pool id (letters, digits, "_", "-", up to 64)',
    ]);
  });

  it('is read by loadConfig, and a bad value stops the app with the variable named', () => {
    const env = {
      BATCH_ACCOUNT_URL: 'https://acct.westeurope.batch.azure.com',
      BATCH_ACCOUNT_NAME: 'acct',
      AzureWebJobsStorage: 'UseDevelopmentStorage=true',
      STAGING_ACCOUNTS: 'stage1',
    };
    expect(loadConfig({ ...env, SHARED_POOLS: 'team-pool' }).sharedPools).toEqual([{ poolId: 'team-pool', users: ['submitter', 'queue'] }]);
    expect(loadConfig(env).sharedPools).toEqual([]);
    expect(() => loadConfig({ ...env, SHARED_POOLS: 'team-pool=everyone' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...env, SHARED_POOLS: 'team-pool=everyone' })).toThrow(/SHARED_POOLS: entry 1/);
  });
});

describe('the pool records its submitter (both planes)', () => {
  const spec: JobPoolSpec = {
    poolId: 'hpc-j1',
    jobId: 'j1',
    owner: ALICE,
    vmSize: 'Standard_D2s_v5',
    targetDedicatedNodes: 1,
    image: { publisher: 'p', offer: 'o', sku: 's' },
    nodeAgentSkuId: 'batch.node.ubuntu 22.04',
  };
  const expected = [
    { name: OWNER_KEY, value: OWNER_VALUE },
    { name: JOB_KEY, value: 'j1' },
    { name: SUBMITTER_KEY, value: ALICE },
  ];

  it("in Pool_Add and in the management plane's pool", () => {
    expect(buildPoolAddParameter(spec).metadata).toEqual(expected);
    expect(buildArmPool(spec, '/subscriptions/x/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id').metadata).toEqual(expected);
  });

  it('is read back only from a pool this control plane created', () => {
    expect(submitterOf(expected)).toBe(ALICE);
    expect(submitterOf([{ name: SUBMITTER_KEY, value: ALICE }])).toBeUndefined();
  });
});

describe('the dry run shows the owner and the rule', () => {
  const settings = defaultExplainSettings((what) => `<deployment: ${what}>`);
  const parse = (pool: Record<string, unknown>) => {
    const parsed = parseJobSpec({ name: 'x', pool, mpi: { runtime: 'openmpi', command: 'true' } });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    return parsed.spec;
  };

  it('a pool the job creates carries the submitter (a placeholder when it is not known, as offline)', () => {
    const spec = parse({ vmSize: 'Standard_D2s_v5', nodes: 1 });
    const known = explainJob({ jobId: 'j1', jobIdFrom: 'spec.id', spec, settings, policiesChecked: true, owner: ALICE });
    expect(known.pool.request?.metadata).toContainEqual({ name: SUBMITTER_KEY, value: ALICE });
    const offline = explainJob({ jobId: 'j1', jobIdFrom: 'spec.id', spec, settings, policiesChecked: false });
    expect(offline.pool.request?.metadata).toContainEqual({ name: SUBMITTER_KEY, value: "<run-time: the submitter's owner id>" });
  });

  it('a reused pool lists the ownership rule among its checks', () => {
    const doc = explainJob({ jobId: 'j2', jobIdFrom: 'spec.id', spec: parse({ poolId: 'p', nodes: 1 }), settings, policiesChecked: true });
    expect(doc.pool.reuseChecks[0]).toMatch(/submitter's own .*SHARED_POOLS.*admin/);
  });
});
