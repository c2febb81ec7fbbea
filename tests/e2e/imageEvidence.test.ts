/**
 * Issue 27 item 2 end to end, on one stack: the app reads the image's MPI evidence from the registry before any pool.
 *  - A docker job (Intel MPI, no mpi.version) whose image's config says Intel MPI 2018 (I_MPI_ROOT and a label)
 *    gets the 2018 preset in the MPI task Batch receives (I_MPI_FABRICS=shm:tcp, no libfabric provider), the
 *    timeline says which evidence chose it, and the online dry run shows the same.
 *  - A job whose image is not in the registry fails before any pool: no pool add reaches the emulator, and the
 *    dry run answers 400 at container.images[0].
 * Real registry (local/registry), real emulator, real app over HTTP; the sizes are the Shipyard recipes' D2_v2.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import type { ExchangeRecord } from '../../local/batch';
import { buildImage } from '../../local/registry';
import { asUser, submitSpec, watchJob, type JobViewLite } from '../../local/jobRunner';

let stack: Stack;
let layerDir: string;
const dataPlane: ExchangeRecord[] = [];
const views = new Map<string, JobViewLite>();

const image = (tag: string) => `${stack.registry.host}/hpc/impi2018:${tag}`;
function spec(id: string, ref: string): string {
  return [
    `id: ${id}`,
    `name: ${id}`,
    'pool: { vmSize: Standard_D2_v2, nodes: 2 }',
    `container: { runtime: docker, images: ["${ref}"] }`,
    'mpi: { runtime: intelmpi, processesPerNode: 1, fabric: tcp, command: "true" }',
    'limits: { maxWallClock: PT10M }',
    // The emulated nodes' mpirun is Open MPI: the preflight's ping-pong under Intel MPI's launcher syntax cannot run
    // here. What this file checks is the request Batch receives, so the job goes straight to its MPI task.
    'preflight: { enabled: false }',
  ].join('\n');
}

beforeAll(async () => {
  layerDir = mkdtempSync(path.join(tmpdir(), 'impi2018-layer-'));
  writeFileSync(path.join(layerDir, 'README'), 'an image that says it holds Intel MPI 2018\n');
  stack = await startStack({
    port: 0,
    demoImage: false,
    logDestination: path.join(REPO_ROOT, 'test-artifacts', 'e2e-image-evidence-host.log'),
    env: { NODE_TASK_MAX_ATTEMPTS: '1' },
    batch: { onExchange: (ex) => dataPlane.push(ex) },
  });
  await stack.registry.addImage(
    await buildImage({
      repository: 'hpc/impi2018',
      tag: '1.0',
      layers: [{ dir: layerDir }],
      config: { Env: ['PATH=/usr/local/bin:/usr/bin:/bin', 'I_MPI_ROOT=/opt/intel/compilers_and_libraries_2018.5.274/linux/mpi'], Cmd: ['/bin/sh'] },
      labels: { 'org.opencontainers.image.title': 'impi2018' },
    }),
  );
  const ids = await Promise.all([submitSpec(stack, spec('ev-impi2018', image('1.0'))), submitSpec(stack, spec('ev-missing', image('nope')))]);
  for (const v of await Promise.all(ids.map((id) => watchJob(stack, id, 420_000)))) views.set(v.id, v);
}, 600_000);
afterAll(async () => {
  await stack?.stop();
  if (layerDir) rmSync(layerDir, { recursive: true, force: true });
}, 60_000);

type AddedTask = { id: string; environmentSettings?: { name: string; value: string }[]; multiInstanceSettings?: unknown };
const poolAdds = (poolId: string) =>
  dataPlane.filter((e) => e.method === 'POST' && e.path === '/pools' && (e.requestBody as { id?: string } | undefined)?.id === poolId);

async function dryRun(text: string): Promise<{
  status: number;
  body: {
    errors?: { path: string; message: string }[];
    mpiTask?: { preset?: { family: string; reason: string }; imageEvidence?: { evidence: string | null; note: string } };
  };
}> {
  const res = await fetch(`${stack.baseUrl}/api/jobs?dryRun=true`, {
    method: 'POST',
    headers: { 'content-type': 'application/yaml', ...(await asUser(stack)()) },
    body: text,
  });
  return { status: res.status, body: (await res.json()) as never };
}

test('an image with Intel MPI 2018 evidence gets the 2018 preset, and the timeline names the evidence', async () => {
  const view = views.get('ev-impi2018') as JobViewLite;
  const mpiTask = dataPlane
    .filter((e) => e.method === 'POST' && e.path === '/jobs/hpc-ev-impi2018/tasks')
    .map((e) => e.requestBody as AddedTask)
    .find((t) => t.multiInstanceSettings && !t.id.startsWith('preflight'));
  if (!mpiTask) throw new Error(`no MPI task was added (job ${view.state}: ${view.error?.message ?? ''})`);
  const env = Object.fromEntries((mpiTask.environmentSettings ?? []).map((e) => [e.name, e.value]));
  expect(env.I_MPI_FABRICS).toBe('shm:tcp');
  expect(env.FI_PROVIDER).toBeUndefined();
  const note = (view.timeline ?? []).find((t) => /^MPI preset from image/.test(t.reason));
  expect(note?.reason).toMatch(
    /hpc\/impi2018:1\.0 \(sha256:[0-9a-f]{64}\): no mpi\.version; the image's Env I_MPI_ROOT=\/opt\/intel\/compilers_and_libraries_2018\.5\.274\/linux\/mpi says intelmpi 2018 → Intel MPI 2017–2018/,
  );
});

test('the online dry run reads the same evidence and explains the 2018 preset', async () => {
  const res = await dryRun(spec('ev-dry', image('1.0')));
  expect(res.status).toBe(200);
  expect(res.body.mpiTask?.preset).toMatchObject({ family: 'intelmpi-2018', reason: expect.stringContaining("the image's Env I_MPI_ROOT=") });
  expect(res.body.mpiTask?.imageEvidence).toMatchObject({
    evidence: expect.stringMatching(/^Env I_MPI_ROOT=/),
    note: expect.stringMatching(/^MPI preset from image/),
  });
});

test('an image that is not in the registry fails the job before any pool; the dry run refuses it at container.images[0]', async () => {
  const view = views.get('ev-missing') as JobViewLite;
  expect(view.state).toBe('Failed');
  expect(view.error?.message).toBe(`container.images[0]: image ${image('nope')} not found in ${stack.registry.host} (404 MANIFEST_UNKNOWN)`);
  expect(poolAdds('hpc-ev-missing')).toHaveLength(0);
  expect(poolAdds('hpc-ev-impi2018')).toHaveLength(1);
  const res = await dryRun(spec('ev-dry-missing', image('nope')));
  expect(res.status).toBe(400);
  expect(res.body.errors).toEqual([
    { path: 'container.images[0]', message: `image ${image('nope')} not found in ${stack.registry.host} (404 MANIFEST_UNKNOWN)` },
  ]);
});
