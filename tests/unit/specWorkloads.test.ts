/**
 * The spec sections for real codes (shared/core/spec/sections/launch.ts, container.ts) and their intake policy
 * (shared/core/intake/containerPolicy.ts): every example under examples/workloads parses and says which code it stands
 * for; retired VM sizes are refused with their successors; image references, run options, GPUs and launchers are
 * refused with the field path when they cannot work.
 */
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseJobSpec, type JobSpec, type JobSpecInput } from '../../shared/core/spec';
import { checkContainerPolicy } from '../../shared/core/intake/containerPolicy';
import { isGpuSize, retiredVmSize } from '../../shared/core/planning/vmSizes';
import { loadConfig } from '../../shared/adapters/config';

const dir = path.join(__dirname, '../../examples/workloads');
const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));

/** A spec's sections as plain data, patched per test. */
type Doc = Record<'pool' | 'container' | 'mpi', Record<string, unknown>>;

function parsed(patch: (s: Doc) => void) {
  const doc: Doc = {
    pool: { vmSize: 'Standard_HB120rs_v3', nodes: 2 },
    container: { runtime: 'none' },
    mpi: { runtime: 'openmpi', command: './a.out' },
  };
  patch(doc);
  return parseJobSpec({ name: 'w', ...doc } as JobSpecInput);
}

function errorsOf(patch: (s: Doc) => void): { path: string; message: string }[] {
  const r = parsed(patch);
  return r.ok ? [] : r.errors;
}

function ok(patch: (s: Doc) => void): JobSpec {
  const r = parsed(patch);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
}

