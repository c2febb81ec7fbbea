/**
 * Placement over several Batch accounts (shared/core/planning/placement.ts) and its use by the admission pass
 * (shared/core/scheduling/admission.ts with `limits.accounts`), property-tested with a seeded fast-check: never an account
 * without the quota free, deterministic, ties broken in the documented order; and the BATCH_ACCOUNTS setting
 * (shared/core/config/batchAccounts.ts).
 */
import fc from 'fast-check';
import {
  EMPTY_LOAD,
  neverFitsAnyAccount,
  placeJob,
  quotaBlock,
  type AccountLoad,
  type PlacementAccount,
  type PlacementJob,
} from '../../shared/core/planning/placement';
import { decideAdmission, loadsOf, type AdmissionLimits, type Reservation, type WaitingJob } from '../../shared/core/scheduling/admission';
import { loadConfig, ConfigError } from '../../shared/adapters/config';

const SEED = { seed: 20261127, numRuns: 300 };
const FAMILIES = ['fa', 'fb'];

const accountArb: fc.Arbitrary<Omit<PlacementAccount, 'name'>> = fc.record(
  {
    coreQuota: fc.record({
      total: fc.option(fc.integer({ min: 0, max: 64 }), { nil: undefined }),
      families: fc.dictionary(fc.constantFrom(...FAMILIES), fc.integer({ min: 0, max: 64 })),
    }),
    lowPriorityCores: fc.option(fc.integer({ min: 0, max: 32 }), { nil: undefined }),
    stagingAccounts: fc.subarray(['s1', 's2']),
    prices: fc.option(fc.record({ standard_x: fc.integer({ min: 1, max: 5 }) }), { nil: undefined }),
  },
  { requiredKeys: ['coreQuota'] },
);

const accountsArb = fc.array(accountArb, { minLength: 1, maxLength: 4 }).map((as) => as.map((a, i) => ({ ...a, name: `acc${i}` }) as PlacementAccount));

const loadArb: fc.Arbitrary<AccountLoad> = fc
  .record({
    fa: fc.integer({ min: 0, max: 40 }),
    fb: fc.integer({ min: 0, max: 40 }),
    lp: fc.integer({ min: 0, max: 16 }),
    jobs: fc.integer({ min: 0, max: 5 }),
  })
  .map((l) => ({
    familyCores: new Map([
      ['fa', l.fa],
      ['fb', l.fb],
    ]),
    totalCores: l.fa + l.fb,
    lowPriorityCores: l.lp,
    jobs: l.jobs,
  }));

const jobArb: fc.Arbitrary<PlacementJob> = fc.record(
  {
    family: fc.constantFrom(...FAMILIES),
    cores: fc.integer({ min: 1, max: 48 }),
    nodes: fc.integer({ min: 1, max: 4 }),
    vmSize: fc.constant('Standard_X'),
    spotCores: fc.option(fc.integer({ min: 1, max: 16 }), { nil: undefined }),
    stagingAccounts: fc.subarray(['s1', 's2']),
    maxCost: fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }),
    hours: fc.option(fc.integer({ min: 1, max: 10 }), { nil: undefined }),
  },
  { requiredKeys: ['family', 'cores', 'nodes'] },
);

