/**
 * fast-check arbitraries for job specs, shared by the spec property tests and the intake tests.
 * Test-only: imports fast-check (a devDependency) and is never imported by app code.
 *
 * validSpecInput() generates raw specs (as a client would send them) that satisfy the schema AND every
 * cross-field rule; specMutations lists ways to break exactly one field, each naming the JSON path the
 * resulting error must point at.
 */
import fc from 'fast-check';
import * as P from '../../shared/core/spec/patterns';
import { retiredVmSize } from '../../shared/core/planning/vmSizes';

type Obj = Record<string, unknown>;

const str = (re: RegExp) => fc.stringMatching(re);
const opt = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

/** Drop undefined members so generated objects look like what a client sends. */
function compact<T extends Obj>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

export const durationAtLeastMinutes = (minMinutes: number): fc.Arbitrary<string> =>
  fc.oneof(
    fc.integer({ min: minMinutes, max: 10_000 }).map((m) => `PT${m}M`),
    fc.integer({ min: Math.ceil(minMinutes / 60), max: 500 }).map((h) => `PT${h}H`),
    fc.integer({ min: Math.max(1, Math.ceil(minMinutes / 1440)), max: 60 }).map((d) => `P${d}D`),
    fc.tuple(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 0, max: 23 })).map(([d, h]) => `P${d}DT${h}H`),
  );

const ociComponent = fc
  .tuple(str(/^[a-z0-9]{1,8}$/), fc.option(fc.tuple(fc.constantFrom('.', '_', '__', '-'), str(/^[a-z0-9]{1,6}$/))))
  .map(([a, rest]) => (rest ? `${a}${rest[0]}${rest[1]}` : a));
export const ociReference: fc.Arbitrary<string> = fc
  .tuple(
    fc.option(fc.constantFrom('myregistry.azurecr.io', 'localhost:5000', 'ghcr.io', 'registry-1.docker.io')),
    fc.array(ociComponent, { minLength: 1, maxLength: 3 }),
    fc.option(str(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}$/)),
    fc.option(str(/^[a-f0-9]{64}$/)),
  )
  .map(([domain, path, tag, digest]) => `${domain ? `${domain}/` : ''}${path.join('/')}${tag ? `:${tag}` : ''}${digest ? `@sha256:${digest}` : ''}`);

const registry = fc.record({
  server: fc.constantFrom('myregistry.azurecr.io', 'localhost:5000', 'ghcr.io'),
  identity: fc.oneof(
    fc.constant('managed' as const),
    fc.record({
      secretRef: fc.oneof(
        str(P.APP_SETTING_NAME_RE),
        str(/^[a-z0-9-]{3,24}$/).map((v) => `https://${v}.vault.azure.net/secrets/acr-token`),
      ),
      username: str(P.REGISTRY_USERNAME_RE),
    }),
  ),
});

const imageRef = fc
  .record({
    publisher: str(P.IMAGE_SEGMENT_RE),
    offer: str(P.IMAGE_SEGMENT_RE),
    sku: str(P.IMAGE_SEGMENT_RE),
    version: opt(str(P.IMAGE_SEGMENT_RE)),
  })
  .map(compact);

const partialAllocation = (nodes: number) =>
  opt(
    fc.oneof(
      fc.constant({ policy: 'fail' }),
      fc.integer({ min: 1, max: nodes }).map((minNodes) => ({ policy: 'continue', minNodes })),
    ),
  );

