/**
 * Shared file systems at the paths codes expect (issue 26, item 2): fixed paths (deny-listed), read-only, the new
 * kinds (Azure Files NFS 4.1, Azure NetApp Files, Azure Managed Lustre) with their network requirement, outputs from a
 * mount, the deployment's source list, and what `hpcjob explain --offline` shows for each (the offline settings).
 */
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { explainJob } from '../../shared/adapters/intake/explain';
import { defaultExplainSettings } from '../../shared/adapters/intake/settings';
import { outputsPlan } from '../../shared/core/planning/workloadData';
import { nodeFilesystemSetup } from '../../shared/core/planning/nodeFilesystems';
import { checkWorkloadDataAccess } from '../../shared/core/intake/workloadDataAccess';
import { PlanningError } from '../../shared/core/planning/errors';
import { FIXED_PATH_DENIED } from '../../shared/core/spec/sections/storageFields';
import * as path from 'node:path';
import { checkDataAreas } from '../../shared/adapters/intake/dataAreas';

const SUBNET = '/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/compute';

const yaml = (mounts: string, extra = '') => `
name: fs
pool: { vmSize: Standard_HB120rs_v3, nodes: 2, network: { subnetId: "${SUBNET}" } }
container: { runtime: none }
mpi: { runtime: openmpi, command: ./solver }
mounts: ${mounts}
${extra}`;

function spec(text: string): JobSpec {
  const r = parseJobSpec(text, 'application/yaml');
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
}
function errorsOf(text: string): { path: string; message: string }[] {
  const r = parseJobSpec(text, 'application/yaml');
  if (r.ok) throw new Error('expected the spec to be refused');
  return r.errors.map((e) => ({ path: e.path, message: e.message }));
}
const explain = (s: JobSpec) =>
  explainJob({ jobId: 'fs-1', jobIdFrom: 'spec.id', spec: s, settings: defaultExplainSettings((w) => `<${w}>`), policiesChecked: false });
type PoolBody = { mountConfiguration?: Record<string, Record<string, string>>[]; startTask?: { commandLine: string; userIdentity?: unknown } };

