/**
 * Default outputs (issue 27, item 5): a job without an outputs section keeps the full stdout/stderr of every task in
 * the deployment's DEFAULT_OUTPUTS location, under its owner's area, unless it opts out with cleanup.keepLogs: false;
 * the explain document then shows the upload of the logs in the MPI task's outputFiles.
 */
import { loadConfig } from '../../shared/adapters/config';
import { withIntakeDefaults } from '../../shared/adapters/intake/dataAreas';
import { dryRunJob } from '../../shared/adapters/intake/dryRun';
import { defaultExplainSettings } from '../../shared/adapters/intake/settings';
import { deploymentValue } from '../../shared/adapters/intake/explain';
import { parseJobSpec, type JobSpecInput } from '../../shared/core/spec';

const base = {
  BATCH_ACCOUNT_URL: 'http://127.0.0.1:45123',
  BATCH_ACCOUNT_NAME: 'localbatch',
  BATCH_ACCOUNT_KEY: 'a2V5a2V5a2V5',
  AzureWebJobsStorage: 'UseDevelopmentStorage=true',
  STAGING_ACCOUNTS: 'devstoreaccount1',
  DATA_ACCOUNTS: 'datasa1',
  DATA_CONTAINERS: 'datasa1/results,datasa1/inputs',
};

function problemsOf(env: Record<string, string>): string {
  try {
    loadConfig(env);
    return '';
  } catch (err) {
    return (err as Error).message;
  }
}

const input = (extra: Record<string, unknown> = {}): JobSpecInput =>
  ({ name: 'logs', pool: { vmSize: 'Standard_D4s_v5', nodes: 2 }, mpi: { runtime: 'openmpi', command: './a.out' }, ...extra }) as JobSpecInput;
const spec = (extra: Record<string, unknown> = {}) => {
  const r = parseJobSpec(input(extra));
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
};
const OWNER = '11111111-2222-3333-4444-555555555555/66666666-7777-8888-9999-000000000000';

describe('DEFAULT_OUTPUTS', () => {
  it('is read as account/container of a data account and container jobs may use', () => {
    expect(loadConfig({ ...base, DEFAULT_OUTPUTS: 'datasa1/results' }).dataAccess.defaultOutputs).toEqual({ account: 'datasa1', container: 'results' });
    expect(loadConfig({ ...base, DEFAULT_OUTPUTS: 'none' }).dataAccess.defaultOutputs).toBeUndefined();
    expect(problemsOf({ ...base, DEFAULT_OUTPUTS: 'datasa1' })).toMatch(/DEFAULT_OUTPUTS: must be "account\/container"/);
    expect(problemsOf({ ...base, DEFAULT_OUTPUTS: 'other/results' })).toMatch(/account "other" is not in DATA_ACCOUNTS/);
    expect(problemsOf({ ...base, DEFAULT_OUTPUTS: 'datasa1/private' })).toMatch(/not one DATA_CONTAINERS allows/);
  });

  it("gives a job without outputs the full logs of every task, under its owner's area", () => {
    const s = withIntakeDefaults(spec(), { owner: OWNER, jobId: 'job-1', defaultOutputs: { account: 'datasa1', container: 'results' } });
    expect(s.outputs).toEqual({
      account: 'datasa1',
      container: 'results',
      prefix: expect.stringMatching(/^users\/.+\/jobs\/job-1$/),
      when: 'always',
      files: [],
      logs: true,
      onUploadFailure: 'report',
    });
  });

  it("keeps a job's own outputs, and nothing for a job that opts out or a deployment without the setting", () => {
    const own = spec({ outputs: { account: 'datasa1', container: 'inputs', files: [{ pattern: '*.dat' }] } });
    expect(withIntakeDefaults(own, { owner: OWNER, jobId: 'j', defaultOutputs: { account: 'datasa1', container: 'results' } }).outputs).toMatchObject({
      container: 'inputs',
      files: [{ pattern: '*.dat' }],
    });
    expect(
      withIntakeDefaults(spec({ cleanup: { keepLogs: false } }), { owner: OWNER, jobId: 'j', defaultOutputs: { account: 'datasa1', container: 'results' } })
        .outputs,
    ).toBeUndefined();
    expect(withIntakeDefaults(spec(), { owner: OWNER, jobId: 'j' }).outputs).toBeUndefined();
  });

  it('shows in the dry run as the logs upload of the MPI task (outputFiles) and of every other node', () => {
    const policy = { accounts: ['datasa1'], stagingAccounts: ['devstoreaccount1'], defaultOutputs: { account: 'datasa1', container: 'results' } };
    const out = dryRunJob({
      body: input(),
      contentType: 'application/json',
      dataAccess: policy,
      settings: defaultExplainSettings(deploymentValue),
      owner: OWNER,
    });
    expect(out.kind).toBe('explained');
    if (out.kind !== 'explained') return;
    expect(out.document.outputs).toMatchObject({ account: 'datasa1', container: 'results', logs: true });
    const files = (out.document.mpiTask.request as { outputFiles?: { filePattern: string }[] }).outputFiles ?? [];
    // The task's stdout.txt/stderr.txt (one level above the working directory) and every rank's own output.
    expect(files.map((f) => f.filePattern)).toEqual(expect.arrayContaining(['../*.txt', '.mpijob-ranks/**']));
    expect(out.document.outputs?.nodeUploads?.otherNodes).not.toBeNull();
    const optedOut = dryRunJob({
      body: input({ cleanup: { keepLogs: false } }),
      contentType: 'application/json',
      dataAccess: policy,
      settings: defaultExplainSettings(deploymentValue),
      owner: OWNER,
    });
    expect(optedOut.kind === 'explained' && optedOut.document.outputs).toBe(null);
  });
});
