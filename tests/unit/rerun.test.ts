/** Issue 28 item 5: the rerun's id and spec (shared/adapters/intake/rerun.ts), pure. */
import { rerunJobId, rerunSpec } from '../../shared/adapters/intake/rerun';
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { JOB_ID_RE } from '../../shared/core/spec/patterns';
import { defaultOutputsPrefix } from '../../shared/adapters/intake/dataAreas';

const owner = 'tenant-1/oid-alice';

function specOf(extra: Record<string, unknown>): JobSpec {
  const parsed = parseJobSpec({
    id: 'old-job',
    name: 'old-job',
    pool: { vmSize: 'Standard_D2s_v5', nodes: 1 },
    mpi: { runtime: 'openmpi', command: 'true' },
    ...extra,
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.spec;
}

test('the rerun id is derived: the same request gives the same id, another key, caller or job another', () => {
  const a = rerunJobId('old-job', owner);
  expect(a).toMatch(/^old-job-r[0-9a-f]{8}$/);
  expect(rerunJobId('old-job', owner)).toBe(a);
  expect(rerunJobId('old-job', owner, 'second')).not.toBe(a);
  expect(rerunJobId('old-job', 'tenant-1/oid-admin')).not.toBe(a);
  expect(rerunJobId('old-job-2', owner)).not.toBe(a);
});

test('the rerun id is a job id even for the longest old id', () => {
  const longest = `a${'-'.repeat(52)}b${'c'.repeat(10)}`;
  expect(longest).toHaveLength(64);
  expect(JOB_ID_RE.test(longest)).toBe(true);
  const id = rerunJobId(longest, owner, 'k');
  expect(id.length).toBeLessThanOrEqual(64);
  expect(JOB_ID_RE.test(id)).toBe(true);
});

test('a defaulted outputs prefix is dropped (intake gives the rerun its own); the spec takes the new id', () => {
  const recorded = specOf({
    outputs: { account: 'data', container: 'results', prefix: defaultOutputsPrefix(owner, 'old-job'), files: [{ pattern: '*.txt' }] },
  });
  const rerun = rerunSpec({ id: 'old-job', owner }, recorded, 'old-job-r12345678');
  expect(rerun.id).toBe('old-job-r12345678');
  expect(rerun.outputs?.prefix).toBeUndefined();
  expect(rerun.outputs?.container).toBe('results');
  expect(parseJobSpec(rerun).ok).toBe(true);
});

test('an outputs prefix the user set stays as written', () => {
  const recorded = specOf({ outputs: { account: 'data', container: 'results', prefix: 'users/tenant-1/oid-alice/campaign-7', files: [{ pattern: '*.txt' }] } });
  expect(rerunSpec({ id: 'old-job', owner }, recorded, 'old-job-r1').outputs?.prefix).toBe('users/tenant-1/oid-alice/campaign-7');
});