describe('fixed paths', () => {
  it('accepts /apps, /data, /scratch and a shared home', () => {
    const s = spec(
      yaml(
        '[{ name: apps, path: /apps, readOnly: true, nfs: { source: "10.0.0.4:/export/apps" } }, { name: home, path: /home/alice, nfs: { source: "10.0.0.4:/export/home" } }]',
      ),
    );
    expect(s.mounts?.map((m) => [m.path, m.readOnly])).toEqual([
      ['/apps', true],
      ['/home/alice', undefined],
    ]);
  });

  it.each([...FIXED_PATH_DENIED.filter((p) => p !== '/lost+found'), '/usr/local/apps', '/mnt/batch/x', '/lib64x'])('refuses %s with the field path', (p) => {
    const errors = errorsOf(yaml(`[{ name: a, path: "${p}", nfs: { source: "10.0.0.4:/x" } }]`));
    expect(errors).toEqual([{ path: 'mounts[0].path', message: expect.stringMatching(/^must (not|be an absolute)/) }]);
  });

  it('refuses /home itself, relative and unnormalised paths, and overlapping paths', () => {
    expect(errorsOf(yaml('[{ name: a, path: /home, nfs: { source: "10.0.0.4:/x" } }]'))[0]).toEqual({
      path: 'mounts[0].path',
      message: expect.stringContaining('/home/<user>'),
    });
    for (const p of ['apps', '/apps/', '/apps/../etc', '//apps', '/a b', '/apps/./x']) {
      expect(errorsOf(yaml(`[{ name: a, path: "${p}", nfs: { source: "10.0.0.4:/x" } }]`))[0].path).toBe('mounts[0].path');
    }
    const overlap = errorsOf(yaml('[{ name: a, path: /data, nfs: { source: "10.0.0.4:/x" } }, { name: b, path: /data/in, nfs: { source: "10.0.0.4:/y" } }]'));
    expect(overlap).toEqual([{ path: 'mounts[1].path', message: expect.stringContaining('overlaps mounts[0].path /data') }]);
  });

  it("the start task binds each fixed path as root, idempotently, read-only when asked, before the user's start task", () => {
    const s = spec(
      yaml(
        '[{ name: apps, path: /apps, readOnly: true, nfs: { source: "10.0.0.4:/export/apps" } }, { name: data, path: /data, nfs: { source: "10.0.0.4:/export/data" } }]',
      ).replace('nodes: 2,', 'nodes: 2, startTask: { command: "ls /apps" },'),
    );
    const body = explain(s).pool.request as PoolBody;
    const cmd = body.startTask?.commandLine ?? '';
    expect(cmd).toContain('if ! mountpoint -q /apps; then mkdir -p /apps && mount --bind "$AZ_BATCH_NODE_MOUNTS_DIR"/apps /apps; fi');
    expect(cmd).toContain('mount -o remount,bind,ro /apps');
    expect(cmd).not.toContain('remount,bind,ro /data');
    expect(cmd.indexOf('mount --bind')).toBeLessThan(cmd.indexOf('ls /apps'));
    expect(body.mountConfiguration?.[0].nfsMountConfiguration).toEqual({ source: '10.0.0.4:/export/apps', relativeMountPath: 'apps', mountOptions: '-o ro' });
    const summary = explain(s).pool.mounts;
    expect(summary[0]).toMatchObject({
      name: 'apps',
      kind: 'nfs',
      path: expect.stringMatching(/^\/apps \(bind-mounted/),
      access: 'readOnly',
      atJobEnd: expect.stringContaining('stay on the file server'),
    });
    expect(summary[1]).toMatchObject({ access: 'readWrite' });
  });

  it('no fixed path and no Lustre: no start task is added', () => {
    expect(nodeFilesystemSetup(spec(yaml('[{ name: a, nfs: { source: "10.0.0.4:/x" } }]')).mounts ?? [])).toEqual([]);
    expect((explain(spec(yaml('[{ name: a, nfs: { source: "10.0.0.4:/x" } }]'))).pool.request as PoolBody).startTask).toBeUndefined();
  });
});

describe('the kinds, as explain --offline shows their Batch requests', () => {
  it('Azure Files NFS 4.1: an NFS mount of <account>.file.core.windows.net:/<account>/<share>, no key', () => {
    const doc = explain(spec(yaml('[{ name: data, path: /data, azureFilesNfs: { account: premfiles, share: cases } }]')));
    expect((doc.pool.request as PoolBody).mountConfiguration).toEqual([
      {
        nfsMountConfiguration: {
          source: 'premfiles.file.core.windows.net:/premfiles/cases',
          relativeMountPath: 'data',
          mountOptions: '-o vers=4,minorversion=1,sec=sys,nconnect=4',
        },
      },
    ]);
    expect(doc.pool.mounts[0]).toMatchObject({ kind: 'azureFilesNfs', credential: expect.stringContaining('virtual network') });
    expect(JSON.stringify(doc)).not.toMatch(/accountKey/);
  });

  it('Azure NetApp Files: NFS 3 by the mount target address, read-only added to the options', () => {
    const doc = explain(spec(yaml('[{ name: apps, path: /apps, readOnly: true, netappFiles: { address: 10.0.2.4, volume: /vol1 } }]')));
    expect((doc.pool.request as PoolBody).mountConfiguration?.[0].nfsMountConfiguration).toEqual({
      source: '10.0.2.4:/vol1',
      relativeMountPath: 'apps',
      mountOptions: '-o hard,rsize=262144,wsize=262144,vers=3,tcp,ro',
    });
    expect(doc.pool.mounts[0].kind).toBe('netappFiles');
  });

  it('Azure Managed Lustre: no Batch mount; the start task checks for the client and mounts by MGS address', () => {
    const doc = explain(spec(yaml('[{ name: lus, path: /lustre, lustre: { mgs: 10.0.3.4 } }]')));
    const body = doc.pool.request as PoolBody;
    expect(body.mountConfiguration).toBeUndefined();
    const cmd = body.startTask?.commandLine ?? '';
    expect(cmd).toContain('command -v mount.lustre');
    expect(cmd).toContain('no Lustre client');
    expect(cmd).toContain('mount -t lustre -o noatime,flock 10.0.3.4@tcp:/lustrefs "$AZ_BATCH_NODE_MOUNTS_DIR"/lus');
    expect(cmd.indexOf('mount -t lustre')).toBeLessThan(cmd.indexOf('mount --bind'));
    expect(doc.pool.mounts[0]).toMatchObject({ kind: 'lustre', path: expect.stringMatching(/^\/lustre/) });
  });

  it.each([
    ['azureFilesNfs', '{ account: premfiles, share: cases }'],
    ['netappFiles', '{ address: 10.0.2.4, volume: /vol1 }'],
    ['lustre', '{ mgs: 10.0.3.4 }'],
  ])('%s without a subnet (spec or deployment) is refused with the field path', (kind, body) => {
    const s = spec(yaml(`[{ name: a, ${kind}: ${body} }]`).replace(`, network: { subnetId: "${SUBNET}" }`, ''));
    expect(() => explain(s)).toThrow(PlanningError);
    expect(() => explain(s)).toThrow(new RegExp(`^mounts\\[0\\]\\.${kind}: a is reached through a virtual network only`));
    // The deployment's default subnet is enough.
    const doc = explainJob({
      jobId: 'fs-1',
      jobIdFrom: 'spec.id',
      spec: s,
      settings: { ...defaultExplainSettings((w) => `<${w}>`), poolSubnetId: SUBNET },
      policiesChecked: false,
    });
    expect((doc.pool.request as { networkConfiguration?: unknown }).networkConfiguration).toMatchObject({ subnetId: SUBNET });
  });

  it('refuses malformed addresses and two kinds at once, naming the field', () => {
    expect(errorsOf(yaml('[{ name: a, netappFiles: { address: 10.0.2.400, volume: /vol1 } }]'))[0].path).toBe('mounts[0].netappFiles.address');
    expect(errorsOf(yaml('[{ name: a, netappFiles: { address: 10.0.2.4, volume: vol1 } }]'))[0].path).toBe('mounts[0].netappFiles.volume');
    expect(errorsOf(yaml('[{ name: a, lustre: { mgs: "10.0.3.4@tcp" } }]'))[0].path).toBe('mounts[0].lustre.mgs');
    expect(errorsOf(yaml('[{ name: a, lustre: { mgs: 10.0.3.4, fsname: toolongname } }]'))[0].path).toBe('mounts[0].lustre.fsname');
    expect(errorsOf(yaml('[{ name: a, lustre: { mgs: 10.0.3.4 }, netappFiles: { address: 10.0.2.4, volume: /v } }]'))).toContainEqual({
      path: 'mounts[0].lustre',
      message: expect.stringContaining('give only one of'),
    });
  });

  it("the deployment lists NetApp and Lustre servers; Azure Files NFS is a data account's share", () => {
    const s = spec(
      yaml(
        '[{ name: a, netappFiles: { address: 10.0.2.4, volume: /vol1 } }, { name: b, lustre: { mgs: 10.0.3.4 } }, { name: c, azureFilesNfs: { account: premfiles, share: cases } }]',
      ),
    );
    const refusal = (account: string) => (account === 'premfiles' ? undefined : `account ${account} is not a data account`);
    expect(checkWorkloadDataAccess(s, { accounts: ['premfiles'], mountSources: ['10.0.2.4:/vol1'] }, refusal).map((e) => e.path)).toEqual([
      'mounts[1].lustre.mgs',
    ]);
    expect(
      checkWorkloadDataAccess(s, { accounts: [], mountSources: ['10.0.2.4:/*', '10.0.3.4:/lustrefs'] }, () => 'not a data account').map((e) => e.path),
    ).toEqual(['mounts[2].azureFilesNfs.account']);
  });
});

describe('outputs from a mount', () => {
  const outputs = (files: string) => `outputs: { account: data, container: results, files: ${files} }`;

  it("uploads a pattern relative to the mount, under the job's prefix", () => {
    const s = spec(
      yaml('[{ name: data, path: /data, nfs: { source: "10.0.0.4:/export/data" } }]', outputs('[{ pattern: "results/*.txt", from: mount, mount: data }]')),
    );
    expect(outputsPlan(s, 'fs-1')?.master[0]).toEqual({
      filePattern: '$AZ_BATCH_NODE_MOUNTS_DIR/data/results/*.txt',
      path: 'fs-1/mounts/data/results',
      uploadCondition: 'taskCompletion',
    });
  });

  it('needs the name of one of the job\'s mounts, and `mount` only with from "mount"', () => {
    const m = '[{ name: data, nfs: { source: "10.0.0.4:/x" } }]';
    expect(errorsOf(yaml(m, outputs('[{ pattern: "a", from: mount }]')))).toEqual([
      { path: 'outputs.files[0].mount', message: expect.stringContaining('is required') },
    ]);
    expect(errorsOf(yaml(m, outputs('[{ pattern: "a", from: mount, mount: other }]')))).toEqual([
      { path: 'outputs.files[0].mount', message: 'must name one of mounts (data)' },
    ]);
    expect(errorsOf(yaml(m, outputs('[{ pattern: "a", mount: data }]')))).toEqual([{ path: 'outputs.files[0].mount', message: 'only goes with from "mount"' }]);
  });
});

describe('hpcjob explain --offline on the examples', () => {
  // The CLI's offline path: the same pure function with the documented default settings, printed as text.
  const offline = async (file: string) => {
    const { explainCommand } = await import('../../cli/commands/explain');
    const out: string[] = [];
    const ctx = {
      json: true,
      out: (t: string) => out.push(t),
      err: () => undefined,
      api: () => {
        throw new Error('offline');
      },
    };
    await explainCommand(ctx as unknown as Parameters<typeof explainCommand>[0], path.join(__dirname, '../../examples/workloads', file), { offline: true });
    return JSON.parse(out.join('')) as ReturnType<typeof explain>;
  };

  it('nfs-headnode-in-vnet.yaml: two NFS mounts, the start task binding /apps read-only and /data before the build', async () => {
    const doc = await offline('nfs-headnode-in-vnet.yaml');
    const body = doc.pool.request as PoolBody;
    expect(body.mountConfiguration?.map((m) => m.nfsMountConfiguration.relativeMountPath)).toEqual(['apps', 'data']);
    const cmd = body.startTask?.commandLine ?? '';
    expect(cmd.indexOf('mount -o remount,bind,ro /apps')).toBeGreaterThan(0);
    expect(cmd.indexOf('mount --bind "$AZ_BATCH_NODE_MOUNTS_DIR"/data /data')).toBeLessThan(cmd.indexOf('mpicc'));
    expect(JSON.stringify(doc.mpiTask)).toContain('"filePattern":"$AZ_BATCH_NODE_MOUNTS_DIR/data/result-*.txt"');
  });

  it("parallel-scratch-ior.yaml: the scratch is the master's disk over NFS, removed by the release task", async () => {
    const doc = await offline('parallel-scratch-ior.yaml');
    expect(doc.scratch).toMatchObject({ kind: 'masterNfs' });
    expect((doc.pool.request as PoolBody).mountConfiguration).toBeUndefined();
  });
});

describe('tenancy (shared/adapters/intake/dataAreas.ts)', () => {
  const caller = { owner: 'alice', roles: ['submitter'] as const, admin: false };

  it('an Azure Files NFS share of a data account is a whole-container area: refused unless a shared area covers it', () => {
    const s = spec(yaml('[{ name: d, path: /data, azureFilesNfs: { account: data1, share: cases } }]'));
    expect(checkDataAreas(s, { ...caller, roles: [...caller.roles] }, []).map((e) => e.path)).toEqual(['mounts[0].azureFilesNfs.share']);
    const readable = [{ account: 'data1', container: 'cases', prefix: '', roles: '*' as const, write: false }];
    expect(checkDataAreas(s, { ...caller, roles: [...caller.roles] }, readable)).toHaveLength(1);
    const ro = spec(yaml('[{ name: d, path: /data, readOnly: true, azureFilesNfs: { account: data1, share: cases } }]'));
    expect(checkDataAreas(ro, { ...caller, roles: [...caller.roles] }, readable)).toEqual([]);
  });

  it("outputs from a mount go under the prefix, which must be the caller's own area", () => {
    const s = spec(
      yaml(
        '[{ name: data, nfs: { source: "10.0.0.4:/x" } }]',
        'outputs: { account: data1, container: results, prefix: users/bob/x, files: [{ pattern: "*", from: mount, mount: data }] }',
      ),
    );
    expect(checkDataAreas(s, { ...caller, roles: [...caller.roles] }, [])).toEqual([
      { path: 'outputs.prefix', message: expect.stringContaining('outside your data area') },
    ]);
  });
});
