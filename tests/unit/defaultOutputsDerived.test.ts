/**
 * Full logs by default (issue 27, item 5): a deployment that does not set DEFAULT_OUTPUTS still keeps every task's
 * full stdout/stderr, in a place derived from what it lets jobs use (shared/core/config/defaultOutputs.ts); only
 * DEFAULT_OUTPUTS=none or no data account at all keeps nothing. On the old code an unset DEFAULT_OUTPUTS kept nothing.
 */
import { loadConfig } from '../../shared/adapters/config';
import { parseDefaultOutputs } from '../../shared/core/config/defaultOutputs';
import { localAppSettings } from '../../local/stack';

const base = {
  BATCH_ACCOUNT_URL: 'http://127.0.0.1:45123',
  BATCH_ACCOUNT_NAME: 'localbatch',
  BATCH_ACCOUNT_KEY: 'a2V5a2V5a2V5',
  AzureWebJobsStorage: 'UseDevelopmentStorage=true',
  STAGING_ACCOUNTS: 'devstoreaccount1',
};

function derive(d: Parameters<typeof parseDefaultOutputs>[1], text?: string) {
  const problems: string[] = [];
  const value = parseDefaultOutputs(text, d, problems);
  return { value, problems };
}

describe('DEFAULT_OUTPUTS unset: derived', () => {
  it("is the first data account's results container when nothing narrows it", () => {
    expect(loadConfig({ ...base, DATA_ACCOUNTS: 'datasa1,datasa2' }).dataAccess.defaultOutputs).toEqual({ account: 'datasa1', container: 'results' });
  });

  it('follows DATA_CONTAINERS: results when allowed (also through a prefix), else the first container named in full', () => {
    expect(derive({ accounts: ['datasa1'], containers: [{ account: 'datasa1', container: 'res*' }] }).value).toEqual({
      account: 'datasa1',
      container: 'results',
    });
    expect(
      derive({
        accounts: ['datasa1'],
        containers: [
          { account: 'datasa1', container: 'proj-*' },
          { account: 'datasa1', container: 'joblogs' },
        ],
      }).value,
    ).toEqual({ account: 'datasa1', container: 'joblogs' });
  });

  it('is a configuration problem, not silently no logs, when DATA_CONTAINERS names no container of the account in full', () => {
    const r = derive({ accounts: ['datasa1'], containers: [{ account: 'datasa1', container: 'proj-*' }] });
    expect(r.value).toBeUndefined();
    expect(r.problems.join('\n')).toMatch(/DEFAULT_OUTPUTS: unset, and DATA_CONTAINERS allows no container of "datasa1" by name.*DEFAULT_OUTPUTS=none/);
  });

  it('takes an HNS account when outputs need a scoped SAS, and says so when there is none', () => {
    expect(derive({ accounts: ['flat1', 'hns1'], hnsAccounts: ['hns1'], outputsRequireScopedSas: true }).value).toEqual({
      account: 'hns1',
      container: 'results',
    });
    expect(derive({ accounts: ['flat1', 'hns1'], hnsAccounts: ['hns1'], outputsRequireScopedSas: true }, 'flat1/results').problems.join('\n')).toMatch(
      /"flat1" is not in DATA_ACCOUNTS_HNS/,
    );
    expect(derive({ accounts: ['flat1'], outputsRequireScopedSas: true }).problems.join('\n')).toMatch(/OUTPUTS_REQUIRE_SCOPED_SAS leaves no data account/);
  });

  it('keeps nothing for DEFAULT_OUTPUTS=none or a deployment without data accounts', () => {
    expect(loadConfig({ ...base, DATA_ACCOUNTS: 'datasa1', DEFAULT_OUTPUTS: 'none' }).dataAccess.defaultOutputs).toBeUndefined();
    expect(loadConfig(base).dataAccess.defaultOutputs).toBeUndefined();
    expect(derive({ accounts: [] }, undefined)).toEqual({ value: undefined, problems: [] });
  });

  it("is set by the local stack to the data account's results container", () => {
    const fake = {
      blobEndpoint: (a?: string) => `http://127.0.0.1:1/${a ?? 'devstoreaccount1'}`,
      queueEndpoint: () => '',
      tableEndpoint: () => '',
      connectionString: (a?: string) => `c-${a ?? ''}`,
      keyless: false,
    };
    const settings = localAppSettings(fake as never, { url: 'http://127.0.0.1:2', accountName: 'localbatch', accountKey: 'k' } as never);
    expect(settings.DEFAULT_OUTPUTS).toBe('data1/results');
  });
});
