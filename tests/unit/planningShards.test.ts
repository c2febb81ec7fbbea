import fc from 'fast-check';
import {
  DEFAULT_MAX_SHARD_BYTES,
  DEFAULT_MIN_SHARD_BYTES,
  ListedBlob,
  MB,
  ShardPlan,
  buildNodeManifests,
  planShards,
  stagingProgress,
  withShardUrls,
} from '../../shared/core/planning/shards';
import { PlanningError } from '../../shared/core/planning/errors';

const key = (b: { account: string; container: string; name: string }): string => `${b.account}/${b.container}/${b.name}`;

/** Independent oracle: every byte of every listed file appears in exactly one part, and parts are consistent. */
function assertCoversExactlyOnce(listing: readonly ListedBlob[], plan: ShardPlan, recordAlignment: number): void {
  const sizes = new Map(listing.map((b) => [key(b), b.size]));
  const ranges = new Map<string, [number, number][]>();
  for (const s of plan.shards) {
    let at = 0;
    for (const p of s.parts) {
      const k = key(p.source);
      expect(sizes.has(k)).toBe(true);
      expect(p.shardOffset).toBe(at);
      at += p.length;
      const size = sizes.get(k) as number;
      // Cuts fall on record boundaries, except a file's own end.
      expect(p.offset % recordAlignment).toBe(0);
      if (p.offset + p.length !== size) expect((p.offset + p.length) % recordAlignment).toBe(0);
      const list = ranges.get(k) ?? [];
      list.push([p.offset, p.length]);
      ranges.set(k, list);
    }
    expect(at).toBe(s.bytes);
  }
  for (const [k, size] of sizes) {
    const list = (ranges.get(k) ?? []).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    expect(list.length).toBeGreaterThan(0); // even empty files are recorded
    let next = 0;
    for (const [offset, length] of list) {
      expect(offset).toBe(next); // no gap, no overlap
      next = offset + length;
    }
    expect(next).toBe(size);
  }
  expect(plan.totalBytes).toBe(listing.reduce((s, b) => s + b.size, 0));
}

const sizeArb = fc.oneof(
  { arbitrary: fc.integer({ min: 0, max: 5 * MB }), weight: 3 },
  { arbitrary: fc.integer({ min: 5 * MB, max: 120 * MB }), weight: 3 },
  { arbitrary: fc.integer({ min: 120 * MB, max: 900 * MB }), weight: 2 },
);

const blobArb = fc.record({
  account: fc.constantFrom('srca', 'srcb'),
  container: fc.constantFrom('in', 'data'),
  name: fc.string({ minLength: 1, maxLength: 12 }),
  size: sizeArb,
});

const listingArb = (minLength: number, maxLength: number) => fc.uniqueArray(blobArb, { minLength, maxLength, selector: key });

const accountsArb = fc.uniqueArray(fc.stringMatching(/^st[a-z0-9]{1,6}$/), { minLength: 1, maxLength: 6 });
const alignArb = fc.constantFrom(1, 512, 4096, 1_000_000, 20 * MB);