// Leaf arbitraries are built once: building a stringMatching arbitrary is costly, and chain() would
// otherwise rebuild them for every sample.
const poolIdArb = str(P.POOL_ID_RE);
// A random name may be a retired size (NV24, H16r…), which validation refuses with its successors.
const vmSizeArb = str(P.VM_SIZE_RE).filter((v) => !retiredVmSize(v));
const nodeAgentSkuArb = str(P.NODE_AGENT_SKU_RE);
const customImageIdArb = str(/^[a-z0-9-]{1,12}$/).map(
  (n) => `/subscriptions/0000-1111/resourceGroups/rg-${n}/providers/Microsoft.Compute/galleries/g/images/${n}/versions/1.0.0`,
);
const resizeTimeoutArb = opt(durationAtLeastMinutes(5));
const poolImageArb = fc.oneof(
  fc.constant({}),
  fc.record({ image: imageRef, nodeAgentSku: nodeAgentSkuArb }),
  fc.record({ customImageId: customImageIdArb, nodeAgentSku: nodeAgentSkuArb }),
);

const startTaskArb = opt(
  fc
    .record({
      command: fc.string({ minLength: 1, maxLength: 60 }).filter((c) => P.SINGLE_LINE_TEXT_RE.test(c)),
      resourceFiles: opt(
        fc.array(
          fc.record({
            account: str(P.STORAGE_ACCOUNT_RE),
            container: fc.constantFrom('tools', 'build-inputs', 'src'),
            blob: str(/^[A-Za-z0-9_-]{1,10}(?:\/[A-Za-z0-9_.-]{1,10}){0,2}$/).filter((b) => !/(^|\/)\.\.(\/|$)/.test(b)),
            path: str(/^[A-Za-z0-9_-]{1,10}(?:\.[a-z]{1,3})?$/),
          }),
          { maxLength: 3 },
        ),
      ),
    })
    .map(compact),
);

const pool: fc.Arbitrary<{ pool: Obj; reuse: boolean }> = fc.integer({ min: 1, max: 100 }).chain((nodes) =>
  fc.oneof(
    fc
      .record({
        poolId: poolIdArb,
        nodes: fc.constant(nodes),
        resizeTimeout: resizeTimeoutArb,
        partialAllocation: partialAllocation(nodes),
        lowPriorityNodes: opt(fc.constant(0)),
      })
      .map((p) => ({ pool: compact(p), reuse: true })),
    fc
      .record({
        vmSize: vmSizeArb,
        nodes: fc.constant(nodes),
        image: poolImageArb,
        startTask: startTaskArb,
        resizeTimeout: resizeTimeoutArb,
        partialAllocation: partialAllocation(nodes),
      })
      .map(({ image, ...p }) => ({ pool: compact({ ...p, ...image }), reuse: false })),
  ),
);

const container: fc.Arbitrary<Obj | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.record({ runtime: opt(fc.constant('none')) }).map(compact),
  fc
    .record({
      runtime: fc.constantFrom('docker', 'singularity'),
      images: fc.uniqueArray(ociReference, { minLength: 1, maxLength: 4 }),
      registry: opt(registry),
      concurrency: fc.oneof(
        fc.record({ pullConcurrency: opt(fc.integer({ min: 1, max: 10 })), allowAboveTen: opt(fc.boolean()) }),
        fc.record({ pullConcurrency: fc.integer({ min: 11, max: 100 }), allowAboveTen: fc.constant(true) }),
      ),
    })
    .map(({ concurrency, ...c }) => compact({ ...c, ...compact(concurrency) })),
);

const data: fc.Arbitrary<{ data: Obj | undefined; retentionMinutes: number }> = fc
  .record({
    inputs: opt(
      fc.array(
        fc
          .record({
            account: str(P.STORAGE_ACCOUNT_RE),
            container: str(/^[a-z0-9]{1,3}(?:-[a-z0-9]{1,3}){0,3}[a-z0-9]{2}$/),
            prefix: opt(str(/^[A-Za-z0-9_=+@,-]{1,8}(?:\/[A-Za-z0-9._=+@,-]{0,8}){0,3}$/).filter((p) => !/(^|\/)\.\.(\/|$)/.test(p))),
          })
          .map(compact),
        { maxLength: 3 },
      ),
    ),
    shard: opt(fc.tuple(fc.integer({ min: 1, max: 1024 }), fc.integer({ min: 1, max: 1024 })).map(([a, b]) => ({ min: Math.min(a, b), max: Math.max(a, b) }))),
    recordBytes: opt(fc.integer({ min: 1, max: 1_048_576 })),
    stagingAccounts: opt(fc.uniqueArray(str(P.STORAGE_ACCOUNT_RE), { maxLength: 4 })),
    destination: opt(str(/^\/[A-Za-z0-9_-]{1,10}(?:\/[A-Za-z0-9_-]{1,10}){0,3}$/)),
    retentionMinutes: fc.integer({ min: 60, max: 100_000 }),
    retentionGiven: fc.boolean(),
  })
  .map(({ shard, retentionMinutes, retentionGiven, ...d }) => ({
    data: compact({ ...d, shardSizeMB: shard, retention: retentionGiven ? `PT${retentionMinutes}M` : undefined }),
    retentionMinutes: retentionGiven ? retentionMinutes : 2 * 24 * 60,
  }));

