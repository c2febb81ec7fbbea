/**
 * "Fail before paying" (issue 28, item 3) on the local stack, with the examples a new user ran on a fresh stack:
 * examples/jobs/native-openmpi.yaml reads data1/inputs/demo/ and builds its program from data1/software/shardsum.c,
 * neither of which anybody uploaded, and
 * examples/workloads/osu-latency-bw-native.yaml compiles a start-task blob that is not there. Before: the dry run
 * explained both, and each job failed only after its pool was provisioned ("unexpected: Activity function
 * 'inputsList' failed", "4 nodes failed (starttaskfailed)"). Now the dry run answers 400 with the field path, and a
 * submitted job fails after admission with the path in its reason and no pool in the Batch emulator.
 * Needs the compiled app (dist/).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { DATA_ACCOUNT } from '../../local/azurite';
import { asUser, submitSpec, watchJob } from '../../local/jobRunner';

let stack: Stack;

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({ port: 0, demoImage: false, logDestination: path.join(logs, 'e2e-preflight-inputs-host.log') });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

/** An example as committed, under another id. */
function example(rel: string, id: string): string {
  const text = readFileSync(path.join(REPO_ROOT, 'examples', rel), 'utf8').replace(/^id: .*$/m, '');
  return `id: ${id}\n${text}`;
}

// Problem bodies: untyped JSON on purpose.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function dryRun(specText: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${stack.baseUrl}/api/jobs?dryRun=true`, {
    method: 'POST',
    headers: { 'content-type': 'application/yaml', ...(await asUser(stack)()) },
    body: specText,
  });
  return { status: res.status, body: await res.json() };
}

async function upload(container: string, name: string, text: string): Promise<void> {
  const c = stack.operator.blobService(DATA_ACCOUNT.name).getContainerClient(container);
  await c.createIfNotExists();
  await c.getBlockBlobClient(name).upload(text, Buffer.byteLength(text));
}

const NATIVE = 'jobs/native-openmpi.yaml';
const OSU = 'workloads/osu-latency-bw-native.yaml';
const INPUT_MISSING = 'no blob under data1/inputs/demo/ (container "inputs" does not exist)';
const START_BLOB_MISSING = 'blob data1/software/osu_pingpong.c does not exist';
const SHARDSUM_MISSING = 'blob data1/software/shardsum.c does not exist (container "software" does not exist)';

describe('fail before paying', () => {
  it('a dry run of a job whose input prefix holds nothing answers 400 with the field path', async () => {
    const res = await dryRun(example(NATIVE, 'pf-native-dry'));
    expect(res.status).toBe(400);
    // Every miss at once, each with its path: the inputs and the start task's source.
    expect(res.body.errors).toEqual([
      { path: 'data.inputs[0].prefix', message: INPUT_MISSING },
      { path: 'pool.startTask.resourceFiles[0].blob', message: SHARDSUM_MISSING },
    ]);
  });

  it('the same job submitted fails after admission with the path in its reason, and no pool was ever created', async () => {
    const id = await submitSpec(stack, example(NATIVE, 'pf-native'));
    const view = await watchJob(stack, id, 120_000);
    expect(view.state).toBe('Failed');
    expect(view.error?.message).toBe(
      `missing inputs (checked before any pool was created): data.inputs[0].prefix: ${INPUT_MISSING}; pool.startTask.resourceFiles[0].blob: ${SHARDSUM_MISSING}`,
    );
    expect(view.error?.message).not.toMatch(/unexpected|Activity function/);
    expect(stack.batch.pools()).toEqual([]);
    // It never left the queue: no Provisioning, no CleaningUp.
    expect((view.timeline ?? []).map((e) => e.to).filter((s) => s === 'Provisioning' || s === 'CleaningUp')).toEqual([]);
  }, 150_000);

  it('a missing start-task blob: the dry run answers 400 and the submitted job fails before any pool', async () => {
    await upload('software', 'other.c', 'int main(void) { return 0; }\n');
    const res = await dryRun(example(OSU, 'pf-osu-dry'));
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: 'pool.startTask.resourceFiles[0].blob', message: START_BLOB_MISSING }]);

    const id = await submitSpec(stack, example(OSU, 'pf-osu'));
    const view = await watchJob(stack, id, 120_000);
    expect(view.state).toBe('Failed');
    expect(view.error?.message).toBe(`missing input (checked before any pool was created): pool.startTask.resourceFiles[0].blob: ${START_BLOB_MISSING}`);
    expect(stack.batch.pools()).toEqual([]);
  }, 150_000);

  it('once the blobs are there, both dry runs are explained', async () => {
    await upload('inputs', 'demo/part-0.bin', 'x'.repeat(64));
    await upload('software', 'osu_pingpong.c', readFileSync(path.join(REPO_ROOT, 'examples', 'mpi', 'osu_pingpong.c'), 'utf8'));
    await upload('software', 'shardsum.c', readFileSync(path.join(REPO_ROOT, 'examples', 'mpi', 'shardsum.c'), 'utf8'));
    for (const [rel, id] of [
      [NATIVE, 'pf-native-ok'],
      [OSU, 'pf-osu-ok'],
    ]) {
      const res = await dryRun(example(rel, id));
      expect({ id, status: res.status }).toEqual({ id, status: 200 });
      expect(res.body.jobId).toBe(id);
    }
  });
});
