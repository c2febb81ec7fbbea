/**
 * The Shipyard importer on hand-written files (pure: cli/import/shipyard): broken YAML with its line, files that are
 * not Shipyard files, unknown keys (reported, not fatal), task kinds a job spec cannot hold, credentials (reported by
 * path, never copied anywhere), registry identities, launcher choices and value conversions.
 */
import fc from 'fast-check';
import YAML from 'yaml';
import { importShipyard, type ImportResult, type ShipyardInput } from '../../cli/import/shipyard/importShipyard';
import { formatReport } from '../../cli/import/shipyard/reportTable';
import { leafPaths } from '../../cli/import/shipyard/report';
import { parseDockerRunOptions } from '../../cli/import/shipyard/containerOptions';
import { shipyardTimespanToIso, successorVmSize, toShmSize, toJobId } from '../../cli/import/shipyard/values';
import { parseJobSpec } from '../../shared/core/spec';

const POOL = `pool_specification:
  id: hb-pool
  vm_configuration:
    platform_image:
      publisher: microsoft-dsvm
      offer: ubuntu-hpc
      sku: '2204'
  vm_count:
    dedicated: 4
    low_priority: 0
  vm_size: Standard_HB120rs_v3
  inter_node_communication_enabled: true
`;

const JOBS = `job_specifications:
- id: cfd
  auto_complete: true
  tasks:
  - docker_image: myregistry.azurecr.io/cfd/solver:3.1
    environment_variables:
      CASE: motorbike
    multi_instance:
      num_instances: pool_current_dedicated
      pre_execution_command: source /opt/solver/env.sh
      mpi:
        runtime: openmpi
        processes_per_node: nproc
    command: solver -parallel
`;

function imp(files: Partial<Record<keyof ShipyardInput, string>>): ImportResult {
  const f = (name: string, text: string | undefined) => (text === undefined ? undefined : { name, text });
  return importShipyard({
    pool: f('pool.yaml', files.pool ?? POOL)!,
    jobs: f('jobs.yaml', files.jobs ?? JOBS)!,
    ...(files.config !== undefined ? { config: f('config.yaml', files.config) } : {}),
    ...(files.credentials !== undefined ? { credentials: f('credentials.yaml', files.credentials) } : {}),
  });
}

const entry = (r: ImportResult, path: string) => r.entries.find((e) => e.path === path);
const specOf = (r: ImportResult, i = 0) => {
  const parsed = parseJobSpec(r.specs[i].yaml, 'application/yaml');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.spec;
};

describe('a file that cannot be read as Shipyard configuration', () => {
  it('names the file, the line and the column of a YAML syntax error; nothing is imported', () => {
    const r = imp({ jobs: 'job_specifications:\n- id: a\n  tasks:\n    - command: x\n   bad: [1, 2\n' });
    expect(r.outcome).toBe('error');
    expect(r.specs).toEqual([]);
    expect(r.problems[0]).toMatchObject({ file: 'jobs.yaml', line: expect.any(Number), column: expect.any(Number) });
    expect(r.problems[0].message).toMatch(/^YAML syntax error/);
    expect(r.problems[0].line).toBeGreaterThanOrEqual(4);
  });

  it("refuses a key given twice in one mapping, at the second one's line (Shipyard's loader refuses it too)", () => {
    const r = imp({ pool: POOL.replace('  vm_size: Standard_HB120rs_v3\n', '  vm_size: Standard_HB120rs_v3\n  vm_size: Standard_HC44rs\n') });
    expect(r.problems).toEqual([{ file: 'pool.yaml', message: 'YAML error: the key "vm_size" appears twice in one mapping', line: 12, column: 3 }]);
  });

  it('says which top-level key a file lacks (a jobs file passed as the pool file)', () => {
    const r = imp({ pool: JOBS });
    expect(r.outcome).toBe('error');
    expect(r.problems).toEqual([{ file: 'pool.yaml', message: 'not a Shipyard pool file: it needs a top-level "pool_specification" that is a mapping' }]);
  });
});

