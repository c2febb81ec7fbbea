/**
 * The facts over several Batch accounts (pure parts): a pool is valid when one account offers it, placement never
 * picks an account whose region lacks the size, the cost's price region is the placed account's, and the explain
 * document says how old the facts are and whose they are.
 */
import { checkPoolFactsOnAny, factsSummary, type AzureFacts } from '../../shared/core/planning/azureFacts';
import { EMPTY_LOAD, neverFitsAnyAccount, placeJob, type PlacementAccount, type PlacementJob } from '../../shared/core/planning/placement';
import { priceRegionOf } from '../../shared/core/config/batchAccounts';

const size = (name: string) => ({ name, family: 'standardHBv3Family', vCPUs: 120 });
const home: AzureFacts = {
  source: 'account',
  account: 'home',
  location: 'westeurope',
  sizes: [size('Standard_D4s_v5')],
  fetchedAt: { sizes: '2026-11-27T10:00:00.000Z' },
};
const second: AzureFacts = {
  source: 'account',
  account: 'second',
  location: 'eastus',
  sizes: [size('Standard_HB120rs_v3')],
  fetchedAt: { sizes: '2026-11-27T09:00:00.000Z' },
};

describe('facts of several accounts', () => {
  it('accepts a size only the second account offers, and says whose facts it passed', () => {
    const r = checkPoolFactsOnAny([home, second], { vmSize: 'Standard_HB120rs_v3' });
    expect(r.issues).toEqual([]);
    expect(r.offeredBy?.account).toBe('second');
    // The old check looked at the home account alone and refused it.
    expect(checkPoolFactsOnAny([home], { vmSize: 'Standard_HB120rs_v3' }).issues).toHaveLength(1);
  });

  it("refuses a size no account offers, with the home account's suggestions and the others named", () => {
    const r = checkPoolFactsOnAny([home, second], { vmSize: 'Standard_Bogus9' });
    expect(r.issues).toEqual([
      {
        path: ['pool', 'vmSize'],
        message: expect.stringMatching(/not a VM size the Batch account offers in westeurope.*No other Batch account of the deployment \(second \(eastus\)\)/),
      },
    ]);
  });

  it('places a job only where its size is offered, and never when no account offers it', () => {
    const acc = (name: string, sizes?: string[]): PlacementAccount => ({
      name,
      coreQuota: { total: 1000, families: {} },
      region: name,
      ...(sizes ? { vmSizes: new Set(sizes.map((s) => s.toLowerCase())) } : {}),
    });
    const job: PlacementJob = { family: 'standardHBv3Family', cores: 240, nodes: 2, vmSize: 'Standard_HB120rs_v3' };
    const placed = placeJob([acc('home', ['Standard_D4s_v5']), acc('second', ['Standard_HB120rs_v3'])], new Map([['home', EMPTY_LOAD]]), job);
    expect(placed.account).toBe('second');
    expect(placed.verdicts[0]).toMatchObject({ account: 'home', blocked: 'Standard_HB120rs_v3 is not offered in home' });
    // Unknown sizes (no facts) block nothing: the home account wins the tie as before.
    expect(placeJob([acc('home'), acc('second', ['Standard_HB120rs_v3'])], new Map(), job).account).toBe('home');
    expect(neverFitsAnyAccount([acc('home', ['Standard_D4s_v5']), acc('second', [])], job)).toMatch(
      /home: Standard_HB120rs_v3 is not offered in home; second: Standard_HB120rs_v3 is not offered/,
    );
  });

  it("prices a job in its placed account's region", () => {
    expect(priceRegionOf({ location: 'westeurope' }, true, 'northeurope')).toBe('northeurope');
    expect(priceRegionOf({ location: 'eastus' }, false, 'northeurope')).toBe('eastus');
    expect(priceRegionOf({ location: 'eastus', priceRegion: 'eastus2' }, false, 'northeurope')).toBe('eastus2');
    expect(priceRegionOf({}, false, 'northeurope')).toBe('northeurope');
  });

  it("gives the facts' account and age in the explain document", () => {
    const s = factsSummary(second, 'Standard_HB120rs_v3', Date.parse('2026-11-27T09:05:00.000Z'));
    expect(s).toMatchObject({
      account: 'second',
      location: 'eastus',
      readAt: { sizes: '2026-11-27T09:00:00.000Z', images: null },
      ageSeconds: { sizes: 300, images: null, quota: null },
    });
    expect(factsSummary(second, undefined).ageSeconds).toEqual({ images: null, sizes: null, quota: null });
  });
});