describe('placeJob (pure)', () => {
  it('never picks an account whose quota the job does not fit now; waits only when none fits', () => {
    fc.assert(
      fc.property(accountsArb, fc.array(loadArb, { minLength: 4, maxLength: 4 }), jobArb, (accounts, ls, job) => {
        const loads = new Map(accounts.map((a, i) => [a.name, ls[i]]));
        const p = placeJob(accounts, loads, job);
        const fitting = accounts.filter((a) => quotaBlock(a, loads.get(a.name) ?? EMPTY_LOAD, job) === undefined);
        if (p.account === undefined) {
          expect(fitting).toEqual([]);
          expect(p.reason).toMatch(/no Batch account has the quota free now/);
        } else {
          expect(fitting.map((a) => a.name)).toContain(p.account);
          const acc = accounts.find((a) => a.name === p.account)!;
          const load = loads.get(acc.name)!;
          const fam = acc.coreQuota.families[job.family];
          if (fam !== undefined) expect((load.familyCores.get(job.family) ?? 0) + job.cores).toBeLessThanOrEqual(fam);
          if (acc.coreQuota.total !== undefined) expect(load.totalCores + job.cores).toBeLessThanOrEqual(acc.coreQuota.total);
        }
      }),
      SEED,
    );
  });

  it('is deterministic and does not depend on the order of the loads map', () => {
    fc.assert(
      fc.property(accountsArb, fc.array(loadArb, { minLength: 4, maxLength: 4 }), jobArb, (accounts, ls, job) => {
        const loads = new Map(accounts.map((a, i) => [a.name, ls[i]]));
        const reversed = new Map([...loads].reverse());
        expect(placeJob(accounts, reversed, job)).toEqual(placeJob(accounts, loads, job));
      }),
      SEED,
    );
  });

  it('among equal accounts takes the first in BATCH_ACCOUNTS order (the documented last tie-breaker)', () => {
    fc.assert(
      fc.property(accountArb, fc.integer({ min: 2, max: 5 }), jobArb, (acc, n, job) => {
        const accounts = Array.from({ length: n }, (_, i) => ({ ...acc, name: `acc${i}` }));
        const p = placeJob(accounts, new Map(), job);
        const fits = quotaBlock(accounts[0], EMPTY_LOAD, job) === undefined;
        expect(p.account).toBe(fits ? 'acc0' : undefined);
      }),
      SEED,
    );
  });

  const open = (name: string, extra: Partial<PlacementAccount> = {}): PlacementAccount => ({ name, coreQuota: { total: 100, families: {} }, ...extra });
  const job: PlacementJob = { family: 'fa', cores: 8, nodes: 2, vmSize: 'Standard_X' };
  const busy = (jobs: number): AccountLoad => ({ ...EMPTY_LOAD, jobs });

  it('goes where the quota is free: A full, B free', () => {
    const p = placeJob([open('a', { coreQuota: { total: 4, families: {} } }), open('b')], new Map(), job);
    expect(p.account).toBe('b');
    expect(p.reason).toMatch(/^placed on b: quota free \(100 cores free\)/);
    expect(p.reason).toContain('a: account cores: 0 of 4 in use, the job needs 8');
  });

  it('ranks by budget, then Spot, then queue length, then price, then staging locality, then order', () => {
    const priced = (name: string, price: number, extra: Partial<PlacementAccount> = {}) => open(name, { prices: { standard_x: price }, ...extra });
    // Budget: 2 nodes × 10 h × 3 = 60 > 50; the dearer account is over it although it has fewer jobs.
    expect(placeJob([priced('a', 3), priced('b', 2)], new Map([['b', busy(3)]]), { ...job, maxCost: 50, hours: 10 }).account).toBe('b');
    // Spot free beats queue length.
    expect(
      placeJob([open('a', { lowPriorityCores: 0 }), open('b', { lowPriorityCores: 16 })], new Map([['b', busy(2)]]), { ...job, spotCores: 8 }).account,
    ).toBe('b');
    // Queue length beats price.
    expect(placeJob([priced('a', 1), priced('b', 9)], new Map([['a', busy(1)]]), job).account).toBe('b');
    // Price: lower first, unknown last.
    expect(placeJob([open('a'), priced('b', 9), priced('c', 2)], new Map(), job).account).toBe('c');
    // Staging locality breaks a tie of price.
    expect(placeJob([priced('a', 2), priced('b', 2, { stagingAccounts: ['s1'] })], new Map(), { ...job, stagingAccounts: ['s1'] }).account).toBe('b');
    // All equal: the first.
    expect(placeJob([open('a'), open('b')], new Map(), job).account).toBe('a');
  });

  it('refuses a job no account could ever hold, and only then', () => {
    expect(neverFitsAnyAccount([open('a', { coreQuota: { total: 4, families: {} } }), open('b', { coreQuota: { families: { fa: 6 } } })], job)).toMatch(
      /no Batch account can ever hold them \(a: its dedicated core quota is 4; b: its quota for fa is 6\)/,
    );
    expect(neverFitsAnyAccount([open('a', { coreQuota: { total: 4, families: {} } }), open('b')], job)).toBeUndefined();
  });
});

