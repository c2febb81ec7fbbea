/** The pure part of Azure's facts (shared/core/planning/azureFacts.ts): matching a pool, suggestions, quota arithmetic. */
import fc from 'fast-check';
import {
  checkPoolFacts,
  editDistance,
  effectiveCoreQuota,
  imageFromInfo,
  nearest,
  offlineFacts,
  quotaFromAccount,
  sizeFromSku,
  type AzureFacts,
} from '../../shared/core/planning/azureFacts';

const FACTS: AzureFacts = {
  source: 'account',
  location: 'westeurope',
  sizes: [
    { name: 'Standard_HB120rs_v3', family: 'standardHBv3Family', vCPUs: 120 },
    { name: 'Standard_HB176rs_v4', family: 'standardHBv4Family', vCPUs: 176 },
    { name: 'Standard_HC44rs', family: 'standardHCSFamily', vCPUs: 44 },
    { name: 'Standard_D8s_v5', family: 'standardDSv5Family', vCPUs: 8 },
    { name: 'Standard_ND96asr_v4', family: 'Standard NDASv4_A100 Family', vCPUs: 96, gpus: 8 },
  ],
  images: [
    { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204', nodeAgentSku: 'batch.node.ubuntu 22.04' },
    { publisher: 'almalinux', offer: 'almalinux-hpc', sku: '8_7-hpc-gen2', nodeAgentSku: 'batch.node.el 8' },
    { publisher: 'microsoftwindowsserver', offer: 'windowsserver', sku: '2022-datacenter', nodeAgentSku: 'batch.node.windows amd64' },
  ],
};
const UBUNTU = { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204' };

describe('checkPoolFacts', () => {
  test('a known size and a matching image and agent pass, case-insensitively', () => {
    expect(
      checkPoolFacts(FACTS, {
        vmSize: 'standard_hb120rs_v3',
        image: { publisher: 'Microsoft-DSVM', offer: 'Ubuntu-HPC', sku: '2204' },
        nodeAgentSku: 'batch.node.ubuntu 22.04',
      }),
    ).toEqual([]);
  });

  test('an unknown size is refused at pool.vmSize with the nearest sizes', () => {
    const [issue] = checkPoolFacts(FACTS, { vmSize: 'Standard_HB120rs_v9', image: UBUNTU, nodeAgentSku: 'batch.node.ubuntu 22.04' });
    expect(issue.path).toEqual(['pool', 'vmSize']);
    expect(issue.message).toMatch(/not a VM size the Batch account offers in westeurope; did you mean Standard_HB120rs_v3/);
  });

  test('Standard_Bogus9 gets three suggestions from the region', () => {
    const [issue] = checkPoolFacts(FACTS, { vmSize: 'Standard_Bogus9' });
    expect(issue.message).toMatch(/did you mean Standard_\w+, Standard_\w+, Standard_\w+\?$/);
  });

  test('an unsupported image is refused at pool.image with the nearest images and their agents', () => {
    const [issue] = checkPoolFacts(FACTS, {
      vmSize: 'Standard_D8s_v5',
      image: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2404' },
      nodeAgentSku: 'batch.node.ubuntu 24.04',
    });
    expect(issue).toEqual({
      path: ['pool', 'image'],
      message: expect.stringContaining('did you mean microsoft-dsvm:ubuntu-hpc:2204 (batch.node.ubuntu 22.04)'),
    });
  });

  test('an image with another agent is refused at pool.nodeAgentSku naming the right one', () => {
    expect(checkPoolFacts(FACTS, { vmSize: 'Standard_D8s_v5', image: UBUNTU, nodeAgentSku: 'batch.node.windows amd64' })).toEqual([
      {
        path: ['pool', 'nodeAgentSku'],
        message: 'the image microsoft-dsvm:ubuntu-hpc:2204 needs the node agent SKU batch.node.ubuntu 22.04, not "batch.node.windows amd64"',
      },
    ]);
  });

  test('a custom image is checked only for a known agent', () => {
    expect(checkPoolFacts(FACTS, { vmSize: 'Standard_D8s_v5', customImageId: '/subscriptions/x/img', nodeAgentSku: 'batch.node.el 8' })).toEqual([]);
    expect(checkPoolFacts(FACTS, { vmSize: 'Standard_D8s_v5', customImageId: '/subscriptions/x/img', nodeAgentSku: 'batch.node.el 9' })[0]).toMatchObject({
      path: ['pool', 'nodeAgentSku'],
      message: expect.stringContaining('did you mean batch.node.el 8'),
    });
  });

  test('a reused pool, offline facts and unknown parts refuse nothing', () => {
    expect(checkPoolFacts(FACTS, { poolId: 'shared', vmSize: 'Standard_Bogus9' })).toEqual([]);
    expect(checkPoolFacts(offlineFacts(), { vmSize: 'Standard_Bogus9', image: { publisher: 'p', offer: 'o', sku: 's' }, nodeAgentSku: 'x' })).toEqual([]);
    expect(checkPoolFacts({ source: 'account' }, { vmSize: 'Standard_Bogus9', image: { publisher: 'p', offer: 'o', sku: 's' }, nodeAgentSku: 'x' })).toEqual(
      [],
    );
  });

  test('property: a size in the facts is never refused; a refused size never suggests itself', () => {
    const names = FACTS.sizes!.map((s) => s.name);
    fc.assert(
      fc.property(fc.constantFrom(...names), fc.boolean(), (name, upper) => {
        expect(checkPoolFacts(FACTS, { vmSize: upper ? name.toUpperCase() : name.toLowerCase() })).toEqual([]);
      }),
    );
    fc.assert(
      fc.property(fc.stringMatching(/^Standard_[A-Za-z]{1,3}[0-9]{1,3}[a-z]{0,3}(_v[0-9])?$/), (name) => {
        const issues = checkPoolFacts(FACTS, { vmSize: name });
        if (names.some((n) => n.toLowerCase() === name.toLowerCase())) return expect(issues).toEqual([]);
        expect(issues).toHaveLength(1);
        const suggested = /did you mean (.*)\?$/.exec(issues[0].message)![1].split(', ');
        expect(suggested.length).toBe(3);
        for (const s of suggested) expect(names).toContain(s);
      }),
    );
  });
});

describe('suggestions', () => {
  test('edit distance is a metric on examples', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 }), (a, b, c) => {
        expect(editDistance(a, a)).toBe(0);
        expect(editDistance(a, b)).toBe(editDistance(b, a));
        expect(editDistance(a, c)).toBeLessThanOrEqual(editDistance(a, b) + editDistance(b, c));
      }),
    );
  });

  test('nearest prefers the closest name, then the same series, and is deterministic', () => {
    expect(nearest('Standard_HB120rs_v2', ['Standard_D8s_v5', 'Standard_HB120rs_v3', 'Standard_HB176rs_v4'], 1)).toEqual(['Standard_HB120rs_v3']);
    expect(nearest('Standard_HC44r', ['Standard_HC44rs', 'Standard_D8s_v5'], 2)).toEqual(['Standard_HC44rs', 'Standard_D8s_v5']);
    fc.assert(
      fc.property(
        fc.string({ maxLength: 20 }),
        fc.shuffledSubarray(
          FACTS.sizes!.map((s) => s.name),
          { minLength: 1 },
        ),
        (w, names) => {
          expect(nearest(w, names)).toEqual(nearest(w, [...names].reverse()));
        },
      ),
    );
  });
});