const singleLine = fc.string({ minLength: 1, maxLength: 80 }).filter((s) => P.SINGLE_LINE_TEXT_RE.test(s));

const mpi: fc.Arbitrary<Obj> = fc
  .record({
    runtime: fc.constantFrom('intelmpi', 'openmpi', 'mpich', 'mvapich'),
    processesPerNode: opt(fc.oneof(fc.integer({ min: 1, max: 1024 }), fc.constant('nproc'))),
    command: singleLine,
    options: opt(fc.array(str(P.MPI_OPTION_RE), { maxLength: 5 })),
    fabric: opt(fc.constantFrom('rdma', 'tcp', 'auto')),
    env: opt(
      fc.dictionary(
        str(/^[A-Za-z_][A-Za-z0-9_]{0,20}$/).filter((k) => P.ENV_KEY_RE.test(k)),
        fc.string({ maxLength: 30 }).filter((s) => P.SINGLE_LINE_TEXT_RE.test(s)),
        { maxKeys: 5 },
      ),
    ),
    preExecutionCommand: opt(singleLine),
    coordinationCommand: opt(singleLine),
    sshPort: opt(fc.integer({ min: 1, max: 65535 })),
  })
  .map(compact);

const limits: fc.Arbitrary<Obj | undefined> = opt(
  fc
    .record({
      maxWallClock: opt(durationAtLeastMinutes(1)),
      maxRetries: opt(fc.integer({ min: 0, max: 100 })),
      maxNodeHours: opt(fc.double({ min: 0.01, max: 1e6, noNaN: true })),
      maxCost: opt(fc.record({ amount: fc.double({ min: 0.01, max: 1e6, noNaN: true }), currency: opt(fc.constantFrom('USD', 'EUR')) }).map(compact)),
    })
    .map(compact),
);

const cleanup = (reuse: boolean, retentionMinutes: number): fc.Arbitrary<Obj | undefined> =>
  opt(
    fc
      .record({
        autoComplete: opt(fc.boolean()),
        deletePool: opt(reuse ? fc.constant('never') : fc.constantFrom('always', 'onSuccess', 'never')),
        keepStagedData: opt(
          fc.oneof(
            fc.constant(false),
            fc.integer({ min: 1, max: retentionMinutes }).map((m) => `PT${m}M`),
          ),
        ),
      })
      .map(compact),
  );

/** A raw spec (defaults not applied) that must be accepted. */
export const validSpecInput: fc.Arbitrary<Obj> = fc
  .record({
    id: opt(str(P.JOB_ID_RE)),
    name: str(P.NAME_RE),
    tags: opt(fc.dictionary(str(P.TAG_KEY_RE), str(P.TAG_VALUE_RE), { maxKeys: 6 })),
    pool,
    container,
    data,
    mpi,
    limits,
  })
  .chain(({ pool: p, data: d, ...rest }) => cleanup(p.reuse, d.retentionMinutes).map((c) => compact({ ...rest, pool: p.pool, data: d.data, cleanup: c })));

