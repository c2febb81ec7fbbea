/**
 * Issue 23, item 1, the last gap: a node's outputs SAS covers exactly the job's outputs prefix. On a data account
 * declared hierarchical (DATA_ACCOUNTS_HNS) it is a directory SAS (sr=d, sdd = the prefix's depth, sp=cw); on a flat
 * one the container create/write SAS stays, and OUTPUTS_REQUIRE_SCOPED_SAS refuses outputs there at intake. Pure: the
 * blob service is a stand-in that hands out a fixed user delegation key, so the signature is checked against the
 * string-to-sign the Azure Storage docs give ("Create a user delegation SAS", version 2025-07-05 and later),
 * rebuilt here field by field rather than through the SDK that produced it. The upload itself with such a SAS cannot
 * run here: Azurite has no hierarchical namespace and does not know sr=d (tests/security/outputSas.test.ts shows it
 * refusing one).
 */
import { createHmac } from 'node:crypto';
import type { BlobServiceClient, UserDelegationKey } from '@azure/storage-blob';
import { ConfigError, loadConfig } from '../../shared/adapters/config';
import { directorySasUrl, sasDirectory, SAS_VERSION } from '../../shared/adapters/storage/sas';
import type { BlobAccount } from '../../shared/adapters/storage/clients';
import { checkDataAccess, outputsSasScope, type DataAccessPolicy } from '../../shared/core/intake/dataAccess';
import { mintWorkloadUrls, type WorkloadUrlDeps } from '../../orchestrations/activities/workloadData';
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';

const KEY: UserDelegationKey = {
  signedObjectId: '6f2c1d2e-0000-4000-a000-00000000000a',
  signedTenantId: '11111111-2222-4333-a444-555555555555',
  signedStartsOn: new Date('2026-11-27T10:00:00Z'),
  signedExpiresOn: new Date('2026-11-28T10:00:00Z'),
  signedService: 'b',
  signedVersion: SAS_VERSION,
  value: Buffer.from('a user delegation key of thirty-two+ bytes').toString('base64'),
};

/** A managed-identity account whose service only answers what the SAS code asks: its URLs and the delegation key. */
function stubAccount(calls: string[] = []): BlobAccount {
  const service = {
    getContainerClient: (container: string) => ({
      url: `https://data1.blob.core.windows.net/${container}`,
      createIfNotExists: async () => {
        calls.push(`create ${container}`);
      },
    }),
    getUserDelegationKey: async () => KEY,
  };
  return { name: 'data1', service: service as unknown as BlobServiceClient };
}

const iso = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