describe('planShards properties', () => {
  it('keeps every shard but the last within [80 MB, 100 MB] and covers every input byte exactly once', () => {
    fc.assert(
      fc.property(listingArb(0, 40), accountsArb, fc.integer({ min: 1, max: 9 }), alignArb, (listing, accounts, nodes, align) => {
        const plan = planShards(listing, { stagingAccounts: accounts, nodes, recordAlignment: align });
        plan.shards.forEach((s, i) => {
          expect(s.index).toBe(i);
          expect(s.bytes).toBeLessThanOrEqual(DEFAULT_MAX_SHARD_BYTES);
          if (i < plan.shards.length - 1) expect(s.bytes).toBeGreaterThanOrEqual(DEFAULT_MIN_SHARD_BYTES);
        });
        assertCoversExactlyOnce(listing, plan, align);
      }),
      { numRuns: 150 },
    );
  });

  it('balances bytes across accounts within 1.1 when there are at least 10 shards per account', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }).chain((k) => fc.tuple(fc.constant(k), listingArb(7 * k, 12 * k + 10), fc.integer({ min: 1, max: 40 }), alignArb)),
        ([k, listing, nodes, align]) => {
          const accounts = Array.from({ length: k }, (_, i) => `stage${i}`);
          const plan = planShards(listing, { stagingAccounts: accounts, nodes, recordAlignment: align });
          // Listings of 7k..12k+10 files give about 10..20 shards per account: near the bound, where it is tight.
          fc.pre(plan.shards.length >= 10 * k);
          const loads = Object.values(plan.byAccount);
          expect(loads).toHaveLength(k);
          expect(Math.max(...loads) / Math.min(...loads)).toBeLessThanOrEqual(1.1);
          // byAccount agrees with the shards themselves.
          const recount: Record<string, number> = {};
          for (const s of plan.shards) recount[s.account] = (recount[s.account] ?? 0) + s.bytes;
          for (const a of accounts) expect(plan.byAccount[a]).toBe(recount[a] ?? 0);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('is deterministic: the same listing in any order (and accounts in any order) gives the same plan', () => {
    const arb = fc
      .tuple(listingArb(0, 30), accountsArb)
      .chain(([listing, accounts]) =>
        fc.tuple(
          fc.constant(listing),
          fc.shuffledSubarray(listing, { minLength: listing.length, maxLength: listing.length }),
          fc.constant(accounts),
          fc.shuffledSubarray(accounts, { minLength: accounts.length, maxLength: accounts.length }),
          fc.integer({ min: 1, max: 6 }),
        ),
      );
    fc.assert(
      fc.property(arb, ([listing, shuffled, accounts, shuffledAccounts, nodes]) => {
        const a = planShards(listing, { stagingAccounts: accounts, nodes });
        const b = planShards(shuffled, { stagingAccounts: shuffledAccounts, nodes });
        expect(JSON.stringify(b)).toBe(JSON.stringify(a));
      }),
      { numRuns: 100 },
    );
  });

  it('gives every node a contiguous run of shards, counts differing by at most one', () => {
    fc.assert(
      fc.property(listingArb(0, 40), fc.integer({ min: 1, max: 12 }), (listing, nodes) => {
        const plan = planShards(listing, { stagingAccounts: ['s1', 's2'], nodes });
        expect(Object.keys(plan.byNode)).toHaveLength(nodes);
        const flattened = Array.from({ length: nodes }, (_, n) => plan.byNode[String(n)]).flat();
        expect(flattened).toEqual(plan.shards.map((s) => s.id)); // contiguous and in order, each shard once
        const counts = Object.values(plan.byNode).map((ids) => ids.length);
        expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
        for (const s of plan.shards) expect(plan.byNode[String(s.node)]).toContain(s.id);
      }),
      { numRuns: 100 },
    );
  });

  it('builds node manifests that list exactly the shards of each node, with reassembly information', () => {
    fc.assert(
      fc.property(listingArb(0, 25), fc.integer({ min: 1, max: 5 }), (listing, nodes) => {
        const plan = planShards(listing, { stagingAccounts: ['s1', 's2', 's3'], nodes, container: 'job-7' });
        const manifests = buildNodeManifests(plan);
        expect(manifests).toHaveLength(nodes);
        for (const m of manifests) {
          expect(m.planDigest).toBe(plan.digest);
          expect(m.shards.map((e) => e.shardId)).toEqual(plan.byNode[String(m.node)]);
          expect(m.bytes).toBe(m.shards.reduce((s, e) => s + e.bytes, 0));
          for (const e of m.shards) expect(e.blobPath).toBe(`${e.account}/job-7/${e.blobName}`);
        }
        expect(manifests.reduce((s, m) => s + m.bytes, 0)).toBe(plan.totalBytes);
        expect(JSON.parse(JSON.stringify(manifests))).toEqual(manifests); // JSON-serializable as is
      }),
      { numRuns: 60 },
    );
  });
});