describe('admission over several accounts', () => {
  const waiting = (id: string, cores: number, order: string): WaitingJob => ({
    jobId: id,
    owner: 'o',
    queue: 'default',
    priority: 0,
    order,
    jumpedBy: 0,
    family: 'fa',
    cores,
    nodes: 1,
    pools: 1,
  });
  const limits = (accounts: PlacementAccount[]): AdmissionLimits => ({
    queues: [{ name: 'default', priority: 0 }],
    coreQuota: { total: 0, families: {} },
    backfillLimit: 4,
    accounts,
  });
  const reservation = (id: string, account: string, cores: number): Reservation => ({
    jobId: id,
    owner: 'o',
    queue: 'default',
    family: 'fa',
    cores,
    nodes: 1,
    pools: 1,
    grantedAt: '2026-01-01T00:00:00Z',
    grant: 1,
    acked: true,
    account,
  });

  it('places each admitted job on an account with room, filling one then the next, and never over-commits one', () => {
    const accounts = [
      { name: 'a', coreQuota: { total: 16, families: {} } },
      { name: 'b', coreQuota: { total: 16, families: {} } },
    ];
    const d = decideAdmission(limits(accounts), [], [waiting('j1', 16, '1'), waiting('j2', 16, '2'), waiting('j3', 16, '3')]);
    expect(d.admit.map((j) => j.jobId)).toEqual(['j1', 'j2']);
    expect(d.placed.j1.account).toBe('a');
    expect(d.placed.j2.account).toBe('b');
    expect(d.waiting.j3).toMatch(/no Batch account has the quota free now: a: .*; b: /);
  });

  it('a waiting job goes to whichever account frees up (it is placed again at every pass)', () => {
    const accounts = [
      { name: 'a', coreQuota: { total: 16, families: {} } },
      { name: 'b', coreQuota: { total: 16, families: {} } },
    ];
    const held = [reservation('r1', 'a', 16), reservation('r2', 'b', 16)];
    expect(decideAdmission(limits(accounts), held, [waiting('j', 8, '1')]).admit).toEqual([]);
    const d = decideAdmission(limits(accounts), [held[0]], [waiting('j', 8, '1')]);
    expect(d.placed.j.account).toBe('b');
  });

  it('the core quota of the single-account limits is not used with accounts (each account has its own)', () => {
    const d = decideAdmission(limits([{ name: 'a', coreQuota: { total: 32, families: {} } }]), [], [waiting('j', 8, '1')]);
    expect(d.placed.j.account).toBe('a');
  });

  it('refuses a job that fits no account even empty', () => {
    const d = decideAdmission(
      limits([
        { name: 'a', coreQuota: { total: 4, families: {} } },
        { name: 'b', coreQuota: { total: 4, families: {} } },
      ]),
      [],
      [waiting('j', 8, '1')],
    );
    expect(d.refuse).toEqual([{ jobId: 'j', reason: expect.stringMatching(/no Batch account can ever hold them/) }]);
  });

  it('a job on an existing pool stays on the home account', () => {
    const d = decideAdmission(
      limits([
        { name: 'home', coreQuota: { total: 0, families: {} } },
        { name: 'b', coreQuota: { total: 99, families: {} } },
      ]),
      [],
      [{ ...waiting('j', 0, '1'), pools: 0 }],
    );
    expect(d.placed.j.account).toBe('home');
  });

  it('property: no pass ever puts more cores on an account than its quota', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 3 }),
        fc.array(fc.integer({ min: 1, max: 24 }), { minLength: 1, maxLength: 12 }),
        (quotas, sizes) => {
          const accounts = quotas.map((q, i) => ({ name: `acc${i}`, coreQuota: { total: q, families: {} } }));
          const jobs = sizes.map((c, i) => waiting(`j${i}`, c, String(i).padStart(3, '0')));
          const d = decideAdmission(limits(accounts), [], jobs);
          const granted: Reservation[] = d.admit.map((j) => ({ ...reservation(j.jobId, d.placed[j.jobId].account, j.cores) }));
          const loads = loadsOf(accounts, granted);
          for (const a of accounts) expect(loads.get(a.name)?.totalCores ?? 0).toBeLessThanOrEqual(a.coreQuota.total);
          expect(decideAdmission(limits(accounts), [], jobs)).toEqual(d);
        },
      ),
      SEED,
    );
  });
});