describe('directory SAS on the outputs prefix', () => {
  const prefix = 'users/11111111-2222-4333-a444-555555555555/6f2c1d2e-0000-4000-a000-00000000000b/jobs/run-7';
  const expiresOn = new Date('2026-11-27T18:00:00Z');

  test('is sr=d with sdd = the prefix depth and create/write only, on the container URL', async () => {
    const url = new URL(await directorySasUrl(stubAccount(), 'results', prefix, 'cw', expiresOn));
    // Batch appends "/<path>" to this URL; every path of the pipeline starts with the prefix.
    expect(`${url.origin}${url.pathname}`).toBe('https://data1.blob.core.windows.net/results');
    const q = url.searchParams;
    expect(q.get('sr')).toBe('d');
    expect(q.get('sdd')).toBe('5');
    expect(q.get('sp')).toBe('cw');
    expect(q.get('sv')).toBe(SAS_VERSION);
    expect(q.get('spr')).toBe('https');
    expect(q.get('se')).toBe('2026-11-27T18:00:00Z');
    expect(q.get('skoid')).toBe(KEY.signedObjectId);
  });

  test('is signed over the documented user delegation string-to-sign, with the directory as the resource', async () => {
    const q = new URL(await directorySasUrl(stubAccount(), 'results', prefix, 'cw', expiresOn)).searchParams;
    const stringToSign = [
      'cw', // signedPermissions
      q.get('st'), // signedStart
      '2026-11-27T18:00:00Z', // signedExpiry
      `/blob/data1/results/${prefix}`, // canonicalizedResource: the directory, not the container
      KEY.signedObjectId,
      KEY.signedTenantId,
      iso(KEY.signedStartsOn),
      iso(KEY.signedExpiresOn),
      'b',
      SAS_VERSION,
      '',
      '',
      '', // signedAuthorizedUserObjectId, signedUnauthorizedUserObjectId, signedCorrelationId
      '',
      '', // signedKeyDelegatedUserTenantId, signedDelegatedUserObjectId (2025-07-05)
      '', // signedIP
      'https', // signedProtocol
      SAS_VERSION, // signedVersion
      'd', // signedResource
      '',
      '', // signedSnapshotTime, signedEncryptionScope
      '',
      '',
      '',
      '',
      '', // rscc, rscd, rsce, rscl, rsct
    ].join('\n');
    const expected = createHmac('sha256', Buffer.from(KEY.value, 'base64')).update(stringToSign, 'utf8').digest('base64');
    expect(q.get('sig')).toBe(expected);
  });

  test('the depth counts the path segments; an empty prefix or a dot segment is refused', () => {
    expect(sasDirectory('a')).toEqual({ directory: 'a', depth: 1 });
    expect(sasDirectory('users/t/o/jobs/x/')).toEqual({ directory: 'users/t/o/jobs/x', depth: 5 });
    expect(() => sasDirectory('')).toThrow(/non-empty prefix/);
    expect(() => sasDirectory('/')).toThrow(/non-empty prefix/);
    expect(() => sasDirectory('users/../x')).toThrow(/"\.\." segment/);
  });
});

describe('DATA_ACCOUNTS_HNS and OUTPUTS_REQUIRE_SCOPED_SAS', () => {
  const env = {
    BATCH_ACCOUNT_URL: 'http://127.0.0.1:45123',
    BATCH_ACCOUNT_NAME: 'localbatch',
    BATCH_ACCOUNT_KEY: 'a2V5a2V5a2V5',
    AzureWebJobsStorage: 'UseDevelopmentStorage=true',
    STAGING_ACCOUNTS: 'DefaultEndpointsProtocol=http;AccountName=stage1;AccountKey=a2V5MQ==;BlobEndpoint=http://127.0.0.1:10000/stage1;',
    DATA_ACCOUNTS: 'data1,data2',
  };
  const problemsOf = (extra: Record<string, string>): string[] => {
    try {
      loadConfig({ ...env, ...extra });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as ConfigError).problems;
    }
    throw new Error('expected loadConfig to throw');
  };

  test('default: no HNS account, container SAS allowed', () => {
    const c = loadConfig(env);
    expect(c.dataAccess.hnsAccounts).toEqual([]);
    expect(c.dataAccess.outputsRequireScopedSas).toBe(false);
  });

  test('parses the names and the switch', () => {
    const c = loadConfig({ ...env, DATA_ACCOUNTS_HNS: ' data2 , ', OUTPUTS_REQUIRE_SCOPED_SAS: 'true' });
    expect(c.dataAccess.hnsAccounts).toEqual(['data2']);
    expect(c.dataAccess.outputsRequireScopedSas).toBe(true);
  });

  test.each([
    ['DATA_ACCOUNTS_HNS', 'data3', 'is not in DATA_ACCOUNTS'],
    ['DATA_ACCOUNTS_HNS', 'Data1', 'must be a storage account name'],
    ['DATA_ACCOUNTS_HNS', 'data1,data1', 'is listed twice'],
    ['OUTPUTS_REQUIRE_SCOPED_SAS', 'yes', 'must be "true" or "false"'],
  ])('%s=%s is refused, naming the setting', (name, value, why) => {
    const problems = problemsOf({ [name]: value });
    expect(problems).toEqual([expect.stringContaining(name)]);
    expect(problems[0]).toContain(why);
  });
});

