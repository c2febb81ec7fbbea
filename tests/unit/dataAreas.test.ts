/**
 * Issue 23 part 1, the pure side: owner keys, SHARED_DATA_AREAS, the area rule over every data path of a spec, the
 * defaults intake writes into a spec, an array's per-job outputs, and the read rule of the outputs API.
 */
import fc from 'fast-check';
import { ConfigError, loadConfig, type SharedDataArea } from '../../shared/adapters/config';
import { dataOwnerKey, ownerDataArea, type DataCaller } from '../../shared/adapters/auth';
import { areaRefusal, checkDataAreas, defaultOutputsPrefix, outputsReadRefusal, withIntakeDefaults } from '../../shared/adapters/intake/dataAreas';
import { checkSubmission } from '../../shared/adapters/intake/submit';
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { expandArray } from '../../shared/core/scheduling/arrays';
import { stringify } from 'yaml';

const TID = '11111111-2222-4333-a444-555555555555';
const ALICE = `${TID}/aaaaaaaa-0000-4000-a000-000000000001`;
const BOB = `${TID}/bbbbbbbb-0000-4000-a000-000000000002`;
const alice: DataCaller = { owner: ALICE, roles: ['submitter'], admin: false };
const admin: DataCaller = { owner: 'operator', roles: ['admin'], admin: true };

const env = {
  BATCH_ACCOUNT_URL: 'http://127.0.0.1:45123',
  BATCH_ACCOUNT_NAME: 'localbatch',
  BATCH_ACCOUNT_KEY: 'a2V5a2V5a2V5',
  AzureWebJobsStorage: 'UseDevelopmentStorage=true',
  STAGING_ACCOUNTS: 'DefaultEndpointsProtocol=http;AccountName=stage1;AccountKey=a2V5MQ==;BlobEndpoint=http://127.0.0.1:10000/stage1;',
  DATA_ACCOUNTS: 'DefaultEndpointsProtocol=http;AccountName=data1;AccountKey=a2V5MQ==;BlobEndpoint=http://127.0.0.1:10000/data1;',
};

