/**
 * examples/workloads/slurm-script-shared-fs.yaml (issue 26): `hpcjob explain --offline` shows the pool's Batch mounts
 * for Azure NetApp Files and Azure Files NFS, the start task mounting Azure Managed Lustre and binding all three at
 * their fixed paths, and the MPI task's Slurm variables with the launchers' own Slurm support turned off (Open MPI
 * would otherwise start remote ranks with srun). The local stack's example network serves the three file systems and
 * lists them in DATA_MOUNT_SOURCES; a Batch NFS mount of the Azure Files account's name is the share's export.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { explainJob } from '../../shared/adapters/intake/explain';
import { defaultExplainSettings } from '../../shared/adapters/intake/settings';
import { checkWorkloadDataAccess } from '../../shared/core/intake/workloadDataAccess';
import { SLURM_LAUNCHER_OFF } from '../../shared/core/mpi/schedulerCompat';
import { EXAMPLE_SUBNET_ID, exampleNetwork, exampleNetworkSettings } from '../../local/exampleNetwork';
import { prepareNetworkServices } from '../../local/batch/runner/networkServices';
import { modelledMounts } from '../../local/batch/runner/mounts';

const ROOT = path.join(__dirname, '..', '..');
const FILE = path.join(ROOT, 'examples', 'workloads', 'slurm-script-shared-fs.yaml');

function exampleSpec(): JobSpec {
  const r = parseJobSpec(readFileSync(FILE, 'utf8'), 'application/yaml');
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
}

type PoolBody = { networkConfiguration?: unknown; mountConfiguration?: unknown; startTask?: { commandLine: string } };

describe('hpcjob explain --offline of slurm-script-shared-fs.yaml', () => {
  const doc = explainJob({
    jobId: 'slurm-1',
    jobIdFrom: 'spec.id',
    spec: exampleSpec(),
    settings: defaultExplainSettings((w) => `<${w}>`),
    policiesChecked: false,
  });
  const pool = doc.pool.request as PoolBody;
  const start = pool.startTask?.commandLine ?? '';

  it("puts the pool in the file systems' subnet; Batch mounts the NetApp volume and the Azure Files NFS share with their kinds' options", () => {
    expect(pool.networkConfiguration).toEqual({ subnetId: EXAMPLE_SUBNET_ID });
    expect(pool.mountConfiguration).toEqual([
      { nfsMountConfiguration: { source: '10.20.0.5:/hpcapps', relativeMountPath: 'apps', mountOptions: '-o hard,rsize=262144,wsize=262144,vers=3,tcp,ro' } },
      {
        nfsMountConfiguration: {
          source: 'data1.file.core.windows.net:/data1/cases',
          relativeMountPath: 'data',
          mountOptions: '-o vers=4,minorversion=1,sec=sys,nconnect=4,ro',
        },
      },
    ]);
  });

  it("the start task mounts Lustre and binds /apps and /data read-only and /lustre, before the user's command", () => {
    expect(start).toContain('mount -t lustre -o noatime,flock 10.20.0.7@tcp:/lustrefs "$AZ_BATCH_NODE_MOUNTS_DIR"/lustre');
    for (const at of ['apps', 'data', 'lustre']) {
      expect(start).toContain(`if ! mountpoint -q /${at}; then mkdir -p /${at} && mount --bind "$AZ_BATCH_NODE_MOUNTS_DIR"/${at} /${at}; fi`);
    }
    expect(start).toContain('mount -o remount,bind,ro /apps');
    expect(start).toContain('mount -o remount,bind,ro /data');
    expect(start).not.toContain('mount -o remount,bind,ro /lustre');
    expect(start.indexOf('mount --bind "$AZ_BATCH_NODE_MOUNTS_DIR"/lustre /lustre')).toBeLessThan(start.indexOf('/apps/ranks.c'));
    expect(start.indexOf('mount -t lustre')).toBeLessThan(start.indexOf('mount --bind "$AZ_BATCH_NODE_MOUNTS_DIR"/lustre'));
  });

  it("the MPI task exports the Slurm allocation and turns the launchers' Slurm support off", () => {
    const text = JSON.stringify(doc.mpiTask);
    expect(text).toContain('export SLURM_JOB_NODELIST=\\"$AZ_BATCH_HOST_LIST\\"');
    expect(text).toContain('export SLURM_HOSTFILE=\\"$MPIJOB_NODEFILE\\"');
    expect(text).toContain(SLURM_LAUNCHER_OFF);
    expect(SLURM_LAUNCHER_OFF).toContain('OMPI_MCA_plm=^slurm');
  });
});

describe('the example network serves what the example mounts', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'slurmfs-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("the deployment lets jobs mount the NetApp volume and the Lustre file system; the Azure Files share is the data account's", () => {
    const sources = (exampleNetworkSettings().DATA_MOUNT_SOURCES ?? '').split(',');
    expect(checkWorkloadDataAccess(exampleSpec(), { accounts: ['data1'], mountSources: sources }, () => undefined)).toEqual([]);
    expect(checkWorkloadDataAccess(exampleSpec(), { accounts: ['data1'], mountSources: ['10.20.0.4:/export/*'] }, () => undefined).map((e) => e.path)).toEqual([
      'mounts[0].netappFiles.address',
      'mounts[2].lustre.mgs',
    ]);
  });

  it("a pool in subnet compute mounts the share by its account's name and the volume by address; another subnet cannot", () => {
    const { services } = exampleNetwork(path.join(dir, 'headnode'), ROOT);
    const hosts = prepareNetworkServices(path.join(dir, 'emu'), services);
    const mountConfiguration = (
      explainJob({ jobId: 'slurm-1', jobIdFrom: 'spec.id', spec: exampleSpec(), settings: defaultExplainSettings((w) => `<${w}>`), policiesChecked: false })
        .pool.request as { mountConfiguration: unknown }
    ).mountConfiguration;
    const inside = modelledMounts(path.join(dir, 'emu'), mountConfiguration, { services: hosts, subnet: EXAMPLE_SUBNET_ID });
    expect(inside.map((m) => [m.relativeMountPath, m.failure, m.target])).toEqual([
      ['apps', undefined, path.join(dir, 'headnode', 'anf')],
      ['data', undefined, path.join(dir, 'headnode', 'afs-nfs')],
    ]);
    expect(readFileSync(path.join(inside[1].target, 'case.txt'), 'utf8')).toBe('case: cavity 2x2\n');
    const outside = modelledMounts(path.join(dir, 'emu'), mountConfiguration, { services: hosts, subnet: EXAMPLE_SUBNET_ID.replace('/compute', '/elsewhere') });
    expect(outside.map((m) => m.failure)).toEqual([
      expect.stringMatching(/^mount\.nfs: Connection timed out/),
      expect.stringMatching(/^mount\.nfs: Connection timed out/),
    ]);
    // The Lustre file system is the MGS service's /lustrefs export (the node tool mount -t lustre reads it).
    expect(services.find((s) => s.address === '10.20.0.7')?.exports).toEqual([{ path: '/lustrefs', directory: path.join(dir, 'headnode', 'lustre') }]);
  });
});
