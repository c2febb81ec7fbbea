/**
 * The node image catalog (shared/core/images/catalog.ts) and the checks that read it (imageChecks.ts): module names,
 * host paths and container runtimes against the chosen image, with the catalog's nearest name; the MPI generation
 * rules (shared/core/mpi/generation.ts); and how intake, validate and explain apply them (checks.image refuse | warn).
 */
import { CENTOS_HPC_7, NODE_IMAGES, nodeImageFor } from '../../shared/core/images/catalog';
import { checkImage, hostPaths, moduleLoads, nearestModule } from '../../shared/core/images/imageChecks';
import { generationIssues, presetChoice } from '../../shared/core/mpi/generation';
import { parseJobSpec, type JobSpecInput } from '../../shared/core/spec';
import { checkSubmission } from '../../shared/adapters/intake/submit';
import { dryRunJob } from '../../shared/adapters/intake/dryRun';
import { defaultExplainSettings } from '../../shared/adapters/intake/settings';
import { deploymentValue } from '../../shared/adapters/intake/explain';
import { parseCustomNodeImages } from '../../shared/core/config/nodeImages';

const ubuntuHpc = NODE_IMAGES.find((i) => i.id === 'ubuntu-hpc-2204')!;

function spec(patch: Partial<Record<'pool' | 'container' | 'mpi' | 'checks', Record<string, unknown>>> = {}): JobSpecInput {
  return {
    name: 'img',
    pool: { vmSize: 'Standard_HB120rs_v3', nodes: 2, ...patch.pool },
    container: { runtime: 'none', ...patch.container },
    mpi: { runtime: 'openmpi', command: './a.out', ...patch.mpi },
    ...(patch.checks ? { checks: patch.checks } : {}),
  } as JobSpecInput;
}

function parsed(input: JobSpecInput) {
  const r = parseJobSpec(input);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
}

const submit = (input: JobSpecInput, custom?: Parameters<typeof checkImage>[1]) =>
  checkSubmission({
    body: input,
    contentType: 'application/json',
    dataAccess: { accounts: [] } as never,
    containers: { allowPrivileged: false, ...(custom ? { customNodeImages: [...custom] } : {}) },
  });

describe('the image catalog', () => {
  it('cites a source for every entry and names the Ubuntu-HPC 22.04 stacks as azhpc-images installs them', () => {
    for (const i of [...NODE_IMAGES, CENTOS_HPC_7]) expect(i.source).toMatch(/azhpc-images tag|learn\.microsoft\.com/);
    const names = ubuntuHpc.modules.map((m) => m.name);
    expect(names).toEqual(expect.arrayContaining(['mpi/hpcx', 'mpi/openmpi', 'mpi/impi-2021', 'mpi/mvapich']));
    expect(names).not.toContain('mpi/impi');
    expect(ubuntuHpc.modules.find((m) => m.name === 'mpi/impi-2021')!.home).toBe('/opt/intel/oneapi/mpi/2021.16');
    expect(ubuntuHpc.runtimes).toEqual({ docker: true, singularity: false });
    expect(ubuntuHpc.clients).toMatchObject({ nfs: true, blobfuse: false, lustre: '2.15.8' });
  });

  it('finds the entry of a pool image (case-insensitive) and of a declared custom image by id prefix', () => {
    expect(nodeImageFor({ image: { publisher: 'Microsoft-DSVM', offer: 'Ubuntu-HPC', sku: '2204' } })?.id).toBe('ubuntu-hpc-2204');
    expect(nodeImageFor({ image: { publisher: 'almalinux', offer: 'almalinux-hpc', sku: '8_7-hpc-gen2' } })?.id).toBe('almalinux-hpc-8');
    expect(nodeImageFor({ image: { publisher: 'x', offer: 'y', sku: 'z' } })).toBeUndefined();
    const custom = [{ idPrefix: '/subscriptions/s/resourceGroups/r/providers/Microsoft.Compute/galleries/g/images/hpc', modules: ['mpi/solver'] }];
    expect(
      nodeImageFor(
        { customImageId: '/subscriptions/s/resourceGroups/r/providers/Microsoft.Compute/galleries/g/images/hpc/versions/1.0.0' },
        custom,
      )?.modules.map((m) => m.name),
    ).toEqual(['mpi/solver']);
  });
});

