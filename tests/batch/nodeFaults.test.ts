/**
 * Faults of single nodes in the Batch emulator (faults.nodes), as a task on another node of the pool sees them through
 * the node's ssh stand-in (the launcher path mpirun uses), and as a Batch client sees a node that goes unusable under a
 * running task: a closed ssh port, a slow launcher path, a node lost by id.
 */
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { loadConfig } from '../../shared/adapters/config';
import {
  addNodeTask,
  createBatchContext,
  createJob,
  createJobPool,
  deletePool,
  getPoolSnapshot,
  getTask,
  readTaskFile,
  type BatchContext,
  type PoolSnapshot,
} from '../../shared/adapters/batch';
import { until } from './until';

let emu: BatchEmulatorHandle;
let ctx: BatchContext;
let nodes: PoolSnapshot['nodes'];
const POOL = 'node-faults';
const JOB = 'node-faults-job';
let seq = 0;

/** Runs `script` on the pool's node `from` (pinned by affinity) and returns its exit code, stdout and stderr. */
async function runOn(from: number, script: string): Promise<{ exitCode?: number; stdout: string; stderr: string; ms: number }> {
  const id = `t${++seq}`;
  const started = Date.now();
  await addNodeTask(ctx, JOB, { id, affinityId: nodes[from].affinityId, commandLine: `/bin/bash -c '${script}'` });
  const t = await until(
    `task ${id}`,
    async () => {
      const x = await getTask(ctx, JOB, id);
      return x.state === 'completed' ? x : undefined;
    },
    30_000,
  );
  expect(t.nodeId).toBe(nodes[from].id);
  const [stdout, stderr] = await Promise.all(['stdout.txt', 'stderr.txt'].map((f) => readTaskFile(ctx, JOB, id, f)));
  return { exitCode: t.exitCode, stdout: stdout.content, stderr: stderr.content, ms: Date.now() - started };
}

beforeAll(async () => {
  emu = await startBatchEmulator({ timing: { allocateMs: 20, bootMs: 20, leaveMs: 20 } });
  const config = loadConfig({
    BATCH_ACCOUNT_URL: emu.url,
    BATCH_ACCOUNT_NAME: emu.accountName,
    BATCH_ACCOUNT_KEY: emu.accountKey,
    AzureWebJobsStorage: 'UseDevelopmentStorage=true',
    STAGING_ACCOUNTS: 'devstoreaccount1',
  });
  ctx = createBatchContext(config);
  await createJobPool(ctx, {
    poolId: POOL,
    jobId: POOL,
    vmSize: 'standard_d2s_v5',
    targetDedicatedNodes: 2,
    image: { publisher: 'canonical', offer: '0001-com-ubuntu-server-jammy', sku: '22_04-lts' },
    nodeAgentSkuId: 'batch.node.ubuntu 22.04',
  });
  const s = await until(
    'two idle nodes',
    async () => {
      const x = await getPoolSnapshot(ctx, POOL);
      return x && x.nodes.length === 2 && x.nodes.every((n) => n.state === 'idle') ? x : undefined;
    },
    30_000,
  );
  // Creation order (what a fault's ordinal counts), as the emulator's handle lists its nodes; ids do not tell it.
  const created = emu.nodes(POOL).map((n) => n.id);
  nodes = [...s.nodes].sort((a, b) => created.indexOf(a.id) - created.indexOf(b.id));
  await createJob(ctx, { batchJobId: JOB, jobId: POOL, poolId: POOL });
}, 60_000);

afterAll(async () => {
  await deletePool(ctx, POOL).catch(() => undefined);
  await emu?.stop();
});

afterEach(() => emu.setFaults({ nodes: [] }));

describe('per-node faults of the Batch emulator', () => {
  test('sshRefused: the node\'s ssh port answers "Connection refused" (exit 255) to the other nodes, and opens again when cleared', async () => {
    const probe = `ssh -o BatchMode=yes ${'${IP}'} true; echo "rc=$?"`;
    emu.setFaults({ nodes: [{ poolId: POOL, ordinal: 1, sshRefused: true }] });
    const refused = await runOn(0, probe.replace('${IP}', nodes[1].ipAddress));
    expect(refused.stdout.trim()).toBe('rc=255');
    expect(refused.stderr).toContain(`ssh: connect to host ${nodes[1].ipAddress} port 22: Connection refused`);
    // The other node (here: the one asking, over its own port) is untouched.
    expect((await runOn(1, probe.replace('${IP}', nodes[0].ipAddress))).stdout.trim()).toBe('rc=0');
    emu.setFaults({ nodes: [] });
    expect((await runOn(0, probe.replace('${IP}', nodes[1].ipAddress))).stdout.trim()).toBe('rc=0');
  }, 60_000);

  test('sshDelayMs (matched by node id): every connection to the node opens that much later; the command still runs there', async () => {
    emu.setFaults({ nodes: [{ nodeId: nodes[1].id, sshDelayMs: 1500 }] });
    const r = await runOn(0, `s=$(date +%s%N); ssh ${nodes[1].ipAddress} "echo \\$AZ_BATCH_NODE_ID"; e=$(date +%s%N); echo "ms=$(( (e - s) / 1000000 ))"`);
    const [ranOn, ms] = r.stdout.trim().split('\n');
    expect(ranOn).toBe(nodes[1].id);
    expect(Number(ms.replace('ms=', ''))).toBeGreaterThanOrEqual(1500);
  }, 60_000);

  test('unusable (by node id, while a task runs on it): the node goes unusable and Batch requeues the task', async () => {
    await addNodeTask(ctx, JOB, { id: 'long', affinityId: nodes[1].affinityId, commandLine: '/bin/sleep 30' });
    await until('long running', async () => ((await getTask(ctx, JOB, 'long')).state === 'running' ? true : undefined), 30_000);
    emu.setFaults({ nodes: [{ nodeId: nodes[1].id, unusable: true }] });
    const lost = await until(
      'node unusable',
      async () => {
        const s = await getPoolSnapshot(ctx, POOL);
        return s?.nodes.find((n) => n.id === nodes[1].id && n.state === 'unusable');
      },
      30_000,
    );
    expect(lost.errors?.[0]).toMatchObject({ code: 'NodeUnusable' });
    const t = await getTask(ctx, JOB, 'long');
    expect(t.requeueCount).toBe(1);
    expect(t.retryCount ?? 0).toBe(0);
    // Requeued, it may start again on the healthy node (affinity is a hint), never on the lost one.
    expect(t.nodeId).not.toBe(nodes[1].id);
  }, 60_000);
});