describe('planShards examples', () => {
  const opts = { stagingAccounts: ['a', 'b'], nodes: 2 };

  it('plans nothing for an empty listing', () => {
    const plan = planShards([], opts);
    expect(plan.shards).toEqual([]);
    expect(plan.byAccount).toEqual({ a: 0, b: 0 });
    expect(plan.byNode).toEqual({ '0': [], '1': [] });
    expect(plan.totalBytes).toBe(0);
  });

  it('splits a 250 MB file into three even shards and alternates accounts', () => {
    const plan = planShards([{ account: 'src', container: 'c', name: 'big.bin', size: 250 * MB }], opts);
    expect(plan.shards.map((s) => s.bytes)).toEqual([83_333_334, 83_333_334, 83_333_332]);
    expect(plan.shards.map((s) => s.parts[0].offset)).toEqual([0, 83_333_334, 166_666_668]);
    expect(plan.shards.map((s) => s.account)).toEqual(['a', 'b', 'a']);
    expect(plan.byAccount).toEqual({ a: 166_666_666, b: 83_333_334 });
  });

  it('cuts large files only at record boundaries', () => {
    const record = 3 * 1024 * 1024; // 3 MiB records
    const plan = planShards([{ account: 'src', container: 'c', name: 'recs', size: 100 * record }], {
      ...opts,
      recordAlignment: record,
    });
    for (const s of plan.shards) for (const p of s.parts) expect(p.offset % record).toBe(0);
    // Capacity is raised to minBytes + one record (an even quarter would be under 80 MB), so 26 records per shard.
    expect(plan.shards.map((s) => s.bytes / record)).toEqual([26, 26, 26, 22]);
  });

  it('packs small files whole into shared shards', () => {
    const listing = Array.from({ length: 1000 }, (_, i) => ({ account: 'src', container: 'c', name: `f${String(i).padStart(4, '0')}`, size: MB }));
    const plan = planShards(listing, opts);
    expect(plan.shards).toHaveLength(10);
    for (const s of plan.shards) {
      expect(s.parts).toHaveLength(100);
      for (const p of s.parts) expect([p.offset, p.length]).toEqual([0, MB]);
    }
  });

  it('keeps small files whole while they fit and cuts only the file that crosses a shard boundary', () => {
    const plan = planShards(
      ['a', 'b', 'c'].map((name) => ({ account: 'src', container: 'c', name, size: 60 * MB })),
      opts,
    );
    expect(plan.shards.map((s) => s.parts.map((p) => [p.source.name, p.offset, p.length]))).toEqual([
      [
        ['a', 0, 60 * MB],
        ['b', 0, 30 * MB],
      ],
      [
        ['b', 30 * MB, 30 * MB],
        ['c', 0, 60 * MB],
      ],
    ]);
  });

  it('does not leave a tiny last shard that would unbalance the accounts', () => {
    // 1,900 MB + 1 byte: filling to 100 MB gives 19 full shards and a 1-byte tail, which no assignment can split
    // better than 1,000 / 900 MB (1.11). Even shares give 20 shards of 95 MB.
    const plan = planShards([{ account: 'src', container: 'c', name: 'x', size: 1900 * MB + 1 }], opts);
    expect(plan.shards).toHaveLength(20);
    const loads = Object.values(plan.byAccount);
    expect(Math.max(...loads) / Math.min(...loads)).toBeLessThanOrEqual(1.001);
  });

  it('just over one shard of data gives a minimum-size shard and a short last one', () => {
    // Two even halves would both be under 80 MB, so the first shard takes the minimum (+1 for the cut rule).
    const two = planShards([{ account: 'src', container: 'c', name: 'x', size: 100 * MB + 1 }], opts);
    expect(two.shards.map((s) => s.bytes)).toEqual([80 * MB + 1, 20 * MB]);
  });

  it('keeps empty files (so nodes can recreate them) without staging an empty blob after data', () => {
    const plan = planShards(
      [
        { account: 'src', container: 'c', name: 'a', size: 10 },
        { account: 'src', container: 'c', name: 'z-empty', size: 0 },
      ],
      opts,
    );
    expect(plan.shards).toHaveLength(1);
    expect(plan.shards[0].parts.map((p) => [p.source.name, p.length, p.shardOffset])).toEqual([
      ['a', 10, 0],
      ['z-empty', 0, 10],
    ]);
  });

  it('carries source ETags into the parts (for If-Match on copy)', () => {
    const plan = planShards([{ account: 'src', container: 'c', name: 'a', size: 10, etag: '"0x8D"' }], opts);
    expect(plan.shards[0].parts[0].etag).toBe('"0x8D"');
  });

  it('spreads blob names over hash prefixes', () => {
    const listing = [{ account: 'src', container: 'c', name: 'huge', size: 4000 * 100 * MB }];
    const plan = planShards(listing, { stagingAccounts: ['a'], nodes: 1, namePrefix: 'job42/' });
    const names = plan.shards.map((s) => s.blobName);
    expect(new Set(names).size).toBe(names.length);
    expect(names[0]).toMatch(/^[0-9a-f]{4}\/job42\/shard-000000$/);
    const firstChar = new Map<string, number>();
    for (const n of names) firstChar.set(n[0], (firstChar.get(n[0]) ?? 0) + 1);
    expect(firstChar.size).toBe(16);
    for (const count of firstChar.values()) expect(Math.abs(count - 250)).toBeLessThan(90);
    // Neighbouring shards must not share prefixes either (they are written at the same time).
    const neighbours = names.slice(0, 64).map((n) => n.slice(0, 2));
    expect(new Set(neighbours).size).toBeGreaterThan(40);
  });

  it('rejects bad input with the offending value', () => {
    const dup = { account: 'src', container: 'c', name: 'x', size: 1 };
    expect(() => planShards([dup, { ...dup }], opts)).toThrow(/names blob src\/c\/x twice/);
    expect(() => planShards([{ ...dup, size: -1 }], opts)).toThrow(PlanningError);
    expect(() => planShards([{ ...dup, size: 1.5 }], opts)).toThrow(/invalid size/);
    expect(() => planShards([], { stagingAccounts: [], nodes: 1 })).toThrow(/staging account/);
    expect(() => planShards([], { stagingAccounts: ['a'], nodes: 0 })).toThrow(/nodes/);
    expect(() => planShards([], { stagingAccounts: ['a'], nodes: 1, recordAlignment: 21 * MB })).toThrow(/recordAlignment/);
    expect(() => planShards([], { stagingAccounts: ['a'], nodes: 1, minBytes: 10, maxBytes: 5 })).toThrow(/minBytes/);
  });
});