describe('reading what a command expects of the node', () => {
  it('finds module loads (module load/add, ml) and sourced /opt paths, skipping variables and options', () => {
    expect(moduleLoads('source x.sh -a 1; module load mpi/impi; source $MPI_BIN/mpivars.sh')).toEqual(['mpi/impi']);
    expect(moduleLoads('module add gcc mpi/hpcx && ml mpi/openmpi && module load $M && module list')).toEqual(['gcc', 'mpi/hpcx', 'mpi/openmpi']);
    expect(hostPaths('export MANPATH=/usr/share/man; source /opt/intel/compilers_and_libraries/linux/mpi/bin64/mpivars.sh')).toEqual([
      '/opt/intel/compilers_and_libraries/linux/mpi/bin64/mpivars.sh',
    ]);
    expect(hostPaths(`bash -c 'source /opt/x/env.sh; cd /tmp'`)).toEqual(['/opt/x/env.sh']);
    expect(hostPaths('. "$AZ_BATCH_NODE_SHARED_DIR/setup.sh"')).toEqual([]);
  });

  it('suggests the current name of a renamed or mistyped module', () => {
    expect(nearestModule('mpi/impi', ubuntuHpc)).toBe('mpi/impi-2021');
    expect(nearestModule('mpi/mvapich2', ubuntuHpc)).toBe('mpi/mvapich');
    expect(nearestModule('mpi/hpx', ubuntuHpc)).toBe('mpi/hpcx');
    expect(nearestModule('gromacs', ubuntuHpc)).toBeUndefined();
  });
});

describe('checkImage', () => {
  it('finds a module the image lacks, with did-you-mean, on the field that runs it on the host', () => {
    const r = checkImage(parsed(spec({ mpi: { runtime: 'intelmpi', preExecutionCommand: 'module load mpi/impi' } })));
    expect(r.image?.id).toBe('ubuntu-hpc-2204');
    expect(r.findings).toEqual([expect.objectContaining({ path: 'mpi.preExecutionCommand', kind: 'module', name: 'mpi/impi', suggestion: 'mpi/impi-2021' })]);
    expect(r.findings[0].message).toContain('did you mean "mpi/impi-2021"?');
  });

  it('accepts the names and paths the image has', () => {
    const r = checkImage(
      parsed(spec({ mpi: { runtime: 'intelmpi', preExecutionCommand: 'module load mpi/impi-2021 && source /opt/intel/oneapi/mpi/2021.16/env/vars.sh' } })),
    );
    expect(r.findings).toEqual([]);
  });

  it("finds a CentOS-HPC host path and points at the image's Intel MPI environment script", () => {
    const r = checkImage(
      parsed(spec({ mpi: { runtime: 'intelmpi', preExecutionCommand: 'source /opt/intel/compilers_and_libraries/linux/mpi/bin64/mpivars.sh' } })),
    );
    expect(r.findings).toEqual([expect.objectContaining({ kind: 'path', suggestion: '/opt/intel/oneapi/mpi/2021.16/env/vars.sh' })]);
  });

  it('does not check what runs inside a docker container (its own modules and /opt)', () => {
    const r = checkImage(
      parsed(
        spec({ container: { runtime: 'docker', images: ['app:1'] }, mpi: { preExecutionCommand: 'source /opt/intel2/mpivars.sh; module load mpi/impi' } }),
      ),
    );
    expect(r.findings).toEqual([]);
  });

  it('finds a container runtime the image lacks, unless the start task installs it', () => {
    const sing = spec({ container: { runtime: 'singularity', images: ['docker://app:1'] } });
    expect(checkImage(parsed(sing)).findings).toEqual([expect.objectContaining({ path: 'container.runtime', kind: 'runtime', name: 'singularity' })]);
    const installed = spec({
      container: { runtime: 'singularity', images: ['docker://app:1'] },
      pool: { startTask: { command: 'apt-get install -y apptainer' } },
    });
    const r = checkImage(parsed(installed));
    expect(r.findings).toEqual([]);
    expect(r.notes.join(' ')).toMatch(/taken to install it/);
    const plain = spec({
      pool: { image: { publisher: 'canonical', offer: '0001-com-ubuntu-server-jammy', sku: '22_04-lts' }, nodeAgentSku: 'batch.node.ubuntu 22.04' },
      container: { runtime: 'docker', images: ['a:1'] },
    });
    expect(checkImage(parsed(plain)).findings.map((f) => f.kind)).toEqual(['runtime']);
  });

  it('says a module cannot load at all on an image without environment modules', () => {
    const plain = spec({
      pool: { image: { publisher: 'canonical', offer: '0001-com-ubuntu-server-jammy', sku: '22_04-lts' }, nodeAgentSku: 'batch.node.ubuntu 22.04' },
      mpi: { preExecutionCommand: 'module load mpi/openmpi' },
    });
    expect(checkImage(parsed(plain)).findings[0].message).toMatch(/no environment modules/);
  });

  it('checks nothing (and says so) for an uncatalogued or undeclared custom image or a reused pool', () => {
    const custom = spec({
      pool: { customImageId: '/subscriptions/s/resourceGroups/r/providers/Microsoft.Compute/images/mine', nodeAgentSku: 'batch.node.ubuntu 22.04' },
      mpi: { preExecutionCommand: 'module load x' },
    });
    const r = checkImage(parsed(custom));
    expect(r.findings).toEqual([]);
    expect(r.notes[0]).toMatch(/not declared by this deployment/);
  });
});