export interface SpecMutation {
  /** What is broken, for test names and failure messages. */
  name: string;
  /** The JSON path an error must point at (or below). */
  path: string;
  apply: (spec: Obj) => Obj;
}

const clone = (o: Obj): Obj => JSON.parse(JSON.stringify(o)) as Obj;
const section = (o: Obj, key: string): Obj => {
  if (typeof o[key] !== 'object' || o[key] === null) o[key] = {};
  return o[key] as Obj;
};
/** Set a field (creating its parent sections) on a copy. */
const setField =
  (keys: string[], value: unknown) =>
  (spec: Obj): Obj => {
    const out = clone(spec);
    let cur = out;
    for (const k of keys.slice(0, -1)) cur = section(cur, k);
    cur[keys[keys.length - 1]] = value;
    return out;
  };
const withDocker = (spec: Obj, images: unknown[]): Obj => {
  const out = clone(spec);
  out.container = { runtime: 'docker', images };
  return out;
};
const asNewPool = (spec: Obj): Obj => {
  const out = clone(spec);
  out.pool = { vmSize: 'Standard_HB120rs_v3', nodes: (out.pool as Obj).nodes };
  delete (out.cleanup as Obj | undefined)?.deletePool;
  return out;
};

/** Each mutation breaks exactly one field of a valid spec. */
export const specMutations: SpecMutation[] = [
  ...['bad name', 'x;rm -rf /', '', '$(id)', '`id`', 'a"b', "a'b", 'a\nb', '-leading'].map((v) => ({
    name: `name=${JSON.stringify(v)}`,
    path: 'name',
    apply: setField(['name'], v),
  })),
  {
    name: 'name missing',
    path: 'name',
    apply: (s) => {
      const o = clone(s);
      delete o.name;
      return o;
    },
  },
  { name: 'name is a number', path: 'name', apply: setField(['name'], 42) },
  ...['UPPER', '-x', 'a'.repeat(65), 'a_b', 'a b', 'a;b'].map((v) => ({ name: `id=${JSON.stringify(v)}`, path: 'id', apply: setField(['id'], v) })),
  { name: 'tag value with a space', path: 'tags', apply: setField(['tags', 'k'], 'a b') },
  { name: 'tag key with a quote', path: 'tags', apply: setField(['tags', 'k"x'], 'v') },
  ...[0, 101, 2.5, '4', -3].map((v) => ({ name: `pool.nodes=${JSON.stringify(v)}`, path: 'pool.nodes', apply: setField(['pool', 'nodes'], v) })),
  {
    name: 'pool.nodes missing',
    path: 'pool.nodes',
    apply: (s) => {
      const o = clone(s);
      delete (o.pool as Obj).nodes;
      return o;
    },
  },
  { name: 'low-priority nodes with an MPI pool', path: 'pool.lowPriorityNodes', apply: setField(['pool', 'lowPriorityNodes'], 2) },
  ...['PT4M', '5 minutes', 'P1M', 'PT', 'P1Y'].map((v) => ({
    name: `pool.resizeTimeout=${v}`,
    path: 'pool.resizeTimeout',
    apply: setField(['pool', 'resizeTimeout'], v),
  })),
  { name: 'pool id with a semicolon', path: 'pool.poolId', apply: setField(['pool', 'poolId'], 'pool;reboot') },
  {
    name: 'vmSize with a space',
    path: 'pool.vmSize',
    apply: (s) => {
      const o = asNewPool(s);
      (o.pool as Obj).vmSize = 'Standard HB';
      return o;
    },
  },
  {
    name: 'new pool without vmSize',
    path: 'pool.vmSize',
    apply: (s) => {
      const o = asNewPool(s);
      delete (o.pool as Obj).vmSize;
      return o;
    },
  },
  {
    name: 'numeric image sku (YAML gotcha)',
    path: 'pool.image.sku',
    apply: (s) => {
      const o = asNewPool(s);
      Object.assign(o.pool as Obj, { image: { publisher: 'p', offer: 'o', sku: 2204 }, nodeAgentSku: 'batch.node.ubuntu 22.04' });
      return o;
    },
  },
  {
    name: 'image without nodeAgentSku',
    path: 'pool.nodeAgentSku',
    apply: (s) => {
      const o = asNewPool(s);
      (o.pool as Obj).image = { publisher: 'p', offer: 'o', sku: 's' };
      return o;
    },
  },
  {
    name: 'partialAllocation.minNodes above nodes',
    path: 'pool.partialAllocation.minNodes',
    apply: (s) => {
      const o = clone(s);
      (o.pool as Obj).partialAllocation = { policy: 'continue', minNodes: ((o.pool as Obj).nodes as number) + 1 };
      return o;
    },
  },
  {
    name: 'startTask with a reused pool',
    path: 'pool.startTask',
    apply: (s) => {
      const o = clone(s);
      o.pool = { poolId: 'existing', nodes: 2, startTask: { command: 'make' } };
      delete (o.cleanup as Obj | undefined)?.deletePool;
      return o;
    },
  },
  {
    name: 'empty startTask command',
    path: 'pool.startTask.command',
    apply: (s) => {
      const o = asNewPool(s);
      (o.pool as Obj).startTask = { command: '' };
      return o;
    },
  },
  { name: 'recordBytes 0', path: 'data.recordBytes', apply: setField(['data', 'recordBytes'], 0) },
  { name: 'unknown pool field', path: 'pool.bogus', apply: setField(['pool', 'bogus'], 1) },
  ...['UPPER/app', 'app;rm', 'app name', 'a/$(x)', 'app:tag with space', 'app@sha256:xyz', ''].map((v) => ({
    name: `image ${JSON.stringify(v)}`,
    path: 'container.images[0]',
    apply: (s: Obj) => withDocker(s, [v]),
  })),
  { name: 'docker without images', path: 'container.images', apply: (s) => withDocker(s, []) },
  {
    name: 'runtime none with images',
    path: 'container.images',
    apply: (s) => {
      const o = clone(s);
      o.container = { runtime: 'none', images: ['app:1'] };
      return o;
    },
  },
  {
    name: 'unknown runtime',
    path: 'container.runtime',
    apply: (s) => {
      const o = clone(s);
      o.container = { runtime: 'podman', images: ['app:1'] };
      return o;
    },
  },
  {
    name: 'registry password',
    path: 'container.registry.password',
    apply: (s) => {
      const o = withDocker(s, ['r.io/app:1']);
      (o.container as Obj).registry = { server: 'r.io', identity: 'managed', password: 'hunter2' };
      return o;
    },
  },
  {
    name: 'registry secretRef that is neither a URI nor a setting name',
    path: 'container.registry.identity',
    apply: (s) => {
      const o = withDocker(s, ['r.io/app:1']);
      (o.container as Obj).registry = { server: 'r.io', identity: { secretRef: 'http://evil/x', username: 'u' } };
      return o;
    },
  },
  {
    name: 'pullConcurrency above 10 without opt-in',
    path: 'container.pullConcurrency',
    apply: (s) => {
      const o = withDocker(s, ['app:1']);
      Object.assign(o.container as Obj, { pullConcurrency: 11, allowAboveTen: false });
      return o;
    },
  },
  {
    name: 'pullConcurrency above 100',
    path: 'container.pullConcurrency',
    apply: (s) => {
      const o = withDocker(s, ['app:1']);
      Object.assign(o.container as Obj, { pullConcurrency: 101, allowAboveTen: true });
      return o;
    },
  },
  { name: 'bad input account', path: 'data.inputs[0].account', apply: setField(['data', 'inputs'], [{ account: 'Bad_Account', container: 'data' }]) },
  { name: 'bad input container', path: 'data.inputs[0].container', apply: setField(['data', 'inputs'], [{ account: 'acct1', container: 'a--b' }]) },
  {
    name: 'input prefix with ..',
    path: 'data.inputs[0].prefix',
    apply: setField(['data', 'inputs'], [{ account: 'acct1', container: 'data', prefix: 'a/../b' }]),
  },
  ...['relative/path', '/a/../b', '/a b', '/a;b', '/$HOME'].map((v) => ({
    name: `destination ${v}`,
    path: 'data.destination',
    apply: setField(['data', 'destination'], v),
  })),
  { name: 'shard min above max', path: 'data.shardSizeMB.min', apply: setField(['data', 'shardSizeMB'], { min: 200, max: 100 }) },
  { name: 'shard max above bound', path: 'data.shardSizeMB.max', apply: setField(['data', 'shardSizeMB'], { min: 80, max: 5000 }) },
  { name: 'duplicate staging account', path: 'data.stagingAccounts[1]', apply: setField(['data', 'stagingAccounts'], ['acct1', 'acct1']) },
  ...['lam', 42].map((v) => ({ name: `mpi.runtime=${v}`, path: 'mpi.runtime', apply: setField(['mpi', 'runtime'], v) })),
  ...[0, 'all', 1.5, 2000].map((v) => ({ name: `processesPerNode=${v}`, path: 'mpi.processesPerNode', apply: setField(['mpi', 'processesPerNode'], v) })),
  ...['', 'a\nb', 123, 'x'.repeat(9000)].map((v) => ({
    name: `mpi.command=${JSON.stringify(v).slice(0, 20)}`,
    path: 'mpi.command',
    apply: setField(['mpi', 'command'], v),
  })),
  { name: 'fabric infiniband', path: 'mpi.fabric', apply: setField(['mpi', 'fabric'], 'infiniband') },
  ...['a b', '$(x)', '`x`', "it's", 'a;b'].map((v) => ({ name: `mpi option ${v}`, path: 'mpi.options[0]', apply: setField(['mpi', 'options'], [v]) })),
  ...['A-B', '1X', 'AZ_BATCH_NODE_ID', 'A B', 'A;B', '$X'].map((k) => ({
    name: `env key ${k}`,
    path: 'mpi.env',
    apply: setField(['mpi', 'env'], { [k]: 'v' }),
  })),
  { name: 'env value with a newline', path: 'mpi.env.GOOD', apply: setField(['mpi', 'env'], { GOOD: 'a\nb' }) },
  { name: 'sshPort 70000', path: 'mpi.sshPort', apply: setField(['mpi', 'sshPort'], 70000) },
  {
    name: 'mpi missing',
    path: 'mpi',
    apply: (s) => {
      const o = clone(s);
      delete o.mpi;
      return o;
    },
  },
  ...['forever', 'PT30S'].map((v) => ({ name: `maxWallClock ${v}`, path: 'limits.maxWallClock', apply: setField(['limits', 'maxWallClock'], v) })),
  { name: 'maxRetries -1', path: 'limits.maxRetries', apply: setField(['limits', 'maxRetries'], -1) },
  { name: 'maxCost 0', path: 'limits.maxCost.amount', apply: setField(['limits', 'maxCost'], { amount: 0 }) },
  { name: 'deletePool sometimes', path: 'cleanup.deletePool', apply: setField(['cleanup', 'deletePool'], 'sometimes') },
  { name: 'keepStagedData true', path: 'cleanup.keepStagedData', apply: setField(['cleanup', 'keepStagedData'], true) },
  {
    name: 'keepStagedData beyond retention',
    path: 'cleanup.keepStagedData',
    apply: (s) => {
      const o = setField(['data', 'retention'], 'PT2H')(s);
      return setField(['cleanup', 'keepStagedData'], 'PT3H')(o);
    },
  },
  { name: 'unknown top-level field', path: 'priority', apply: setField(['priority'], 'high') },
];

/** True when an error path is the expected one or lies below it. */
export function pathMatches(errorPath: string, expected: string): boolean {
  return errorPath === expected || errorPath.startsWith(`${expected}.`) || errorPath.startsWith(`${expected}[`);
}