const BASE = `
name: t
pool: { vmSize: Standard_D8s_v5, nodes: 2 }
mpi: { runtime: openmpi, command: app }
`;
function parsed(extra: string): JobSpec {
  const r = parseJobSpec(BASE + extra, 'application/yaml');
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
}

describe('intake: outputs to a flat account when the deployment requires a scoped SAS', () => {
  const policy: DataAccessPolicy = { accounts: ['data1', 'data2'], stagingAccounts: ['stage1'], hnsAccounts: ['data2'], outputsRequireScopedSas: true };
  const outputsTo = (account: string) => parsed(`outputs: { account: ${account}, container: results, prefix: "users/x/jobs/t" }`);

  test('are refused at outputs.account, saying why and which account would do', () => {
    const errors = checkDataAccess(outputsTo('data1'), policy);
    expect(errors).toEqual([{ path: 'outputs.account', message: expect.stringContaining('no hierarchical namespace') }]);
    expect(errors[0].message).toContain('OUTPUTS_REQUIRE_SCOPED_SAS');
    expect(errors[0].message).toContain('data2');
  });

  test('an HNS account passes; without the setting a flat one passes too (container SAS)', () => {
    expect(checkDataAccess(outputsTo('data2'), policy)).toEqual([]);
    expect(checkDataAccess(outputsTo('data1'), { ...policy, outputsRequireScopedSas: false })).toEqual([]);
    expect(outputsSasScope({ ...policy, outputsRequireScopedSas: false }, 'data1')).toEqual({ scope: 'container' });
    expect(outputsSasScope(policy, 'data2')).toEqual({ scope: 'directory' });
  });

  test('an account jobs may not name at all gets the data-access refusal only', () => {
    expect(checkDataAccess(outputsTo('other9'), policy).map((e) => e.message)).toEqual([expect.stringContaining('not one jobs may use')]);
  });
});

describe('the workloadUrls activity', () => {
  const expiresAt = '2026-11-27T18:00:00.000Z';
  const deps = (scope: 'directory' | 'container', calls: string[]): WorkloadUrlDeps => ({
    dataAccount: () => stubAccount(calls),
    outputsSasScope: () => scope,
  });

  test('an HNS account gets a directory SAS on the prefix, after creating the container', async () => {
    const calls: string[] = [];
    const urls = await mintWorkloadUrls(deps('directory', calls), {
      files: [],
      outputs: { account: 'data1', container: 'results', prefix: 'users/x/jobs/t' },
      expiresAt,
    });
    const q = new URL(urls.outputsContainerUrl as string).searchParams;
    expect([q.get('sr'), q.get('sdd'), q.get('sp')]).toEqual(['d', '4', 'cw']);
    expect(calls).toEqual(['create results']);
  });

  test('a flat account keeps the container create/write SAS', async () => {
    const urls = await mintWorkloadUrls(deps('container', []), {
      files: [],
      outputs: { account: 'data1', container: 'results', prefix: 'users/x/jobs/t' },
      expiresAt,
    });
    const q = new URL(urls.outputsContainerUrl as string).searchParams;
    expect([q.get('sr'), q.get('sdd'), q.get('sp')]).toEqual(['c', null, 'cw']);
  });

  test('an HNS account without a prefix in the request is refused rather than given the container', async () => {
    await expect(mintWorkloadUrls(deps('directory', []), { files: [], outputs: { account: 'data1', container: 'results' }, expiresAt })).rejects.toThrow(
      /no outputs prefix/,
    );
  });

  test('a refusal of the scope (flat account, scoped SAS required) reaches the caller', async () => {
    const refusing: WorkloadUrlDeps = {
      dataAccount: () => stubAccount(),
      outputsSasScope: () => {
        throw new Error('refused: no hierarchical namespace');
      },
    };
    await expect(mintWorkloadUrls(refusing, { files: [], outputs: { account: 'data1', container: 'results', prefix: 'p' }, expiresAt })).rejects.toThrow(
      /no hierarchical namespace/,
    );
  });
});