describe('manifests and staging progress', () => {
  const listing = Array.from({ length: 5 }, (_, i) => ({ account: 'src', container: 'c', name: `f${i}`, size: 60 * MB }));
  const plan = planShards(listing, { stagingAccounts: ['a', 'b'], nodes: 2 });

  it('fills shard URLs and refuses a manifest with a missing URL', () => {
    const [m0] = buildNodeManifests(plan);
    const urls = Object.fromEntries(m0.shards.map((e) => [e.shardId, `https://${e.account}.blob/x/${e.blobName}?sig=1`]));
    expect(withShardUrls(m0, urls).shards.every((e) => e.url?.startsWith('https://'))).toBe(true);
    expect(() => withShardUrls(m0, {})).toThrow(new RegExp(`no URL for shard ${m0.shards[0].shardId} of node 0`));
  });

  it('reports which shards a re-run still has to copy', () => {
    const ids = plan.shards.map((s) => s.id);
    expect(plan.shards.map((s) => s.bytes)).toEqual([100 * MB, 100 * MB, 100 * MB]);
    const none = stagingProgress(plan, []);
    expect(none.pendingShardIds).toEqual(ids);
    expect(none.doneBytes).toBe(0);
    const some = stagingProgress(plan, [ids[2], ids[0], ids[0], 'shard-999999']);
    expect(some.pendingShardIds).toEqual([ids[1]]);
    expect(some.doneShards).toBe(2);
    expect(some.doneBytes).toBe(plan.shards[0].bytes + plan.shards[2].bytes);
    expect(some.unknownIds).toEqual(['shard-999999']);
    expect(stagingProgress(plan, ids).pendingShardIds).toEqual([]);
  });
});

describe('planning before the pool exists (overlapped staging)', () => {
  it('the shards do not depend on the node count: a pool of fewer nodes re-slots the same shards, each read by one node', () => {
    fc.assert(
      fc.property(listingArb(1, 30), accountsArb, fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 100 }), (listing, accounts, planned, actual) => {
        const opts = {
          stagingAccounts: accounts,
          minBytes: DEFAULT_MIN_SHARD_BYTES,
          maxBytes: DEFAULT_MAX_SHARD_BYTES,
          recordAlignment: 1,
          container: 'c',
          namePrefix: '',
        };
        const early = planShards(listing, { ...opts, nodes: planned });
        const later = planShards(listing, { ...opts, nodes: actual });
        const strip = (p: ShardPlan) => p.shards.map(({ node: _node, ...rest }) => rest);
        expect(strip(later)).toEqual(strip(early));
        const read = buildNodeManifests(later).flatMap((m) => m.shards.map((s) => s.shardId));
        expect(read.sort()).toEqual(early.shards.map((s) => s.id).sort());
      }),
      { numRuns: 60 },
    );
  });
});