function problemsOf(extra: Record<string, string>): string[] {
  try {
    loadConfig({ ...env, ...extra });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected loadConfig to throw');
}

const SHARED: SharedDataArea[] = [
  { account: 'data1', container: 'software', prefix: '', write: false, roles: '*' },
  { account: 'data1', container: 'inputs', prefix: 'reference/', write: false, roles: ['submitter'] },
  { account: 'data1', container: 'results', prefix: 'team/', write: true, roles: ['submitter'] },
  { account: 'data1', container: 'results', prefix: 'admins-only/', write: true, roles: ['admin'] },
];

function spec(fields: Record<string, unknown>): JobSpec {
  const parsed = parseJobSpec(
    stringify({
      name: 't',
      pool: { vmSize: 'Standard_D8s_v5', nodes: 2 },
      container: { runtime: 'none' },
      mpi: { runtime: 'openmpi', processesPerNode: 1, command: 'true' },
      ...fields,
    }),
    'application/yaml',
  );
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.spec;
}

describe('owner keys', () => {
  it('are the owner id for Entra principals and the fixed owners, and nothing for any other id', () => {
    expect(dataOwnerKey(ALICE)).toBe(ALICE);
    expect(ownerDataArea(ALICE)).toBe(`users/${ALICE}/`);
    for (const fixed of ['operator', 'anonymous', 'queue']) expect(ownerDataArea(fixed)).toBe(`users/${fixed}/`);
    for (const odd of ['api', '', '../x', `${TID}/x`, `${TID.toUpperCase()}/${TID}`, 'operator/..']) expect(dataOwnerKey(odd)).toBeUndefined();
  });

  it("never make one owner's area a prefix of another's (property)", () => {
    const guid = fc.uuid().map((u) => u.toLowerCase());
    const owner = fc.oneof(
      fc.tuple(guid, guid).map(([t, o]) => `${t}/${o}`),
      fc.constantFrom('operator', 'anonymous', 'queue'),
    );
    fc.assert(
      fc.property(owner, owner, (a, b) => {
        fc.pre(a !== b);
        expect(ownerDataArea(b)!.startsWith(ownerDataArea(a)!)).toBe(false);
      }),
    );
  });
});

describe('SHARED_DATA_AREAS', () => {
  it('parses account/container/prefix with mode and roles', () => {
    const c = loadConfig({ ...env, SHARED_DATA_AREAS: ' data1/software/ , data1/results/team/|write|Jobs.Submit+Jobs.Read, data1/inputs/ref/|read|*' });
    expect(c.dataAccess.sharedAreas).toEqual([
      { account: 'data1', container: 'software', prefix: '', write: false, roles: '*' },
      { account: 'data1', container: 'results', prefix: 'team/', write: true, roles: ['submitter', 'reader'] },
      { account: 'data1', container: 'inputs', prefix: 'ref/', write: false, roles: '*' },
    ]);
    expect(c.pipeline.defaultMaxWallClockMinutes).toBe(24 * 60);
  });

  it.each([
    ['data1/software', 'must start with'],
    ['data1/software/ref', 'must be empty (the whole container) or end in "/"'],
    ['data1/software/a/../b/', '"." or ".."'],
    ['data1/results/users/x/', 'may not lie under "users/"'],
    ['other1/results/x/', 'account "other1" is not in DATA_ACCOUNTS'],
    ['data1/results/x/|rw', 'the mode must be "read" or "write"'],
    ['data1/results/x/|read|Jobs.Everything', '"Jobs.Everything" is not an app role'],
    ['data1/results/x/|read|*|more', 'more than three'],
    ['data1/results/x/,data1/results/x/', 'names an area listed before'],
  ])('refuses %s, naming the variable', (value, why) => {
    const problems = problemsOf({ SHARED_DATA_AREAS: value });
    expect(problems).toEqual([expect.stringContaining('SHARED_DATA_AREAS: entry')]);
    expect(problems[0]).toContain(why);
  });

  it('refuses a default wall clock out of range', () => {
    expect(problemsOf({ DEFAULT_MAX_WALL_CLOCK_HOURS: '0' })).toEqual([expect.stringContaining('DEFAULT_MAX_WALL_CLOCK_HOURS')]);
  });
});

describe('the area rule', () => {
  const read = (container: string, name: string) => ({ account: 'data1', container, name, access: 'read' as const });
  const write = (container: string, name: string) => ({ account: 'data1', container, name, access: 'write' as const });

  it("lets an owner read and write its own area in any container, and nobody else's", () => {
    expect(areaRefusal(alice, [], read('inputs', `users/${ALICE}/deck/`))).toBeUndefined();
    expect(areaRefusal(alice, [], write('results', `users/${ALICE}/jobs/j1/`))).toBeUndefined();
    expect(areaRefusal(alice, [], read('results', `users/${BOB}/jobs/j1/`))).toContain('outside your data area');
    expect(areaRefusal(alice, [], write('results', `users/${BOB}/jobs/j1/`))).toContain(`your data area is "users/${ALICE}/"`);
    // The bare directory name would list every name starting with it: not inside.
    expect(areaRefusal(alice, [], read('results', `users/${ALICE}`))).toBeDefined();
    expect(areaRefusal(alice, [], read('results', 'j1/'))).toBeDefined();
    expect(areaRefusal(alice, [], read('results', ''))).toContain('whole container');
  });

  it('opens shared areas by role, for writing only where the setting says so', () => {
    expect(areaRefusal(alice, SHARED, read('software', 'bin/tool'))).toBeUndefined();
    expect(areaRefusal(alice, SHARED, write('software', ''))).toContain('read-only');
    expect(areaRefusal(alice, SHARED, read('inputs', 'reference/genome/'))).toBeUndefined();
    expect(areaRefusal(alice, SHARED, write('results', 'team/run1/'))).toBeUndefined();
    expect(areaRefusal(alice, SHARED, write('results', 'admins-only/x/'))).toBeDefined();
    expect(areaRefusal({ ...alice, roles: ['reader'] }, SHARED, read('inputs', 'reference/x'))).toBeDefined();
    // An area of another account or container covers nothing here.
    expect(areaRefusal(alice, SHARED, read('results', 'reference/x'))).toBeDefined();
  });

  it('lets admins name any area', () => {
    expect(areaRefusal(admin, [], write('results', `users/${BOB}/x/`))).toBeUndefined();
    expect(areaRefusal(admin, [], read('inputs', ''))).toBeUndefined();
  });

  it('never lets a non-admin reach a name outside its own area and the shared areas its roles open (property)', () => {
    const segment = fc.stringMatching(/^[a-z0-9]{1,6}$/);
    const name = fc.array(segment, { maxLength: 4 }).map((s) => s.join('/'));
    const prefixed = fc
      .tuple(fc.constantFrom('', 'users/', `users/${ALICE}/`, `users/${BOB}/`, 'team/', 'reference/', 'admins-only/'), name)
      .map(([p, n]) => p + n);
    fc.assert(
      fc.property(fc.constantFrom('software', 'inputs', 'results'), prefixed, fc.constantFrom('read' as const, 'write' as const), (container, n, access) => {
        const allowed = areaRefusal(alice, SHARED, { account: 'data1', container, name: n, access }) === undefined;
        const own = n.startsWith(`users/${ALICE}/`);
        const shared = SHARED.some(
          (a) => a.container === container && n.startsWith(a.prefix) && (a.roles === '*' || a.roles.includes('submitter')) && (access === 'read' || a.write),
        );
        expect(allowed).toBe(own || shared);
      }),
    );
  });

  it('checks every data path of a spec, each at its field path', () => {
    const other = `users/${BOB}/`;
    const s = spec({
      data: { inputs: [{ account: 'data1', container: 'inputs', prefix: `${other}deck/` }] },
      files: [
        { account: 'data1', container: 'inputs', blob: `${other}a.txt`, path: 'a.txt' },
        { account: 'data1', container: 'inputs', prefix: other },
        { url: 'https://example.com/x.txt', path: 'x.txt' },
      ],
      pool: {
        vmSize: 'Standard_D8s_v5',
        nodes: 2,
        startTask: {
          command: 'true',
          resourceFiles: [
            { account: 'data1', container: 'software', blob: 'ok.sh', path: 'ok.sh' },
            { account: 'data1', container: 'inputs', blob: `${other}s.sh`, path: 's.sh' },
          ],
        },
      },
      outputs: { account: 'data1', container: 'results', prefix: `${other}jobs/j1`, files: [{ pattern: 'out/*' }] },
    });
    expect(checkDataAreas(s, alice, SHARED).map((e) => e.path)).toEqual([
      'data.inputs[0].prefix',
      'files[0].blob',
      'files[1].prefix',
      'pool.startTask.resourceFiles[1].blob',
      'outputs.prefix',
    ]);
    expect(checkDataAreas(s, admin, [])).toEqual([]);
  });

  it('counts a mount as its whole container and a SIF image as its blob', () => {
    const s = spec({
      container: { runtime: 'singularity', images: [{ account: 'data1', container: 'inputs', blob: `users/${BOB}/x.sif` }] },
      mounts: [
        { name: 'm', blobfuse: { account: 'data1', container: 'software', readOnly: true } },
        { name: 'w', blobfuse: { account: 'data1', container: 'software' } },
      ],
    });
    expect(checkDataAreas(s, alice, SHARED).map((e) => e.path)).toEqual(['container.images[0].blob', 'mounts[1].blobfuse.container']);
  });

  it('refuses at submission with forbidden (403) only once the spec passes every other check', () => {
    const policy = { accounts: ['data1'], stagingAccounts: [], sharedAreas: SHARED };
    const body = stringify({
      name: 't',
      pool: { vmSize: 'Standard_D8s_v5', nodes: 2 },
      container: { runtime: 'none' },
      mpi: { runtime: 'openmpi', processesPerNode: 1, command: 'true' },
      outputs: { account: 'data1', container: 'results', prefix: 'someone-elses-job' },
    });
    expect(checkSubmission({ body, contentType: 'application/yaml', dataAccess: policy, caller: alice })).toEqual({
      ok: false,
      forbidden: true,
      errors: [{ path: 'outputs.prefix', message: expect.stringContaining('outside your data area') }],
    });
    // Without a caller (an offline explain) the area rule is not applied.
    expect(checkSubmission({ body, contentType: 'application/yaml', dataAccess: policy }).ok).toBe(true);
    // A policy refusal is still a 400, reported first.
    const foreign = body.replace('account: data1', 'account: other1');
    expect(checkSubmission({ body: foreign, contentType: 'application/yaml', dataAccess: policy, caller: alice })).toMatchObject({
      ok: false,
      errors: [{ path: 'outputs.account' }],
    });
  });
});

describe('intake defaults', () => {
  it("put a job's outputs in its owner's area and give it the deployment's wall clock", () => {
    const s = spec({ outputs: { account: 'data1', container: 'results', files: [{ pattern: 'out/*' }] } });
    const d = withIntakeDefaults(s, { owner: ALICE, jobId: 'j1', defaultMaxWallClockMinutes: 24 * 60 });
    expect(d.outputs?.prefix).toBe(`users/${ALICE}/jobs/j1`);
    expect(d.limits.maxWallClock).toBe('P1D');
    expect(checkDataAreas(d, alice, [])).toEqual([]);
    expect(defaultOutputsPrefix('queue', 'q1')).toBe('users/queue/jobs/q1');
  });

  it('keep what the spec says', () => {
    const s = spec({ limits: { maxWallClock: 'PT2H' }, outputs: { account: 'data1', container: 'results', prefix: `users/${ALICE}/mine` } });
    const d = withIntakeDefaults(s, { owner: ALICE, jobId: 'j1', defaultMaxWallClockMinutes: 60 });
    expect(d.outputs?.prefix).toBe(`users/${ALICE}/mine`);
    expect(d.limits.maxWallClock).toBe('PT2H');
  });

  it('give each job of an array its own outputs directory', () => {
    const s = withIntakeDefaults(spec({ array: { range: { from: 1, to: 2 } }, outputs: { account: 'data1', container: 'results' } }), {
      owner: ALICE,
      jobId: 'arr',
      defaultMaxWallClockMinutes: 60,
    });
    const expanded = expandArray('arr', s);
    if (!expanded.ok) throw new Error(JSON.stringify(expanded.errors));
    expect(expanded.children.map((c) => c.spec.outputs?.prefix)).toEqual([`users/${ALICE}/jobs/arr-0`, `users/${ALICE}/jobs/arr-1`]);
  });
});

describe('reading outputs through the API', () => {
  const outputs = (prefix: string) => ({ account: 'data1', container: 'results', prefix });
  it("serves a prefix in the owner's area or a shared area the reader may read", () => {
    expect(outputsReadRefusal({ owner: ALICE, dataArea: `users/${ALICE}/` }, outputs(`users/${ALICE}/jobs/j1`), alice, [])).toBeUndefined();
    expect(outputsReadRefusal({ owner: ALICE, dataArea: `users/${ALICE}/` }, outputs('team/run1'), alice, SHARED)).toBeUndefined();
  });

  it('refuses a prefix outside them on a row written under the rule, even to its owner', () => {
    expect(outputsReadRefusal({ owner: ALICE, dataArea: `users/${ALICE}/` }, outputs(`users/${BOB}/jobs/j1`), alice, [])).toBeDefined();
    expect(outputsReadRefusal({ owner: ALICE, dataArea: `users/${ALICE}/` }, outputs('j1'), alice, [])).toBeDefined();
    expect(outputsReadRefusal({ owner: ALICE, dataArea: `users/${ALICE}/` }, outputs('j1'), { roles: ['admin'], admin: true }, [])).toBeUndefined();
  });

  it('keeps serving a row from before the rule its recorded prefix', () => {
    expect(outputsReadRefusal({ owner: ALICE }, outputs('j1'), alice, [])).toBeUndefined();
  });
});