describe('an exact import', () => {
  it('a Shipyard job with a supported image, an InfiniBand size and a private ACR maps every setting exactly except the registry identity', () => {
    const r = imp({});
    expect(r.problems).toEqual([]);
    expect(r.specs.map((s) => s.file)).toEqual(['cfd.yaml']);
    const spec = specOf(r);
    expect(spec).toMatchObject({
      name: 'cfd',
      tags: { 'shipyard-pool': 'hb-pool', 'shipyard-job': 'cfd' },
      pool: {
        vmSize: 'Standard_HB120rs_v3',
        nodes: 4,
        image: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204' },
        nodeAgentSku: 'batch.node.ubuntu 22.04',
      },
      container: { runtime: 'docker', images: ['myregistry.azurecr.io/cfd/solver:3.1'], registry: { server: 'myregistry.azurecr.io', identity: 'managed' } },
      mpi: {
        runtime: 'openmpi',
        processesPerNode: 'nproc',
        options: ['--oversubscribe'],
        env: { CASE: 'motorbike' },
        preExecutionCommand: 'source /opt/solver/env.sh',
        command: 'solver -parallel',
      },
      cleanup: { autoComplete: true },
    });
    expect(r.entries.filter((e) => e.status !== 'mapped')).toEqual([]);
    expect(r.outcome).toBe('exact');
    // The ACR identity is a choice the user must know about: it is said on the field.
    expect(r.specs[0].yaml).toMatch(/# myregistry\.azurecr\.io is an Azure Container Registry without credentials[^\n]*AcrPull/);
  });

  it('every value carries a comment naming its Shipyard setting, and the YAML is what the spec object says', () => {
    const r = imp({});
    const yaml = r.specs[0].yaml;
    for (const origin of [
      'pool.yaml: pool_specification.vm_size',
      'pool.yaml: pool_specification.vm_count.dedicated',
      'jobs.yaml: job_specifications[0].tasks[0].multi_instance.mpi.runtime',
      'jobs.yaml: job_specifications[0].tasks[0].command',
      'jobs.yaml: job_specifications[0].tasks[0].environment_variables.CASE',
    ]) {
      expect(yaml).toContain(`# from ${origin}`);
    }
    expect(YAML.parse(yaml)).toEqual(r.specs[0].spec);
  });
});

describe('settings that do not map', () => {
  it('reports unknown keys with their line and carries on', () => {
    const r = imp({
      pool: POOL.replace('  inter_node_communication_enabled: true\n', '  inter_node_communication_enabled: true\n  vm_sizes: Standard_HC44rs\n'),
      jobs: JOBS.replace('        processes_per_node: nproc\n', '        processes_per_node: nproc\n        runtim: intelmpi\n'),
    });
    expect(r.specs).toHaveLength(1);
    expect(specOf(r).pool.vmSize).toBe('Standard_HB120rs_v3');
    expect(entry(r, 'pool_specification.vm_sizes')).toMatchObject({ status: 'unsupported', unknownKey: true, line: 13, file: 'pool.yaml' });
    expect(entry(r, 'job_specifications[0].tasks[0].multi_instance.mpi.runtim')).toMatchObject({ status: 'unsupported', unknownKey: true, line: 14 });
    expect(r.outcome).toBe('partial');
    expect(formatReport(r)).toMatch(/unsupported \(unknown key\)\s+13\s+pool_specification\.vm_sizes/);
  });

  it('reports task kinds a job spec cannot hold, and imports what it can', () => {
    const jobs = `job_specifications:
- id: mixed
  tasks:
  - docker_image: myregistry.azurecr.io/cfd/solver:3.1
    multi_instance:
      num_instances: 4
      mpi: { runtime: mpich, processes_per_node: 8 }
    command: solver
  - docker_image: myregistry.azurecr.io/cfd/post:1
    command: post-process
  merge_task:
    docker_image: myregistry.azurecr.io/cfd/post:1
    command: merge
- id: sweep
  tasks:
  - docker_image: busybox
    task_factory:
      parametric_sweep:
        product: [{ start: 0, stop: 10, step: 1 }]
    command: echo {0}
- id: bag
  tasks:
  - { docker_image: busybox, command: echo a }
  - { docker_image: busybox, command: echo b }
- id: one
  tasks:
  - docker_image: busybox
    command: echo single
`;
    const r = imp({ jobs });
    const kind = (path: string) => entry(r, path);
    expect(kind('job_specifications[0].tasks[1]')).toMatchObject({
      status: 'unsupported',
      note: expect.stringMatching(/^unsupported task kind: a plain \(single-node\) task beside the job's MPI task/),
    });
    expect(kind('job_specifications[0].merge_task')).toMatchObject({
      status: 'unsupported',
      note: expect.stringMatching(/^unsupported task kind: a merge task/),
    });
    expect(kind('job_specifications[1].tasks[0]')).toMatchObject({
      status: 'unsupported',
      note: expect.stringMatching(/^unsupported task kind: a task factory/),
    });
    expect(kind('job_specifications[2].tasks[0]')).toMatchObject({
      status: 'unsupported',
      note: expect.stringMatching(/^unsupported task kind: one of several plain/),
    });
    expect(kind('job_specifications[2].tasks[1]')).toMatchObject({ status: 'unsupported' });
    // The MPI task and the one-task job become specs; the sweep and the bag do not.
    expect(r.specs.map((s) => s.file)).toEqual(['mixed.yaml', 'one.yaml']);
    expect(specOf(r, 0)).toMatchObject({ pool: { nodes: 4 }, mpi: { runtime: 'mpich', processesPerNode: 8, command: 'solver' } });
    expect(specOf(r, 1)).toMatchObject({
      pool: { nodes: 1 },
      mpi: { launcher: { mode: 'custom' }, command: 'echo single', coordinationCommand: 'while :; do sleep 3600; done' },
    });
    expect(kind('job_specifications[3].tasks[0].command')).toMatchObject({ status: 'approximated', note: expect.stringMatching(/single-node task/) });
    // Settings of jobs without a spec are not silently kept: the sweep's id went nowhere.
    expect(kind('job_specifications[1].id')).toMatchObject({ status: 'unsupported', note: expect.stringMatching(/^no job spec was generated to carry it/) });
  });

  it('a jobs file with no task that can become a job spec imports nothing and is an error outcome', () => {
    const r = imp({ jobs: 'job_specifications:\n- id: sweep\n  tasks:\n  - docker_image: busybox\n    task_factory: { repeat: 3 }\n    command: "true"\n' });
    expect(r.specs).toEqual([]);
    expect(r.outcome).toBe('error');
    expect(entry(r, 'job_specifications[0].tasks[0]')).toMatchObject({ status: 'unsupported' });
  });

  it('every setting of the files is in the report, even inside blocks reported as a whole', () => {
    const r = imp({
      pool: `${POOL}  ssh:\n    username: shipyard\n    expiry_days: 7\n  autoscale:\n    evaluation_interval: 00:05:00\n    formula: '$TargetDedicatedNodes = 2;'\n`,
    });
    expect(entry(r, 'pool_specification.ssh')).toMatchObject({ status: 'unsupported', note: expect.stringMatching(/no login user/) });
    expect(entry(r, 'pool_specification.autoscale')).toMatchObject({ status: 'unsupported', note: expect.stringMatching(/fixed size/) });
  });
});

describe('credentials never cross', () => {
  const credentials = `credentials:
  batch:
    account_key: QmF0Y2hLZXlWYWx1ZQ==
    account_service_url: https://acct.westeurope.batch.azure.com
  storage:
    mystorage:
      account: mystorage
      account_key: U3RvcmFnZUtleVZhbHVl
  docker_registry:
    myregistry.azurecr.io:
      username: puller
      password: Sup3r-S3cret-Passw0rd
`;
  const SECRETS = ['QmF0Y2hLZXlWYWx1ZQ==', 'U3RvcmFnZUtleVZhbHVl', 'Sup3r-S3cret-Passw0rd', 'hunter2-db-pass', 'sig=c2lnbmF0dXJl', 'rdp-passw0rd'];
  const jobs = JOBS.replace('      CASE: motorbike\n', '      CASE: motorbike\n      DB_PASSWORD: hunter2-db-pass\n');
  const pool = `${POOL}  rdp:\n    username: admin\n    password: rdp-passw0rd\n  resource_files:\n  - blob_source: https://mystorage.blob.core.windows.net/software/setup.sh?sv=2020-08-04&sig=c2lnbmF0dXJl\n    file_path: setup.sh\n  additional_node_prep:\n    commands:\n      pre: [bash setup.sh]\n`;
  const r = imp({ jobs, pool, credentials });

  it('reports each credential by file and path, never its value', () => {
    expect(r.secrets.map((s) => `${s.file} ${s.path} ${s.kind}`).sort()).toEqual([
      'credentials.yaml credentials.batch.account_key account key',
      'credentials.yaml credentials.docker_registry["myregistry.azurecr.io"].password password',
      'credentials.yaml credentials.storage.mystorage.account_key account key',
      'jobs.yaml job_specifications[0].tasks[0].environment_variables.DB_PASSWORD secret value',
      'pool.yaml pool_specification.rdp.password password',
      'pool.yaml pool_specification.resource_files[0].blob_source SAS',
    ]);
    const everything = JSON.stringify(r) + formatReport(r);
    const yaml = r.specs.map((s) => s.yaml).join('\n');
    for (const secret of SECRETS) {
      // The value may only be in the input the caller gave; nothing the importer produced holds it.
      expect(JSON.stringify({ entries: r.entries, secrets: r.secrets, specs: r.specs.map((s) => ({ ...s, spec: s.spec })) })).not.toContain(secret);
      expect(yaml).not.toContain(secret);
      expect(everything).not.toContain(secret);
    }
  });

  it('replaces the registry password by a secret reference the user must fill, with the user name kept', () => {
    const spec = specOf(r);
    expect(spec.container.registry).toEqual({
      server: 'myregistry.azurecr.io',
      identity: { secretRef: 'REGISTRY_PASSWORD_MYREGISTRY_AZURECR_IO', username: 'puller' },
    });
    expect(r.specs[0].yaml).toMatch(/# TODO: create the app setting REGISTRY_PASSWORD_MYREGISTRY_AZURECR_IO holding the registry password/);
    expect(entry(r, 'credentials.docker_registry["myregistry.azurecr.io"].password')).toMatchObject({
      status: 'approximated',
      secret: true,
      target: 'container.registry.identity.secretRef',
    });
  });

  it('keeps the blob of a SAS URL (read through a SAS the pipeline mints), drops the SAS, and leaves the secret environment variable out', () => {
    const spec = specOf(r);
    expect(spec.pool.startTask?.resourceFiles).toEqual([{ account: 'mystorage', container: 'software', blob: 'setup.sh', path: 'setup.sh' }]);
    expect(spec.mpi.env).toEqual({ CASE: 'motorbike' });
    expect(entry(r, 'job_specifications[0].tasks[0].environment_variables.DB_PASSWORD')).toMatchObject({ status: 'unsupported', secret: true });
    expect(entry(r, 'pool_specification.rdp.password')).toMatchObject({ status: 'unsupported', secret: true });
  });

  it('a SAS inside a command is removed from the command the spec carries, reported, and flagged as a TODO', () => {
    const c = imp({
      jobs: JOBS.replace(
        '    command: solver -parallel',
        '    command: curl -o in.dat "https://acct01.blob.core.windows.net/c/in.dat?sv=2021-08-06&sig=QUJDREVGRw%3D%3D"; solver -parallel',
      ),
    });
    expect(specOf(c).mpi.command).toBe('curl -o in.dat "https://acct01.blob.core.windows.net/c/in.dat"; solver -parallel');
    expect(entry(c, 'job_specifications[0].tasks[0].command')).toMatchObject({ status: 'mapped' });
    expect(c.entries.filter((e) => e.path === 'job_specifications[0].tasks[0].command' && e.secret)).toEqual([
      expect.objectContaining({ status: 'approximated', target: 'mpi.command', note: expect.stringMatching(/^a SAS in the value: removed/) }),
    ]);
    expect(c.specs[0].yaml).toMatch(/# TODO: mpi\.command had a SAS in the Shipyard file/);
    expect(JSON.stringify(c) + formatReport(c)).not.toContain('QUJDREVGRw');
  });

  it('a Key Vault secret becomes the app setting holding a reference to it (jobs may name only declared settings)', () => {
    const kv = 'https://myvault.vault.azure.net/secrets/acr-pull';
    const k = imp({
      credentials: `credentials:\n  docker_registry:\n    myregistry.azurecr.io:\n      username: puller\n      password_keyvault_secret_id: ${kv}\n`,
    });
    expect(specOf(k).container.registry).toEqual({
      server: 'myregistry.azurecr.io',
      identity: { secretRef: 'REGISTRY_PASSWORD_MYREGISTRY_AZURECR_IO', username: 'puller' },
    });
    expect(k.specs[0].yaml).toContain(`a Key Vault reference to ${kv}`);
    expect(k.specs[0].yaml).toMatch(/REGISTRY_CREDENTIALS \(myregistry\.azurecr\.io=REGISTRY_PASSWORD_MYREGISTRY_AZURECR_IO\)/);
    expect(k.secrets).toEqual([]);
    expect(entry(k, 'credentials.docker_registry["myregistry.azurecr.io"].password_keyvault_secret_id')).toMatchObject({ status: 'mapped' });
  });
});

describe('launcher choices', () => {
  const mi = (mpi: string, command = 'solver -parallel') =>
    JOBS.replace(
      '      mpi:\n        runtime: openmpi\n        processes_per_node: nproc\n    command: solver -parallel\n',
      `      mpi:\n${mpi}    command: ${command}\n`,
    );

  it("a processes_per_node expression the spec has no word for keeps Shipyard's own line in a custom launch script", () => {
    const r = imp({ jobs: mi('        runtime: intelmpi\n        processes_per_node: echo 24\n') });
    const spec = specOf(r);
    expect(spec.mpi.launcher.mode).toBe('custom');
    expect(spec.mpi.command).toBe('mpirun -hosts "$AZ_BATCH_HOST_LIST" -np $(expr "$MPIJOB_NODES" \\* $(echo 24)) -perhost $(echo 24) solver -parallel');
    expect(entry(r, 'job_specifications[0].tasks[0].multi_instance.mpi.processes_per_node')).toMatchObject({ status: 'mapped', target: 'mpi.command' });
  });

  it("GPU counting and nproc-like expressions become the spec's words", () => {
    const gpu = imp({
      jobs: mi('        runtime: openmpi\n        processes_per_node: nvidia-smi -L | wc -l\n'),
      pool: POOL.replace('Standard_HB120rs_v3', 'Standard_ND96asr_v4'),
    });
    expect(specOf(gpu).mpi.processesPerNode).toBe('gpus');
    expect(specOf(gpu).container.gpus).toBe(true);
    const cpus = imp({ jobs: mi('        runtime: openmpi\n        processes_per_node: getconf _NPROCESSORS_ONLN\n') });
    expect(specOf(cpus).mpi.processesPerNode).toBe('nproc');
    expect(entry(cpus, 'job_specifications[0].tasks[0].multi_instance.mpi.processes_per_node')).toMatchObject({ status: 'approximated' });
  });

  it('intelmpi-ofa (and its docs spelling) is Intel MPI 2018; executable paths and options carry over', () => {
    const r = imp({
      jobs: mi(
        '        runtime: intelmpi_ofa\n        executable_path: /opt/Intel/bin/mpirun\n        processes_per_node: 2\n        options:\n        - -genv I_MPI_DEBUG 5\n',
      ),
    });
    const spec = specOf(r);
    expect(spec.mpi).toMatchObject({
      runtime: 'intelmpi',
      version: '2018',
      processesPerNode: 2,
      options: ['-genv', 'I_MPI_DEBUG', '5'],
      launcher: { mode: 'managed', executable: '/opt/Intel/bin/mpirun' },
    });
    expect(entry(r, 'job_specifications[0].tasks[0].multi_instance.mpi.executable_path')).toMatchObject({
      status: 'approximated',
      note: expect.stringMatching(/Shipyard lowercased it/),
    });
    expect(entry(r, 'job_specifications[0].tasks[0].multi_instance.mpi.runtime')).toMatchObject({ status: 'approximated' });
  });

  it('several multi-instance tasks in one job make one spec each; task dependencies and the priority carry over', () => {
    const jobs = `job_specifications:
- id: pair
  priority: 100
  tasks:
  - id: solve
    docker_image: myregistry.azurecr.io/cfd/solver:3.1
    multi_instance: { num_instances: 4, mpi: { runtime: openmpi, processes_per_node: 4 } }
    command: solve
  - id: post
    docker_image: myregistry.azurecr.io/cfd/solver:3.1
    depends_on: [solve, cleanup]
    multi_instance: { num_instances: 2, mpi: { runtime: openmpi, processes_per_node: 1 } }
    command: post
  - id: cleanup
    docker_image: busybox
    command: "true"
`;
    const r = imp({ jobs });
    expect(r.specs.map((s) => s.file)).toEqual(['pair-solve.yaml', 'pair-post.yaml']);
    expect(specOf(r, 1).pool.nodes).toBe(2);
    // The parent gets an id its dependent names; the plain task it also waited for did not become a spec.
    expect(specOf(r, 0)).toMatchObject({ id: 'pair-solve', priority: 100 });
    expect(specOf(r, 1)).toMatchObject({ priority: 100, dependsOn: [{ job: 'pair-solve', condition: 'succeeded' }] });
    expect(specOf(r, 1).id).toBeUndefined();
    expect(entry(r, 'job_specifications[0].tasks[1].depends_on[0]')).toMatchObject({ status: 'mapped', target: 'dependsOn' });
    expect(entry(r, 'job_specifications[0].tasks[1].depends_on[1]')).toMatchObject({
      status: 'unsupported',
      note: expect.stringMatching(/cleanup of this job did not become/),
    });
    expect(entry(r, 'job_specifications[0].priority')).toMatchObject({ status: 'mapped', target: 'priority' });
    expect(r.specs[1].yaml).toContain('# TODO: submit pair-solve.yaml first');
    expect(entry(r, 'job_specifications[0].tasks[1].multi_instance.num_instances')).toMatchObject({
      status: 'approximated',
      note: expect.stringMatching(/Shipyard's pool had 4/),
    });
  });
});

describe('values', () => {
  it('time spans, shm sizes, ids', () => {
    expect(shipyardTimespanToIso('02:00:00')).toBe('PT2H');
    expect(shipyardTimespanToIso('7.00:00:00')).toBe('P7D');
    expect(shipyardTimespanToIso('1.02:03:04')).toBe('P1DT2H3M4S');
    expect(shipyardTimespanToIso('2h')).toBeUndefined();
    expect(toShmSize('256m')).toBe('256m');
    expect(toShmSize('8G')).toBe('8g');
    expect(toShmSize('268435456')).toBe('262144k');
    expect(toShmSize('1gb')).toBe('1g');
    expect(toShmSize('lots')).toBeUndefined();
    expect(toJobId('<job id>')).toBe('job-id');
    expect(toJobId('My_Job.1')).toBe('my-job-1');
  });

  it('retired sizes get a successor of the same kind', () => {
    expect(successorVmSize('STANDARD_H16R')).toBe('Standard_HB120rs_v3');
    expect(successorVmSize('Standard_A9')).toBe('Standard_HB120rs_v3');
    expect(successorVmSize('STANDARD_NC24R')).toBe('Standard_ND96asr_v4');
    expect(successorVmSize('STANDARD_NC6')).toBe('Standard_NC24ads_A100_v4');
    expect(successorVmSize('STANDARD_NC24')).toBe('Standard_NC96ads_A100_v4');
    expect(successorVmSize('Standard_HB120rs_v3')).toBeUndefined();
  });

  it('docker run options against the allowlist', () => {
    const p = parseDockerRunOptions([
      '--cap-add=sys_nice',
      '--cap-add ALL',
      '-v /dev:/dev',
      '-v /scratch:/scratch',
      '--ipc=host',
      '--ulimit memlock=-1:-1',
      '--net=host',
      '-e OMP_NUM_THREADS=4',
    ]);
    expect(p.verdicts.map((v) => v.status)).toEqual(['mapped', 'unsupported', 'unsupported', 'mapped', 'unsupported', 'mapped', 'mapped', 'approximated']);
    expect(p.runOptions).toEqual({
      capAdd: ['SYS_NICE'],
      binds: [{ source: '/scratch', target: '/scratch', readOnly: false }],
      ulimits: { memlock: 'unlimited' },
    });
    expect(p.env).toEqual({ OMP_NUM_THREADS: '4' });
  });
});

describe('data: files, scratch, mounts, outputs', () => {
  const config = `global_resources:
  docker_images: [myregistry.azurecr.io/cfd/solver:3.1]
  volumes:
    shared_data_volumes:
      refdata:
        volume_driver: azureblob
        storage_account_settings: datastore
        azure_blob_container_name: reference
        container_path: $AZ_BATCH_NODE_SHARED_DIR/ref
        bind_options: ro
      homes:
        volume_driver: azurefile
        storage_account_settings: datastore
        azure_file_share_name: homes
        container_path: /home/shared
      beegfs:
        volume_driver: storage_cluster
        container_path: /scratch
      lustre:
        volume_driver: custom_linux_mount
        container_path: /lustre
        fstab_entry: { fs_spec: "10.0.0.9@tcp:/lfs", fs_vfstype: lustre, fs_mntops: defaults }
      nfshome:
        volume_driver: custom_linux_mount
        container_path: /nfs
        fstab_entry: { fs_spec: "fileserver.corp.example:/export/home", fs_vfstype: nfs4, fs_mntops: "vers=4.1,hard" }
      licenses:
        volume_driver: custom_linux_mount
        container_path: /lic
        fstab_entry: { fs_spec: //fs01.corp.example/lic, fs_vfstype: cifs, fs_mntops: "username=svc,password=Cifs-Secret-9" }
`;
  const credentials = 'credentials:\n  storage:\n    datastore:\n      account: hpcdata01\n';
  const jobs = `job_specifications:
- id: cfd
  auto_scratch: true
  shared_data_volumes: [refdata, homes, beegfs, lustre, nfshome, licenses]
  input_data:
    azure_storage:
    - storage_account_settings: datastore
      remote_path: cases/motorbike
      local_path: case
      include: ["*.stl"]
    - storage_account_settings: datastore
      remote_path: shares/meshes
      is_file_share: true
  tasks:
  - docker_image: myregistry.azurecr.io/cfd/solver:3.1
    resource_files:
    - { blob_source: "https://example.org/setup.sh", file_path: setup.sh, file_mode: "0755" }
    - { blob_source: "http://example.org/plain.txt", file_path: plain.txt }
    - { blob_source: "https://hpcdata01.blob.core.windows.net/software/solver.tgz?sv=2021&sig=U2FzU2ln", file_path: solver.tgz }
    output_data:
      azure_storage:
      - storage_account_settings: datastore
        remote_path: results/motorbike
        local_path: $AZ_BATCH_TASK_WORKING_DIR/postProcessing
        condition: tasksuccess
        include: ["**/*.dat"]
    multi_instance:
      num_instances: 4
      resource_files:
      - { blob_source: "https://example.org/hosts.conf", file_path: conf/hosts.conf }
      mpi: { runtime: openmpi, processes_per_node: 96 }
    command: solver -parallel
`;
  const r = imp({ jobs, config, credentials });
  const spec = specOf(r);

  it('files: URLs and blobs every node gets in the working directory; SAS dropped and reported; plain http refused', () => {
    expect(spec.files).toEqual([
      { account: 'hpcdata01', container: 'cases', prefix: 'motorbike', path: 'case' },
      { url: 'https://example.org/setup.sh', path: 'setup.sh', mode: '0755' },
      { account: 'hpcdata01', container: 'software', blob: 'solver.tgz', path: 'solver.tgz' },
      { url: 'https://example.org/hosts.conf', path: 'conf/hosts.conf' },
    ]);
    expect(entry(r, 'job_specifications[0].tasks[0].resource_files[1].blob_source')).toMatchObject({
      status: 'unsupported',
      note: expect.stringMatching(/https:\/\/ URL/),
    });
    expect(entry(r, 'job_specifications[0].tasks[0].resource_files[2].blob_source')).toMatchObject({ status: 'approximated', secret: true });
    expect(entry(r, 'job_specifications[0].input_data.azure_storage[0].include')).toMatchObject({
      status: 'approximated',
      note: expect.stringMatching(/not applied/),
    });
    expect(entry(r, 'job_specifications[0].input_data.azure_storage[1].is_file_share')).toMatchObject({
      status: 'unsupported',
      note: expect.stringMatching(/mount/),
    });
    expect(r.specs[0].yaml).not.toContain('U2FzU2ln');
  });

  it('auto_scratch is the shared scratch, wired into the commands (no TODO left)', () => {
    expect(spec.scratch).toEqual({ kind: 'masterNfs' });
    expect(entry(r, 'job_specifications[0].auto_scratch')).toMatchObject({ status: 'approximated', target: 'scratch' });
    expect(r.specs[0].yaml).toContain('# CHANGED: mpi.preExecutionCommand first links $AZ_BATCH_TASK_DIR/auto_scratch to $MPIJOB_SCRATCH');
    expect(r.specs[0].yaml).not.toContain('TODO: the shared scratch');
    expect(spec.mpi.preExecutionCommand).toMatch(
      /^if \[ -n "\$\{MPIJOB_SCRATCH:-\}" \]; then ln -sfn "\$MPIJOB_SCRATCH" "\$AZ_BATCH_TASK_DIR\/auto_scratch"; fi/,
    );
  });

  it('shared data volumes become pool mounts; secrets by reference only; what Batch cannot mount is unsupported', () => {
    expect(spec.mounts).toEqual([
      { name: 'refdata', blobfuse: { account: 'hpcdata01', container: 'reference', readOnly: true } },
      { name: 'homes', azureFiles: { account: 'hpcdata01', share: 'homes', secretRef: 'HPCDATA01_KEY' } },
      { name: 'beegfs', nfs: { source: 'beegfs-nfs-server-todo:/data' } },
      { name: 'nfshome', nfs: { source: 'fileserver.corp.example:/export/home', options: '-o vers=4.1,hard' } },
      // The password in its fstab options is replaced by a reference the user publishes.
      { name: 'licenses', cifs: { source: '//fs01.corp.example/lic', username: 'svc', secretRef: 'LICENSES_PASSWORD' } },
    ]);
    expect(entry(r, 'job_specifications[0].shared_data_volumes[3]')).toMatchObject({
      status: 'unsupported',
      note: expect.stringMatching(/"lustre" cannot be mounted by Batch/),
    });
    expect(r.secrets.map((s) => `${s.path} ${s.kind}`)).toEqual([
      'global_resources.volumes.shared_data_volumes.licenses.fstab_entry.fs_mntops password',
      'job_specifications[0].tasks[0].resource_files[2].blob_source SAS',
    ]);
    expect(entry(r, 'global_resources.volumes.shared_data_volumes.licenses.fstab_entry.fs_mntops')).toMatchObject({
      status: 'approximated',
      secret: true,
      target: 'mounts',
    });
    expect(JSON.stringify(r.entries) + r.specs[0].yaml + formatReport(r)).not.toContain('Cifs-Secret-9');
    for (const todo of [
      'MOUNT_SECRET_HPCDATA01_KEY',
      'MOUNT_SECRET_LICENSES_PASSWORD',
      'nfs.source is a placeholder',
      'is at $AZ_BATCH_NODE_MOUNTS_DIR/refdata, not $AZ_BATCH_NODE_SHARED_DIR/ref',
    ])
      expect(r.specs[0].yaml).toContain(todo);
  });

  it('output_data becomes outputs: the account the alias names, the container and prefix, the condition, the patterns', () => {
    expect(spec.outputs).toMatchObject({
      account: 'hpcdata01',
      container: 'results',
      prefix: 'motorbike',
      when: 'success',
      files: [{ pattern: 'postProcessing/**/*.dat', from: 'workdir' }],
    });
    expect(entry(r, 'job_specifications[0].tasks[0].output_data.azure_storage[0].condition')).toMatchObject({ status: 'mapped', target: 'outputs.when' });
  });
});

describe('hostile and broken input', () => {
  const base = { pool: YAML.parse(POOL), jobs: YAML.parse(JOBS) };
  type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
  const anyValue: fc.Arbitrary<Json> = fc.oneof(
    fc.constant(null),
    fc.boolean(),
    fc.integer({ min: -5, max: 200 }),
    fc.string({ maxLength: 12 }),
    fc.constantFrom('nproc', 'pool_current_dedicated', 'intelmpi-ofa', 'STANDARD_H16R', '-v /dev:/dev', 'https://x.blob.core.windows.net/c/b?sig=abc'),
    fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 }),
    fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 6 }), { maxKeys: 3 }),
  );

  /** Replaces, deletes or adds a value somewhere in a copy of the document. */
  function mutate(doc: Json, steps: { pick: number; action: number; value: Json; key: string }[]): Json {
    const copy = structuredClone(doc);
    for (const step of steps) {
      const spots: { parent: Record<string, Json> | Json[]; key: string | number }[] = [];
      const walk = (v: Json) => {
        if (Array.isArray(v))
          v.forEach((x, i) => {
            spots.push({ parent: v, key: i });
            walk(x);
          });
        else if (v && typeof v === 'object')
          for (const k of Object.keys(v)) {
            spots.push({ parent: v, key: k });
            walk(v[k]);
          }
      };
      walk(copy);
      if (!spots.length) continue;
      const { parent, key } = spots[step.pick % spots.length];
      if (step.action === 0) (parent as Record<string, Json>)[key as string] = step.value;
      else if (step.action === 1 && !Array.isArray(parent)) delete parent[key as string];
      else if (!Array.isArray(parent)) parent[`${step.key}_x`] = step.value;
    }
    return copy;
  }

  it('never throws, reports every setting it was given, and writes only valid specs or says why', () => {
    const step = fc.record({
      pick: fc.nat(),
      action: fc.nat({ max: 2 }),
      value: anyValue,
      key: fc.string({ minLength: 1, maxLength: 6 }).filter((k) => /^[a-z_]+$/.test(k)),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 6 }), fc.array(step, { maxLength: 6 }), (poolSteps, jobSteps) => {
        const pool = YAML.stringify(mutate(base.pool, poolSteps));
        const jobs = YAML.stringify(mutate(base.jobs, jobSteps));
        const r = imp({ pool, jobs });
        if (r.problems.length) return expect(r.outcome).toBe('error');
        for (const [role, text] of [
          ['pool', pool],
          ['jobs', jobs],
        ] as const) {
          const entries = r.entries.filter((e) => e.role === role);
          for (const leaf of leafPaths(YAML.parse(text))) {
            if (leaf === '') continue;
            expect({ leaf, covered: entries.some((e) => e.path === leaf || leaf.startsWith(`${e.path}.`) || leaf.startsWith(`${e.path}[`)) }).toEqual({
              leaf,
              covered: true,
            });
          }
        }
        for (const s of r.specs) expect(s.errors.length === 0 || r.outcome === 'error').toBe(true);
        expect(JSON.stringify(r.entries) + r.specs.map((s) => s.yaml).join('')).not.toContain('sig=abc');
      }),
      { numRuns: Number(process.env.SHIPYARD_FUZZ_RUNS ?? 150), seed: Number(process.env.SHIPYARD_FUZZ_SEED ?? 20240611) },
    );
  });

  it('an empty file and a file that is a list are problems, not crashes', () => {
    expect(imp({ pool: '' }).problems[0].message).toMatch(/not a Shipyard pool file/);
    expect(imp({ jobs: '- a\n- b\n' }).problems[0].message).toMatch(/not a Shipyard jobs file/);
    expect(imp({ jobs: 'job_specifications: []\n' })).toMatchObject({ outcome: 'error', specs: [] });
  });
});