describe('API shapes', () => {
  test('a virtualMachineSkus entry becomes a size (capability values are strings)', () => {
    expect(
      sizeFromSku({
        name: 'Standard_HB120rs_v3',
        familyName: 'standardHBv3Family',
        capabilities: [
          { name: 'vCPUs', value: '120' },
          { name: 'MemoryGB', value: '448' },
          { name: 'GPUs', value: '0' },
          { name: 'RdmaEnabled', value: 'True' },
        ],
      }),
    ).toEqual({ name: 'Standard_HB120rs_v3', family: 'standardHBv3Family', vCPUs: 120, memoryGiB: 448, gpus: 0, rdma: true });
    expect(sizeFromSku({})).toBeUndefined();
  });

  test('a supported image becomes a fact; a gallery image without publisher does not', () => {
    expect(
      imageFromInfo({
        nodeAgentSKUId: 'batch.node.el 8',
        osType: 'linux',
        imageReference: { publisher: 'almalinux', offer: 'almalinux-hpc', sku: '8_7-hpc-gen2' },
        batchSupportEndOfLife: new Date('2025-04-30T00:00:00Z'),
      }),
    ).toEqual({
      publisher: 'almalinux',
      offer: 'almalinux-hpc',
      sku: '8_7-hpc-gen2',
      nodeAgentSku: 'batch.node.el 8',
      osType: 'linux',
      endOfLife: '2025-04-30T00:00:00.000Z',
    });
    expect(imageFromInfo({ nodeAgentSKUId: 'x', imageReference: {} })).toBeUndefined();
  });

  test('an account becomes its quota', () => {
    expect(
      quotaFromAccount({
        dedicatedCoreQuota: 900,
        lowPriorityCoreQuota: 100,
        dedicatedCoreQuotaPerVMFamily: [{ name: 'standardHBv3Family', coreQuota: 240 }, { name: 'x' }],
        dedicatedCoreQuotaPerVMFamilyEnforced: true,
        poolQuota: 100,
        activeJobAndJobScheduleQuota: 300,
      }),
    ).toEqual({ dedicatedCores: 900, lowPriorityCores: 100, families: { standardHBv3Family: 240 }, familiesEnforced: true, pools: 100, activeJobs: 300 });
  });
});

