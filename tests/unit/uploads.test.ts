import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseUploadRequest, planUpload, type UploadPolicy } from '../../shared/adapters/intake/uploads';
import { localFiles, progressLine, uploadTarget } from '../../cli/commands/upload';
import type { DataCaller } from '../../shared/adapters/auth/dataArea';

const ALICE = '11111111-1111-1111-1111-111111111111/22222222-2222-2222-2222-222222222222';
const alice: DataCaller = { owner: ALICE, roles: ['submitter'], admin: false };
const policy: UploadPolicy = {
  dataAccounts: ['data1', 'data2'],
  sharedAreas: [
    { account: 'data1', container: 'software', prefix: '', write: false, roles: '*' },
    { account: 'data1', container: 'shared', prefix: 'team/', write: true, roles: ['submitter'] },
  ],
  containerRefusal: (_a, c) => (c === 'forbidden' ? 'container "forbidden" is not one jobs may use' : undefined),
};
const req = (body: Record<string, unknown>) => {
  const parsed = parseUploadRequest(body);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.request;
};

describe('parseUploadRequest', () => {
  it('names every bad field by its path, unknown ones too', () => {
    const parsed = parseUploadRequest({ container: 'Bad_Name', prefix: 'no-slash', files: [{ name: '../x' }, { name: 'ok', extra: 1 }], surprise: true });
    expect(parsed.ok).toBe(false);
    const paths = !parsed.ok ? parsed.errors.map((e) => e.path).sort() : [];
    expect(paths).toEqual(expect.arrayContaining(['container', 'prefix', 'files[0].name', 'files[1]', '(body)']));
  });

  it('needs at least one file', () => {
    const parsed = parseUploadRequest({ container: 'inputs', files: [] });
    expect(!parsed.ok && parsed.errors[0].path).toBe('files');
  });
});

describe('planUpload', () => {
  it("defaults to the first data account and the caller's own area", () => {
    const d = planUpload(req({ container: 'inputs', files: [{ name: 'a/b.dat' }] }), alice, policy);
    expect(d).toEqual({
      ok: true,
      plan: { account: 'data1', container: 'inputs', prefix: `users/${ALICE}/`, files: [{ name: 'a/b.dat', blob: `users/${ALICE}/a/b.dat` }] },
    });
  });

  it("refuses another owner's area and a read-only shared area with 403 DataAreaForbidden at prefix", () => {
    const other = planUpload(req({ container: 'inputs', prefix: 'users/operator/', files: [{ name: 'x' }] }), alice, policy);
    expect(other).toMatchObject({ ok: false, status: 403, code: 'DataAreaForbidden', errors: [{ path: 'prefix' }] });
    const readOnly = planUpload(req({ container: 'software', prefix: 'tools/', files: [{ name: 'x' }] }), alice, policy);
    expect(readOnly).toMatchObject({ ok: false, status: 403, errors: [{ path: 'prefix', message: expect.stringMatching(/read-only/) }] });
  });

  it('allows a shared area the caller may write, and an admin anywhere', () => {
    expect(planUpload(req({ container: 'shared', prefix: 'team/run1/', files: [{ name: 'x' }] }), alice, policy).ok).toBe(true);
    expect(
      planUpload(req({ container: 'software', prefix: '', files: [{ name: 'x' }] }), { owner: 'operator', roles: ['admin'], admin: true }, policy).ok,
    ).toBe(true);
  });

  it('400 for an unknown account, a refused container and a name given twice', () => {
    expect(planUpload(req({ account: 'nosuch', container: 'inputs', files: [{ name: 'x' }] }), alice, policy)).toMatchObject({
      status: 400,
      errors: [{ path: 'account' }],
    });
    expect(planUpload(req({ container: 'forbidden', files: [{ name: 'x' }] }), alice, policy)).toMatchObject({ status: 400, errors: [{ path: 'container' }] });
    expect(planUpload(req({ container: 'inputs', files: [{ name: 'x' }, { name: 'x' }] }), alice, policy)).toMatchObject({
      status: 400,
      errors: [{ path: 'files[1].name' }],
    });
  });

  it('a caller with no area of its own must name a shared area', () => {
    expect(planUpload(req({ container: 'inputs', files: [{ name: 'x' }] }), { owner: 'api', roles: ['submitter'], admin: false }, policy)).toMatchObject({
      status: 403,
      errors: [{ path: 'prefix' }],
    });
  });
});

describe('hpcjob upload helpers', () => {
  it('--to: a container alone is your area; a relative path goes below it; users/ and shared areas as written', () => {
    expect(uploadTarget(undefined, 'users/dev/', [])).toEqual({ container: 'inputs' });
    expect(uploadTarget('software', 'users/dev/', [])).toEqual({ container: 'software' });
    expect(uploadTarget('inputs/demo', 'users/dev/', [])).toEqual({ container: 'inputs', prefix: 'users/dev/demo/' });
    expect(uploadTarget('inputs/users/dev/x/', 'users/dev/', [])).toEqual({ container: 'inputs', prefix: 'users/dev/x/' });
    expect(uploadTarget('shared/team/a', 'users/dev/', ['shared/team/'])).toEqual({ container: 'shared', prefix: 'team/a/' });
  });

  it('a folder keeps its layout under its own name; a file is its name', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'upload-'));
    mkdirSync(path.join(dir, 'case', 'system'), { recursive: true });
    writeFileSync(path.join(dir, 'case', 'system', 'controlDict'), 'abc');
    writeFileSync(path.join(dir, 'case', 'T'), '12345');
    expect((await localFiles(path.join(dir, 'case'))).map((f) => [f.name, f.size])).toEqual([
      ['case/system/controlDict', 3],
      ['case/T', 5],
    ]);
    expect((await localFiles(path.join(dir, 'case', 'T'))).map((f) => f.name)).toEqual(['T']);
    await expect(localFiles(path.join(dir, 'missing'))).rejects.toThrow(/no such file/);
  });

  it('progress line', () => {
    expect(progressLine({ files: 1, bytes: 512 }, { files: 2, bytes: 1024 }, 10)).toMatch(/^\[#####\.\.\.\.\.\] 1\/2 file\(s\), /);
  });
});