describe('BATCH_ACCOUNTS', () => {
  const base = {
    BATCH_ACCOUNT_URL: 'https://hpcweu.westeurope.batch.azure.com',
    BATCH_ACCOUNT_NAME: 'hpcweu',
    AzureWebJobsStorage: 'UseDevelopmentStorage=true',
    STAGING_ACCOUNTS: 'stageweu,stageneu',
  };
  const problems = (env: Record<string, string>): string[] => {
    try {
      loadConfig({ ...base, ...env });
      return [];
    } catch (err) {
      if (err instanceof ConfigError) return err.problems;
      throw err;
    }
  };

  it('without it the home account is a list of one (region from the URL)', () => {
    expect(loadConfig(base).batchAccounts).toEqual([
      {
        name: 'hpcweu',
        accountUrl: 'https://hpcweu.westeurope.batch.azure.com',
        auth: { kind: 'aad', scope: 'https://batch.core.windows.net//.default' },
        location: 'westeurope',
        stagingAccounts: [],
      },
    ]);
  });

  it('lists every account, the home account first, with ARM place, price region, cap and nearby staging', () => {
    const cfg = loadConfig({
      ...base,
      BATCH_ACCOUNTS: JSON.stringify([
        {
          name: 'hpcneu',
          url: 'https://hpcneu.northeurope.batch.azure.com',
          resourceId: '/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-neu/providers/Microsoft.Batch/batchAccounts/hpcneu',
          priceRegion: 'northeurope',
          coreQuota: { total: 200, standardHBv3Family: 120 },
          stagingAccounts: ['stageneu'],
        },
        { name: 'hpcweu', url: 'https://hpcweu.westeurope.batch.azure.com' },
      ]),
    });
    expect(cfg.batchAccounts.map((a) => a.name)).toEqual(['hpcweu', 'hpcneu']);
    expect(cfg.batchAccounts[1]).toMatchObject({
      location: 'northeurope',
      priceRegion: 'northeurope',
      arm: { subscriptionId: '00000000-0000-0000-0000-000000000001', resourceGroup: 'rg-neu' },
      coreQuota: { total: 200, families: { standardHBv3Family: 120 } },
      stagingAccounts: ['stageneu'],
    });
  });

  it('refuses what is wrong, naming the entry and field', () => {
    expect(problems({ BATCH_ACCOUNTS: 'nope' })).toEqual([expect.stringMatching(/^BATCH_ACCOUNTS: not JSON/)]);
    expect(problems({ BATCH_ACCOUNTS: '[]' })).toEqual([expect.stringMatching(/^BATCH_ACCOUNTS: must be a JSON list of 1 to 50/)]);
    expect(
      problems({
        BATCH_ACCOUNTS: JSON.stringify([
          { name: 'hpcweu', url: base.BATCH_ACCOUNT_URL },
          { name: 'B!', url: 'ftp://x', extra: 1 },
        ]),
      }),
    ).toEqual([expect.stringMatching(/^BATCH_ACCOUNTS\[1\]: .*name: must be 3-24 lowercase.*url: must be an http\(s\) URL/)]);
    expect(problems({ BATCH_ACCOUNTS: JSON.stringify([{ name: 'other', url: 'https://other.westeurope.batch.azure.com' }]) })).toEqual([
      'BATCH_ACCOUNTS: must list the account BATCH_ACCOUNT_NAME names ("hpcweu"): it is the home account',
    ]);
    expect(
      problems({
        BATCH_ACCOUNTS: JSON.stringify([
          { name: 'hpcweu', url: base.BATCH_ACCOUNT_URL },
          { name: 'hpcweu', url: 'https://x.westeurope.batch.azure.com' },
        ]),
      }),
    ).toContain('BATCH_ACCOUNTS: account "hpcweu" is listed twice');
    expect(
      problems({
        BATCH_ACCOUNTS: JSON.stringify([
          { name: 'hpcweu', url: base.BATCH_ACCOUNT_URL },
          { name: 'two', url: 'https://two.westeurope.batch.azure.com', stagingAccounts: ['nowhere'], keySetting: 'TWO_KEY' },
        ]),
      }),
    ).toEqual([
      'BATCH_ACCOUNTS[1].stagingAccounts: "nowhere" is not one of STAGING_ACCOUNTS (stageweu, stageneu)',
      'BATCH_ACCOUNTS[1].keySetting: app setting TWO_KEY is not set',
    ]);
    expect(
      problems({
        BATCH_ACCOUNTS: JSON.stringify([
          { name: 'hpcweu', url: base.BATCH_ACCOUNT_URL },
          {
            name: 'two',
            url: 'https://two.westeurope.batch.azure.com',
            resourceId: '/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Batch/batchAccounts/three',
          },
        ]),
      }),
    ).toEqual(['BATCH_ACCOUNTS[1].resourceId: names the account "three", not "two"']);
  });
});