describe('examples/workloads', () => {
  it('holds at least 12 real-world job shapes', () => expect(files.length).toBeGreaterThanOrEqual(12));

  it.each(files)('%s parses and names the code it stands for', (file) => {
    const text = readFileSync(path.join(dir, file), 'utf8');
    expect(text).toMatch(/^# Stands for: \S/);
    const r = parseJobSpec(text, 'application/yaml');
    if (!r.ok) throw new Error(`${file}: ${JSON.stringify(r.errors, null, 2)}`);
  });

  it('cover the runtimes, container runtimes and launcher modes the issue lists', () => {
    const specs = files.map((f) => {
      const r = parseJobSpec(readFileSync(path.join(dir, f), 'utf8'), 'application/yaml');
      if (!r.ok) throw new Error(f);
      return r.spec;
    });
    const seen = (f: (s: JobSpec) => string) => new Set(specs.map(f));
    expect(seen((s) => s.mpi.runtime)).toEqual(new Set(['intelmpi', 'openmpi', 'mpich', 'mvapich']));
    expect(seen((s) => s.container.runtime)).toEqual(new Set(['none', 'docker', 'singularity']));
    expect(seen((s) => s.mpi.launcher.mode)).toEqual(new Set(['managed', 'custom']));
    expect(seen((s) => String(s.mpi.processesPerNode))).toEqual(expect.objectContaining({}));
    for (const ppn of ['nproc', 'cores', 'gpus']) expect(seen((s) => String(s.mpi.processesPerNode)).has(ppn)).toBe(true);
  });
});

describe('VM sizes', () => {
  it.each([
    ['Standard_H16r', /HBv3/],
    ['STANDARD_H16MR', /HBv3/],
    ['Standard_H8', /HC-series/],
    ['Standard_A9', /HBv3/],
    ['Standard_A8', /HBv3/],
    ['Standard_NC24r', /NC A100 v4/],
    ['Standard_NC24rs_v2', /ND A100 v4/],
    ['Standard_ND24rs', /ND A100 v4/],
    ['Standard_NV12', /NVadsA10 v5/],
    ['Standard_NC6s_v3', /NC A100 v4/],
  ])('%s is refused as retired, naming its successors', (vmSize, successor) => {
    const errors = errorsOf((s) => {
      s.pool.vmSize = vmSize;
    });
    expect(errors).toEqual([{ path: 'pool.vmSize', message: expect.stringMatching(/is retired/) }]);
    expect(errors[0].message).toMatch(successor);
  });

  it.each([
    'Standard_HB120rs_v3',
    'Standard_HB176rs_v4',
    'Standard_HC44rs',
    'Standard_HX176rs',
    'Standard_ND96asr_v4',
    'Standard_NC24ads_A100_v4',
    'Standard_NC24rs_v3',
    'Standard_D4s_v5',
    'Standard_A8_v2',
    'Standard_H16r_v2',
  ])('%s is not retired', (vmSize) => expect(retiredVmSize(vmSize)).toBeUndefined());

  it('recognises GPU sizes (NC, ND, NV families)', () => {
    for (const s of ['Standard_NC24ads_A100_v4', 'Standard_ND96isr_H100_v5', 'Standard_NV36ads_A10_v5', 'Standard_NC4as_T4_v3'])
      expect(isGpuSize(s)).toBe(true);
    for (const s of ['Standard_HB120rs_v3', 'Standard_D4s_v5', 'Standard_E64ds_v5']) expect(isGpuSize(s)).toBe(false);
  });
});

describe('launch section', () => {
  it('processes per node from the node: cores, nproc, gpus (gpus needs a GPU size)', () => {
    expect(
      ok((s) => {
        s.mpi.processesPerNode = 'cores';
      }).mpi.processesPerNode,
    ).toBe('cores');
    expect(
      errorsOf((s) => {
        s.mpi.processesPerNode = 'gpus';
      }),
    ).toEqual([{ path: 'mpi.processesPerNode', message: expect.stringMatching(/needs a GPU VM size/) }]);
    expect(
      errorsOf((s) => {
        s.mpi.processesPerNode = 'gpus';
        s.pool.vmSize = 'Standard_ND96asr_v4';
      }),
    ).toEqual([]);
    expect(
      errorsOf((s) => {
        s.mpi.processesPerNode = 'sockets';
      })[0].path,
    ).toBe('mpi.processesPerNode');
  });

  it('custom launchers take no launcher options or executable', () => {
    expect(
      ok((s) => {
        s.mpi.launcher = { mode: 'custom' };
      }).mpi.launcher,
    ).toEqual({ mode: 'custom' });
    expect(
      errorsOf((s) => {
        s.mpi.launcher = { mode: 'custom', executable: 'mpirun' };
        s.mpi.options = ['-v'];
      })
        .map((e) => e.path)
        .sort(),
    ).toEqual(['mpi.launcher.executable', 'mpi.options']);
    expect(
      ok((s) => {
        s.mpi.launcher = {};
      }).mpi.launcher,
    ).toEqual({ mode: 'managed' });
  });

  it('options may reference variables, never run commands', () => {
    expect(
      errorsOf((s) => {
        s.mpi.options = ['--hostfile', '$MPIJOB_HOSTFILE', '-np', '${MPIJOB_NP}', 'OMP_NUM_THREADS=$MPIJOB_PPN'];
      }),
    ).toEqual([]);
    for (const bad of ['$(id)', '`id`', '$MPIJOB_NP;id', '${MPIJOB_NP', '"$X"', 'a b', '$']) {
      expect(
        errorsOf((s) => {
          s.mpi.options = [bad];
        }),
      ).toEqual([{ path: 'mpi.options[0]', message: expect.stringMatching(/launcher option token/) }]);
    }
    for (const bad of ['mpirun; id', '$(which mpirun)', 'bin/mpirun space', '']) {
      expect(
        errorsOf((s) => {
          s.mpi.launcher = { executable: bad };
        })[0].path,
      ).toBe('mpi.launcher.executable');
    }
    expect(
      errorsOf((s) => {
        s.mpi.launcher = { executable: '$MPI_BIN/mpirun' };
      }),
    ).toEqual([]);
  });

  it('versions select presets and are refused outside the table', () => {
    expect(
      errorsOf((s) => {
        s.mpi.version = '3.1';
      }),
    ).toEqual([{ path: 'mpi.version', message: expect.stringMatching(/openmpi 3\.1 is not supported: use 4\.x/) }]);
    expect(
      errorsOf((s) => {
        s.mpi.runtime = 'intelmpi';
        s.mpi.version = '2018';
      }),
    ).toEqual([]);
    expect(
      errorsOf((s) => {
        s.mpi.runtime = 'intelmpi';
        s.mpi.version = 2018;
      })[0].path,
    ).toBe('mpi.version');
    expect(
      errorsOf((s) => {
        s.mpi.runtime = 'mpich';
        s.mpi.version = '4.2.1';
      }),
    ).toEqual([]);
  });
});

describe('container section', () => {
  it('singularity takes docker://, oras://, library:// URIs, bare references and SIF blobs; docker takes references only', () => {
    const images = [
      'docker://reg.io/a/b:1',
      'oras://reg.io/sif/c:2',
      'library://alfpark/linpack/linpack:2018-intel-mkl',
      'reg.io/d:3',
      { account: 'data1', container: 'images', blob: 'e.sif' },
    ];
    expect(
      errorsOf((s) => {
        s.container = { runtime: 'singularity', images };
      }),
    ).toEqual([]);
    const errors = errorsOf((s) => {
      s.container = { runtime: 'docker', images };
    });
    expect(errors.map((e) => e.path)).toEqual(['container.images[0]', 'container.images[1]', 'container.images[2]', 'container.images[4]']);
    for (const bad of ['library://UPPER/x', 'docker://', 'http://reg.io/a', 'library://a/b/c/d/e:1', 'docker://reg.io/a b']) {
      expect(
        errorsOf((s) => {
          s.container = { runtime: 'singularity', images: [bad] };
        })[0].path,
      ).toBe('container.images[0]');
    }
    expect(
      errorsOf((s) => {
        s.container = { runtime: 'singularity', images: [{ account: 'data1', container: 'images', blob: '../x.sif' }] };
      })[0].path,
    ).toBe('container.images[0].blob');
  });

  it('run options come from the allowlist', () => {
    const docker = (runOptions: unknown) =>
      errorsOf((s) => {
        s.container = { runtime: 'docker', images: ['reg.io/a:1'], runOptions };
      });
    expect(
      docker({
        shmSize: '8g',
        ulimits: { memlock: -1, stack: 'unlimited' },
        capAdd: ['SYS_NICE', 'IPC_LOCK'],
        binds: [{ source: '/opt/intel', target: '/opt/intel', readOnly: true }],
      }),
    ).toEqual([]);
    expect(docker({ capAdd: ['SYS_ADMIN'] })[0].path).toBe('container.runOptions.capAdd[0]');
    expect(docker({ ulimits: { cpu: 1 } })[0].path).toMatch(/^container\.runOptions\.ulimits/);
    expect(docker({ shmSize: '1g; rm -rf /' })[0].path).toBe('container.runOptions.shmSize');
    expect(docker({ network: 'host' })[0].message).toMatch(/unknown field "network"/);
    for (const [source, why] of [
      ['/var/run/docker.sock', /\/var/],
      ['/', /whole node/],
      ['/dev/infiniband', /\/dev/],
      ['/etc/dat.conf', /\/etc/],
      ['/usr/share/dat.conf', /readOnly: true/],
      ['/proc/1', /\/proc/],
    ] as const) {
      const e = docker({ binds: [{ source, target: '/x' }] });
      expect(e).toEqual([{ path: 'container.runOptions.binds[0].source', message: expect.stringMatching(why) }]);
    }
    const sing = errorsOf((s) => {
      s.container = {
        runtime: 'singularity',
        images: ['reg.io/a:1'],
        runOptions: { shmSize: '1g', capAdd: ['SYS_NICE'], privileged: true, binds: [{ source: '/scratch', target: '/scratch' }] },
      };
    });
    expect(sing.map((e) => e.path).sort()).toEqual(['container.runOptions.capAdd', 'container.runOptions.privileged', 'container.runOptions.shmSize']);
    expect(
      errorsOf((s) => {
        s.container = { runtime: 'none', runOptions: {} };
      })[0].path,
    ).toBe('container.runOptions');
  });

  it('gpus needs a container and a GPU size', () => {
    expect(
      errorsOf((s) => {
        s.container = { runtime: 'docker', images: ['reg.io/a:1'], gpus: true };
      }),
    ).toEqual([{ path: 'container.gpus', message: expect.stringMatching(/GPU VM size/) }]);
    expect(
      errorsOf((s) => {
        s.container = { runtime: 'docker', images: ['reg.io/a:1'], gpus: true };
        s.pool.vmSize = 'Standard_NC24ads_A100_v4';
      }),
    ).toEqual([]);
    expect(
      errorsOf((s) => {
        s.container = { runtime: 'none', gpus: true };
      })[0].path,
    ).toBe('container.gpus');
  });
});

describe('intake: what this deployment allows containers', () => {
  const data = { accounts: ['data1'], stagingAccounts: ['stage1'] };
  const privileged = ok((s) => {
    s.container = { runtime: 'docker', images: ['reg.io/a:1'], runOptions: { privileged: true } };
  });

  it('privileged only when the deployment says so', () => {
    expect(checkContainerPolicy(privileged, { allowPrivileged: false }, data)).toEqual([
      { path: 'container.runOptions.privileged', message: expect.stringMatching(/CONTAINER_ALLOW_PRIVILEGED/) },
    ]);
    expect(checkContainerPolicy(privileged, { allowPrivileged: true }, data)).toEqual([]);
  });

  it('SIF files only from storage jobs may name', () => {
    const sif = (account: string, container: string) =>
      ok((s) => {
        s.container = { runtime: 'singularity', images: [{ account, container, blob: 'a.sif' }] };
      });
    expect(checkContainerPolicy(sif('data1', 'images'), { allowPrivileged: false }, data)).toEqual([]);
    expect(checkContainerPolicy(sif('stage1', 'images'), { allowPrivileged: false }, data)).toEqual([
      { path: 'container.images[0].account', message: expect.stringMatching(/not one jobs may use/) },
    ]);
    expect(checkContainerPolicy(sif('data1', 'stg-x'), { allowPrivileged: false }, data)).toEqual([
      { path: 'container.images[0].container', message: expect.stringMatching(/staging container/) },
    ]);
  });

  it('the setting is read through shared/adapters/config', () => {
    const env = {
      BATCH_ACCOUNT_URL: 'https://b.westeurope.batch.azure.com',
      BATCH_ACCOUNT_NAME: 'batch1',
      AzureWebJobsStorage__accountName: 'host1',
      STAGING_ACCOUNTS: 'stage1',
    };
    expect(loadConfig(env).containers.allowPrivileged).toBe(false);
    expect(loadConfig({ ...env, CONTAINER_ALLOW_PRIVILEGED: 'true' }).containers.allowPrivileged).toBe(true);
    expect(() => loadConfig({ ...env, CONTAINER_ALLOW_PRIVILEGED: 'yes' })).toThrow(/CONTAINER_ALLOW_PRIVILEGED: must be "true" or "false"/);
  });
});
