/**
 * Integration with the Batch emulator's ssh launcher (local/batch/runner/bin/ssh, not ours): two emulated nodes
 * each start the demo image's sshd container with `docker run -d`, then `docker exec ... mpirun` on the first node
 * reaches the second through `ssh -p 23`, which the launcher serves with the second node's container environment
 * (found through our container record). Real Open MPI, 4 ranks on 2 "hosts".
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { RegistryHandle, startRegistry } from '../../local/registry';
import { buildDemoImage } from '../../examples/images/buildDemoImage';
import { TestNode, cleanupNodes, makeBaseDir, makeNode, runTool } from './nodeHarness';

const SSH_LAUNCHER_DIR = path.resolve(__dirname, '../../local/batch/runner/bin');
const IPS = ['127.0.1.12', '127.0.1.13'];

let registry: RegistryHandle;
let base: string;
let nodes: TestNode[];

beforeAll(async () => {
  base = await makeBaseDir('container-mpi-');
  registry = await startRegistry({ images: [await buildDemoImage({ fillerBytes: 16 * 1024 })] });
  const hosts = path.join(base, 'hosts');
  nodes = [];
  const lines: string[] = [];
  for (const [i, ip] of IPS.entries()) {
    const n = await makeNode(base, `mpi-node-${i}`);
    Object.assign(n.env, {
      PATH: `${n.env.PATH?.split(':')[0]}:${SSH_LAUNCHER_DIR}:${process.env.PATH}`,
      AZ_BATCH_EMULATOR_HOSTS: hosts,
      AZ_BATCH_EMULATOR_NODE_IP: ip,
      OMPI_ALLOW_RUN_AS_ROOT: '1',
      OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1',
      OMPI_MCA_plm_rsh_agent: path.join(SSH_LAUNCHER_DIR, 'ssh'),
      OMPI_MCA_btl: 'self,tcp',
      OMPI_MCA_btl_tcp_if_include: 'lo',
      OMPI_MCA_oob_tcp_if_include: 'lo',
      PMIX_MCA_gds: 'hash',
    });
    const envFile = path.join(n.root, 'node.env');
    const q = (v: string): string => `'${v.replace(/'/g, `'\\''`)}'`;
    await writeFile(
      envFile,
      Object.entries(n.env)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => `${k}=${q(v as string)}`)
        .join('\n') + '\n',
    );
    lines.push(`${ip}\t${n.root}\t${envFile}`);
    nodes.push(n);
  }
  await writeFile(hosts, lines.join('\n') + '\n');
});

afterAll(async () => {
  await registry?.stop();
  if (base) await cleanupNodes(base);
});

test("mpirun inside a container reaches the other node's container through ssh -p 23", async () => {
  const ref = `${registry.host}/hpc/mpi-demo:1.0`;
  for (const n of nodes) {
    const r = await runTool(n, 'docker', [
      'run',
      '-d',
      '--name',
      'job-mpi',
      '--net=host',
      '-e',
      'AZ_BATCH_NODE_ID',
      '-v',
      `${n.root}:${n.root}`,
      '-w',
      n.taskDir,
      ref,
      '/usr/sbin/sshd',
      '-D',
      '-p',
      '23',
    ]);
    expect(r.code).toBe(0);
  }
  const script = `exec mpirun --allow-run-as-root -np 4 --host ${IPS[0]}:2,${IPS[1]}:2 --mca plm_rsh_args "-p 23" /bin/sh -c 'echo "rank=$OMPI_COMM_WORLD_RANK node=$AZ_BATCH_NODE_ID home=$MPI_DEMO_HOME"'`;
  let r: Awaited<ReturnType<typeof runTool>>;
  try {
    r = await runTool(nodes[0], 'docker', ['exec', '-w', nodes[0].taskDir, 'job-mpi', '/bin/bash', '-c', script]);
  } finally {
    // Removed whatever happened: a container left running would answer the next test's port.
    for (const n of nodes) expect((await runTool(n, 'docker', ['rm', '-f', 'job-mpi'])).code).toBe(0);
  }
  expect({ code: r.code, stderr: r.code ? r.stderr : '' }).toEqual({ code: 0, stderr: '' });
  const lines = r.stdout.trim().split('\n').sort();
  expect(lines).toEqual([
    'rank=0 node=mpi-node-0 home=/opt/mpi-demo',
    'rank=1 node=mpi-node-0 home=/opt/mpi-demo',
    'rank=2 node=mpi-node-1 home=/opt/mpi-demo',
    'rank=3 node=mpi-node-1 home=/opt/mpi-demo',
  ]);
});

test('the ssh launcher refuses a port no running container declared', async () => {
  const r = await new Promise<{ code: number; stderr: string }>((resolve) =>
    execFile(path.join(SSH_LAUNCHER_DIR, 'ssh'), ['-p', '23', IPS[1], 'true'], { env: nodes[0].env }, (err, _o, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code) : 0, stderr }),
    ),
  );
  expect(r.code).toBe(255);
  expect(r.stderr).toMatch(/port 23: Connection refused/);
});