describe('effectiveCoreQuota', () => {
  const live = quotaFromAccount({
    dedicatedCoreQuota: 900,
    dedicatedCoreQuotaPerVMFamily: [
      { name: 'standardHBv3Family', coreQuota: 480 },
      { name: 'standardDSv5Family', coreQuota: 100 },
    ],
    dedicatedCoreQuotaPerVMFamilyEnforced: true,
  });

  test("the account's quota, lowered where the deployment names less", () => {
    expect(effectiveCoreQuota(live, { total: 600, families: { standardHBv3Family: 960, standardDSv5Family: 10 } })).toEqual({
      total: 600,
      families: { standardHBv3Family: 480, standardDSv5Family: 10 },
    });
  });

  test('without the account: the setting alone; without the setting: the account', () => {
    expect(effectiveCoreQuota(undefined, { families: { a: 1 } })).toEqual({ total: undefined, families: { a: 1 } });
    expect(effectiveCoreQuota(live, undefined)).toEqual({ total: 900, families: { standardHBv3Family: 480, standardDSv5Family: 100 } });
  });

  test('per-family quotas the account does not enforce are not kept', () => {
    expect(effectiveCoreQuota({ ...live, familiesEnforced: false }, undefined)).toEqual({ total: 900, families: {} });
  });

  test('property: never above either source', () => {
    const q = fc.option(fc.nat(2000), { nil: undefined });
    fc.assert(
      fc.property(
        q,
        q,
        fc.dictionary(fc.constantFrom('a', 'b', 'c'), fc.nat(2000)),
        fc.dictionary(fc.constantFrom('a', 'b', 'c'), fc.nat(2000)),
        (lt, ct, lf, cf) => {
          const out = effectiveCoreQuota({ dedicatedCores: lt, families: lf, familiesEnforced: true }, { total: ct, families: cf });
          if (lt !== undefined) expect(out.total).toBeLessThanOrEqual(lt);
          if (ct !== undefined) expect(out.total).toBeLessThanOrEqual(ct);
          for (const [k, v] of Object.entries(out.families)) {
            if (lf[k] !== undefined) expect(v).toBeLessThanOrEqual(lf[k]);
            if (cf[k] !== undefined) expect(v).toBeLessThanOrEqual(cf[k]);
          }
        },
      ),
    );
  });
});
