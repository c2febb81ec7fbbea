import { readFileSync } from 'node:fs';
/**
 * The node tools' `docker` and `singularity` commands on an emulated node: container records (the contract with
 * the Batch emulator), run -d / exec / ps / logs / kill / rm / run --rm, the sshd placeholder, path and environment
 * mapping, compiling the demo MPI program with mpicc inside the "container", and singularity pull/exec.
 * Real processes and a real registry on loopback.
 */
import { execSync } from 'node:child_process';
import { mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { RegistryHandle, startRegistry } from '../../local/registry';
import { buildDemoImage } from '../../examples/images/buildDemoImage';
import { TestNode, cleanupNodes, makeBaseDir, makeNode, runTool } from './nodeHarness';

interface Record {
  name: string;
  image: string;
  env: { [k: string]: string };
  rootfs: string;
  workdir?: string;
  sshPort?: number;
  pid?: number;
  state: 'running' | 'exited';
}

let registry: RegistryHandle;
let base: string;
let node: TestNode;
let ref: string;

const readRecord = async (name: string): Promise<Record> =>
  JSON.parse(await readFile(path.join(node.root, 'containers', name, 'config.json'), 'utf8')) as Record;

function alive(pid: number): boolean {
  // A killed process stays a zombie until its new parent reaps it; in a container without an init that reaps,
  // that can take a while. A zombie runs nothing: count it as gone.
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

async function childrenOf(pid: number): Promise<number[]> {
  const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  return text.split(/\s+/).filter(Boolean).map(Number);
}

beforeAll(async () => {
  base = await makeBaseDir('docker-shim-');
  registry = await startRegistry({ images: [await buildDemoImage({ fillerBytes: 32 * 1024 })] });
  ref = `${registry.host}/hpc/mpi-demo:1.0`;
  node = await makeNode(base, 'tvm-shim-0');
});

afterAll(async () => {
  await registry?.stop();
  if (base) await cleanupNodes(base);
});

test('run of an image not on the node pulls it first, as docker run does', async () => {
  const r = await runTool(node, 'docker', ['run', '--rm', ref, 'sh', '-c', 'echo "home=$MPI_DEMO_HOME"; exit 3']);
  expect(r.code).toBe(3);
  expect(r.stderr).toContain(`Unable to find image '${ref}' locally`);
  expect(r.stdout).toBe('home=/opt/mpi-demo\n');
  expect(await readdir(path.join(node.root, 'containers'))).toEqual([]); // --rm
  const images = await runTool(node, 'docker', ['images', '--format', '{{.Repository}}:{{.Tag}}']);
  expect(images.stdout.trim()).toBe(ref);
});

test("run of a tag the registry does not have fails with exit 125 and Docker's message", async () => {
  const r = await runTool(node, 'docker', ['run', '--rm', `${registry.host}/hpc/mpi-demo:nope`, 'true']);
  expect(r.code).toBe(125);
  expect(r.stderr).toContain(`docker: Error response from daemon: manifest for ${registry.host}/hpc/mpi-demo:nope not found`);
});

describe("a coordination container (run -d with the image's sshd command)", () => {
  const name = 'job1-hpc-mpi-demo';

  test('run -d records the container for the emulator: running, pid, sshPort 23, full environment, rootfs', async () => {
    const r = await runTool(node, 'docker', [
      'run',
      '-d',
      '--net=host',
      '--privileged',
      '--shm-size=1g',
      '--ulimit',
      'memlock=-1',
      '--device',
      '/dev/infiniband/uverbs0',
      '--name',
      name,
      '-e',
      'FOO=bar',
      '-v',
      `${node.root}:${node.root}`,
      '-w',
      node.taskDir,
      ref,
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^[a-f0-9]{64}$/);
    const rec = await readRecord(name);
    expect(rec).toMatchObject({
      name,
      image: ref,
      sshPort: 23,
      state: 'running',
      workdir: node.taskDir,
      rootfs: path.join(node.root, 'containers', name, 'rootfs'),
    });
    expect(rec.env).toMatchObject({ FOO: 'bar', MPI_DEMO_HOME: '/opt/mpi-demo', AZ_BATCH_NODE_ID: node.id, AZ_BATCH_NODE_ROOT_DIR: node.root });
    expect(rec.env.PATH.split(':')[0]).toBe(path.join(rec.rootfs, 'opt', 'mpi-demo', 'bin'));
    expect(alive(rec.pid as number)).toBe(true);
    expect((await stat(path.join(rec.rootfs, 'opt', 'mpi-demo', 'src', 'shardsum.c'))).isFile()).toBe(true);
    const inspect = await runTool(node, 'docker', [
      'inspect',
      '-f',
      '{{.State.Running}} {{.HostConfig.NetworkMode}} {{.HostConfig.Privileged}} {{json .HostConfig.Ulimits}} {{json .HostConfig.Devices}} {{.HostConfig.ShmSize}}',
      name,
    ]);
    expect(inspect.stdout.trim()).toBe('true host true ["memlock=-1"] ["/dev/infiniband/uverbs0"] 1g');
    const ps = await runTool(node, 'docker', ['ps', '--format', '{{.Names}} {{.State}}']);
    expect(ps.stdout.trim()).toBe(`${name} running`);
  });

  test('a second container with the same name is refused', async () => {
    const r = await runTool(node, 'docker', ['run', '-d', '--name', name, ref]);
    expect(r.code).toBe(125);
    expect(r.stderr).toContain(`The container name "/${name}" is already in use`);
  });

  test('exec runs in the container environment, with image paths and -e/-w applied', async () => {
    const r = await runTool(node, 'docker', [
      'exec',
      '-e',
      'X=1',
      '-w',
      '/opt/mpi-demo/src',
      name,
      'sh',
      '-c',
      'echo "$X $FOO $MPI_DEMO_HOME $AZ_BATCH_NODE_ID"; pwd',
    ]);
    expect(r.code).toBe(0);
    const rec = await readRecord(name);
    expect(r.stdout).toBe(`1 bar /opt/mpi-demo ${node.id}\n${path.join(rec.rootfs, 'opt', 'mpi-demo', 'src')}\n`);
    const abs = await runTool(node, 'docker', ['exec', name, '/opt/mpi-demo/bin/mpi-demo', 'home']);
    expect(abs.stdout.trim()).toBe(path.join(rec.rootfs, 'opt', 'mpi-demo'));
    const missing = await runTool(node, 'docker', ['exec', name, 'no-such-program']);
    expect(missing.code).toBe(126);
    expect(missing.stderr).toContain('executable file not found in $PATH');
  });

  test('the demo MPI program compiles with mpicc inside the container', async () => {
    const r = await runTool(node, 'docker', ['exec', name, 'mpi-demo', 'build']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const rec = await readRecord(name);
    expect((await stat(path.join(rec.rootfs, 'opt', 'mpi-demo', 'bin', 'shardsum'))).mode & 0o111).not.toBe(0);
  });

  test('rm without -f refuses a running container; kill ends it and the record says exited', async () => {
    const rm = await runTool(node, 'docker', ['rm', name]);
    expect(rm.code).toBe(1);
    expect(rm.stderr).toContain('container is running: stop the container before removing or force remove');
    const { pid } = await readRecord(name);
    const kill = await runTool(node, 'docker', ['kill', name]);
    expect([kill.code, kill.stdout.trim()]).toEqual([0, name]);
    expect(alive(pid as number)).toBe(false);
    expect((await readRecord(name)).state).toBe('exited');
    const inspect = await runTool(node, 'docker', ['inspect', '-f', '{{.State.Status}} {{.State.ExitCode}}', name]);
    expect(inspect.stdout.trim()).toBe('exited 137');
    const rmv = await runTool(node, 'docker', ['rm', '-v', name]);
    expect(rmv.code).toBe(0);
    expect(await readdir(path.join(node.root, 'containers'))).toEqual([]);
  });
});

test('a detached command: logs, exit code picked up after it ends, and SIGKILL of the recorded pid ends the whole container', async () => {
  const done = await runTool(node, 'docker', ['run', '-d', '--name', 'short', ref, 'sh', '-c', 'echo out-line; echo err-line >&2; exit 4']);
  expect(done.code).toBe(0);
  for (let i = 0; i < 100 && (await readRecord('short')).state === 'running'; i++) await new Promise((r) => setTimeout(r, 50));
  expect((await readRecord('short')).state).toBe('exited');
  const logs = await runTool(node, 'docker', ['logs', 'short']);
  expect([logs.stdout, logs.stderr]).toEqual(['out-line\n', 'err-line\n']);
  const ps = await runTool(node, 'docker', ['ps', '-a', '--filter', 'name=short', '--format', '{{.Status}}']);
  expect(ps.stdout).toMatch(/^Exited \(4\) /);
  expect((await runTool(node, 'docker', ['rm', 'short'])).code).toBe(0);

  const long = await runTool(node, 'docker', ['run', '-d', '--name', 'long', ref, 'sleep', '300']);
  expect(long.code).toBe(0);
  const { pid } = await readRecord('long');
  const children = await childrenOf(pid as number);
  expect(children.length).toBe(1);
  process.kill(pid as number, 'SIGKILL'); // what the emulator does to a node's recorded pids
  for (let i = 0; i < 500 && alive(children[0]); i++) await new Promise((r) => setTimeout(r, 20));
  expect(alive(children[0])).toBe(false);
  const rm = await runTool(node, 'docker', ['rm', 'long']);
  expect(rm.code).toBe(0); // the dead container counts as exited
});

test('a docker run that died while it created the container (its node rebooted) leaves a claim that rm -f clears, so the next run works', async () => {
  // What such a run leaves: the name claimed (the folder), a half-unpacked rootfs, no records, and its dead pid.
  const dead = Number(execSync('sh -c "echo $$"').toString().trim()); // a process that has exited
  const dir = path.join(node.root, 'containers', 'coord');
  await mkdir(path.join(dir, 'rootfs', 'opt'), { recursive: true });
  await writeFile(path.join(dir, 'claim'), String(dead));
  const blocked = await runTool(node, 'docker', ['run', '-d', '--name', 'coord', ref]);
  expect(blocked.code).toBe(125);
  expect(blocked.stderr).toContain('The container name "/coord" is already in use');
  const removed = await runTool(node, 'docker', ['rm', '-f', 'coord']);
  expect([removed.code, removed.stdout.trim()]).toEqual([0, 'coord']);
  const run = await runTool(node, 'docker', ['run', '-d', '--name', 'coord', ref]);
  expect(run.code).toBe(0);
  expect((await readRecord('coord')).state).toBe('running');
  expect((await runTool(node, 'docker', ['rm', '-f', 'coord'])).code).toBe(0);

  // A claim whose docker run is still alive (here: this test process) is someone else's container in the making.
  await mkdir(dir);
  await writeFile(path.join(dir, 'claim'), String(process.pid));
  const live = await runTool(node, 'docker', ['rm', '-f', 'coord']);
  expect([live.code, live.stdout]).toEqual([0, '']);
  expect((await stat(dir)).isDirectory()).toBe(true);
  await rm(dir, { recursive: true });
});

test('singularity pull writes a SIF reference; exec runs with host env, image env and --pwd', async () => {
  const pull = await runTool(node, 'singularity', ['pull', `docker://${ref}`]);
  expect(pull.code).toBe(0);
  const sif = path.join(node.taskDir, 'mpi-demo_1.0.sif');
  expect(JSON.parse(await readFile(sif, 'utf8'))).toMatchObject({ ref, imageId: expect.stringMatching(/^sha256:/) });
  const again = await runTool(node, 'singularity', ['pull', `docker://${ref}`]);
  expect(again.code).toBe(255);
  const r = await runTool(
    node,
    'singularity',
    ['exec', '--pwd', '/opt/mpi-demo', '-B', `${node.taskDir}:/data`, sif, 'sh', '-c', 'echo "$MPI_DEMO_HOME $AZ_BATCH_NODE_ID $HOST_VAR"; pwd'],
    { env: { HOST_VAR: 'from-host' } },
  );
  expect(r.code).toBe(0);
  const [line, cwd] = r.stdout.trim().split('\n');
  expect(line).toBe(`/opt/mpi-demo ${node.id} from-host`);
  expect(cwd).toMatch(new RegExp(`${node.root}/singularity/rootfs/[a-f0-9]{64}/opt/mpi-demo$`));
  const viaUri = await runTool(node, 'singularity', ['exec', `docker://${ref}`, 'mpi-demo', 'info']);
  expect(viaUri.stdout).toContain(`node=${node.id}`);
});