describe('intake, validate and explain', () => {
  const wrong = spec({ mpi: { runtime: 'intelmpi', preExecutionCommand: 'module load mpi/impi' } });

  it('refuses a wrong module name by default, with the field path and the suggestion', () => {
    const r = submit(wrong);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toEqual([expect.objectContaining({ path: 'mpi.preExecutionCommand', message: expect.stringContaining('did you mean "mpi/impi-2021"?') })]);
  });

  it('accepts it with checks.image warn and lists the finding in the dry run', () => {
    const warned = { ...wrong, checks: { image: 'warn' } } as JobSpecInput;
    expect(submit(warned).ok).toBe(true);
    const out = dryRunJob({
      body: warned,
      contentType: 'application/json',
      dataAccess: { accounts: [] } as never,
      settings: defaultExplainSettings(deploymentValue),
    });
    expect(out.kind).toBe('explained');
    if (out.kind !== 'explained') return;
    expect(out.document.nodeImage).toMatchObject({
      id: 'ubuntu-hpc-2204',
      mode: 'warn',
      findings: [{ path: 'mpi.preExecutionCommand', suggestion: 'mpi/impi-2021' }],
    });
    expect(out.document.notes.join('\n')).toContain('node image (checks.image warn)');
  });

  it('checks a custom image against what the deployment declares (NODE_IMAGES_CUSTOM)', () => {
    const problems: string[] = [];
    const custom = parseCustomNodeImages(
      JSON.stringify([{ idPrefix: '/subscriptions/s/resourceGroups/r/providers/Microsoft.Compute/images/mine', modules: ['mpi/solver-mpi'] }]),
      problems,
    );
    expect(problems).toEqual([]);
    const s = spec({
      pool: { customImageId: '/subscriptions/s/resourceGroups/r/providers/Microsoft.Compute/images/mine', nodeAgentSku: 'batch.node.ubuntu 22.04' },
      mpi: { preExecutionCommand: 'module load mpi/solver' },
    });
    const r = submit(s, custom);
    expect(r.ok ? [] : r.errors).toEqual([
      expect.objectContaining({ path: 'mpi.preExecutionCommand', message: expect.stringContaining('did you mean "mpi/solver-mpi"?') }),
    ]);
    expect(parseCustomNodeImages('{"x":1}', problems)).toEqual([]);
    expect(problems).toEqual(['NODE_IMAGES_CUSTOM: must be a JSON array']);
  });

  it('refuses checks.image values other than refuse | warn', () => {
    const r = parseJobSpec({ ...wrong, checks: { image: 'ignore' } } as unknown as JobSpecInput);
    expect(r.ok ? [] : r.errors.map((e) => e.path)).toEqual(['checks.image']);
  });
});

describe('MPI generations', () => {
  it('explains the family by declared version and the fabric by VM size', () => {
    expect(presetChoice('intelmpi', '2018', 'auto', 'Standard_HC44rs')).toMatchObject({ family: 'intelmpi-2018', fabric: 'rdma' });
    expect(presetChoice('intelmpi', '2018', 'auto', 'Standard_HC44rs').reason).toMatch(
      /mpi.version "2018" → Intel MPI 2017–2018.*HC44rs has InfiniBand → InfiniBand/,
    );
    expect(presetChoice('intelmpi', undefined, 'auto', 'Standard_D4s_v5').reason).toMatch(/no mpi.version.*libfabric.*no InfiniBand → TCP/);
  });

  it('refuses Intel MPI 2017 over InfiniBand on a current (SR-IOV) size, naming the working choices', () => {
    const r = parseJobSpec(spec({ mpi: { runtime: 'intelmpi', version: '2017' } }));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toEqual([
      expect.objectContaining({
        path: 'mpi.version',
        message: expect.stringMatching(/Intel MPI 2017 has no InfiniBand path.*mpi.fabric "tcp".*"2018".*"2021"/),
      }),
    ]);
    expect(parseJobSpec(spec({ mpi: { runtime: 'intelmpi', version: '2017', fabric: 'tcp' } })).ok).toBe(true);
    expect(parseJobSpec(spec({ mpi: { runtime: 'intelmpi', version: '2018' } })).ok).toBe(true);
  });

  it('refuses a CUDA older than the GPU of the size (CUDA 8 on an A100)', () => {
    const r = parseJobSpec(spec({ pool: { vmSize: 'Standard_ND96asr_v4' }, container: { runtime: 'docker', images: ['cntk:2.1-gpu'], cuda: '8.0' } }));
    expect(r.ok ? [] : r.errors).toEqual([
      expect.objectContaining({ path: 'container.cuda', message: expect.stringMatching(/CUDA 8.0 has no kernels for .*A100.*CUDA 11.0 or later/) }),
    ]);
    expect(parseJobSpec(spec({ pool: { vmSize: 'Standard_ND96asr_v4' }, container: { runtime: 'docker', images: ['a:1'], cuda: '11.8' } })).ok).toBe(true);
    expect(
      generationIssues({ pool: { vmSize: 'Standard_HB120rs_v3' }, container: { runtime: 'docker', cuda: '8.0' }, mpi: { runtime: 'openmpi', fabric: 'auto' } }),
    ).toEqual([]);
  });
});
