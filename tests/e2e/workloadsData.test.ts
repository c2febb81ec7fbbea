/**
 * The data side of real workloads on the local stack, through the public HTTP API only, with real Open MPI across
 * emulated nodes: the job specs of examples/workloads/ run as committed (the WRF example's release server
 * https://wrf-release.example.org is the stack's stand-in, local/releaseServer.ts, which the emulated nodes resolve).
 *   - OpenFOAM-shaped: files from blob storage on every node, decomposed on the master into the shared scratch (the
 *     NFS export of the master, mounted by the other node), solved on every rank, reconstructed by rank 0; the
 *     reconstructed field in blob storage equals the same computation done here, and every log is kept.
 *   - A failing run: its restart files (when: failure) and logs are uploaded after it fails.
 *   - Files from an https URL on every node (with their modes), a pool mount with the job's scratch on it.
 * Each is submitted as written (tests/helpers/examplesAsWritten.ts), with the user
 * `dev`'s token, on a stack whose data is seeded as `npm start` seeds it (local/seedExamples.ts).
 * One stack for the file; needs the compiled app (dist/).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { BlobServiceClient } from '@azure/storage-blob';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { checkCleanup, submitSpec, watchJob, mpiOutput, type JobViewLite } from '../../local/jobRunner';
import { createContractRecorder } from '../../local/batch/contract';
import { DATA_ACCOUNT } from '../../local/azurite';
import type { OutputsResult } from '../../shared/core/contract';
import type { JobOutputsResponse } from '../../shared/core/contract/outputs';
import { heat1dReference as heat1d, fieldValues as field } from '../helpers/heat1d';
import { WORKLOADS_DATA_AS_WRITTEN } from '../helpers/examplesAsWritten';
import { seedExamples } from '../../local/seedExamples';

const WORKLOADS = path.join(REPO_ROOT, 'examples', 'workloads');
/** An example this file submits as written (the committed bytes), by its file name. */
function asWritten(file: string): string {
  const listed = WORKLOADS_DATA_AS_WRITTEN.find((p) => path.basename(p) === file);
  if (!listed) throw new Error(`${file} is not in WORKLOADS_DATA_AS_WRITTEN`);
  return readFileSync(path.join(REPO_ROOT, listed), 'utf8');
}

let stack: Stack;
const batchContract = createContractRecorder();

/** The WRF example's namelist as its release server (the stack's stand-in) serves it. */
const NAMELIST = path.join(WORKLOADS, 'files', 'wrf-release', 'v4.5', 'namelist.input');

function data(): BlobServiceClient {
  return stack.operator.blobService(DATA_ACCOUNT.name);
}

async function blobText(container: string, name: string): Promise<string> {
  return (await data().getContainerClient(container).getBlobClient(name).downloadToBuffer()).toString('utf8');
}

async function blobNames(container: string, prefix: string): Promise<string[]> {
  const names: string[] = [];
  for await (const b of data().getContainerClient(container).listBlobsFlat({ prefix })) names.push(b.name.slice(prefix.length));
  return names.sort();
}

/** The built CLI (dist/cli/index.js) with `args`: exit status, stdout, stderr. */
function runCli(args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // The CLI downloads from the keyless stack's https storage: it trusts the local certificate as a user's shell would.
    const env = { ...process.env, ...(stack.keyless ? { NODE_EXTRA_CA_CERTS: stack.identity.caFile } : {}) };
    execFile(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli', 'index.js'), ...args], { encoding: 'utf8', env }, (err, stdout, stderr) => {
      resolve({ status: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** The job's end, which must be `state`; otherwise its error, outputs and MPI output, to see why. */
async function ended(id: string, state: 'Succeeded' | 'Failed', timeoutMs = 240_000): Promise<JobViewLite> {
  const view = await watchJob(stack, id, timeoutMs);
  const outputs = view.result?.outputs;
  if (view.state !== state || (outputs?.errors.length ?? 0) > 0) {
    const logs = await Promise.all(
      (outputs?.files ?? []).filter((f) => f.size < 8192).map(async (f) => `--- ${f.name} ---\n${await blobText('results', `${outputs?.prefix}/${f.name}`)}`),
    );
    throw new Error(
      `${logs.join('\n')}\n` +
        `job ${id} ended ${view.state} (expected ${state}): ${JSON.stringify(view.error)}\noutputs: ${JSON.stringify(outputs)}\n` +
        `timeline: ${JSON.stringify(view.timeline?.slice(-3))}\n${JSON.stringify(view.result?.mpi)}\n${await mpiOutput(stack, view)}`,
    );
  }
  return view;
}

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({
    port: 0,
    demoImage: false,
    logDestination: path.join(logs, 'e2e-workloads-host.log'),
    batch: { onExchange: (ex) => batchContract.onExchange(ex) },
  });
  // What the examples read (the solver's source, the case examples/workloads/heat1d-case), seeded as `npm start` does.
  await seedExamples(data(), REPO_ROOT);
}, 180_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

describe('workloads on the local stack', () => {
  it('OpenFOAM-shaped: decomposes on the master into the shared scratch, solves on every rank, reconstructs; the results and every log land in blob storage', async () => {
    const id = await submitSpec(stack, asWritten('openfoam-decompose-solve-reconstruct.yaml'));
    const view = await ended(id, 'Succeeded');
    // Without outputs.prefix the job's outputs are in its owner's data area: users/<ownerKey>/jobs/<id>.
    const prefix = `${(view.result?.outputs as OutputsResult).prefix}/`;
    expect(prefix).toMatch(new RegExp(`^users/[0-9a-f-]+/[0-9a-f-]+/jobs/${id}/$`));

    // The reconstructed field equals the computation done here: decomposition, halos and reconstruction were right,
    // and both nodes' ranks wrote their processor directories into the one scratch rank 0 read.
    const initial = field(readFileSync(path.join(WORKLOADS, 'heat1d-case', '0', 'T'), 'utf8'));
    const expected = heat1d(initial, 200, 0.25);
    const got = field(await blobText('results', `${prefix}scratch/case/200/T`));
    expect(got).toHaveLength(expected.length);
    got.forEach((v, i) => expect(v).toBeCloseTo(expected[i], 9));
    expect(await blobText('results', `${prefix}scratch/case/log.reconstruct`)).toMatch(/reconstructed 96 cells from 4 processors at time 200/);

    const names = await blobNames('results', prefix);
    expect(names).toEqual(expect.arrayContaining(['scratch/case/200/T', 'scratch/case/log.reconstruct', 'logs/stdout.txt', 'logs/stderr.txt']));
    // Only what the patterns name: the processor directories stay behind.
    expect(names.filter((n) => n.includes('processor'))).toEqual([]);
    // One stdout/stderr pair per rank, and each node's task output (the scratch mount) and its own build log.
    expect(names.filter((n) => /^logs\/ranks\/.*rank\.\d+\/stdout$/.test(n))).toHaveLength(4);
    const nodes = [...new Set(names.filter((n) => n.startsWith('nodes/')).map((n) => n.split('/')[1]))];
    expect(nodes).toHaveLength(2);
    for (const node of nodes) expect(await blobText('results', `${prefix}nodes/${node}/heat1d-build.log`)).toContain(`built on ${node}`);
    const workerLogs = names.filter((n) => /^logs\/nodes\/[^/]+\/stdout\.txt$/.test(n));
    expect(workerLogs).toHaveLength(1);
    expect(await blobText('results', `${prefix}${workerLogs[0]}`)).toMatch(/shared scratch \(masterNfs\) ready at \S+\/shared\/scratch\/openfoam-style-heat1d/);
    // Ranks on both nodes took part.
    const rankLines = (await blobText('results', `${prefix}logs/stdout.txt`)).split('\n').filter((l) => l.startsWith('rank '));
    expect(new Set(rankLines.map((l) => /\(node (\S+)\)/.exec(l)?.[1])).size).toBe(2);

    // The job result lists the outputs with sizes and plain URLs (never a SAS).
    const outputs = view.result?.outputs as OutputsResult;
    expect(outputs.errors).toEqual([]);
    expect(outputs.count).toBe(names.length);
    expect(outputs.files.map((f) => f.name).sort()).toEqual(names);
    for (const f of outputs.files) expect(f.url).not.toContain('?');
    expect(outputs.files.find((f) => f.name === 'scratch/case/200/T')?.size).toBeGreaterThan(96 * 5);
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 300_000);

  it('hpcjob download fetches the outputs through the API (short-lived SAS minted per call), and a job without outputs is 404 NoOutputs', async () => {
    const res = await fetch(`${stack.baseUrl}/api/jobs/openfoam-style-heat1d/outputs?top=3`, { headers: { 'x-functions-key': stack.host.keys.functionKey } });
    expect(res.status).toBe(200);
    const page = (await res.json()) as JobOutputsResponse;
    expect(page.files).toHaveLength(3);
    expect(page.continuationToken).toBeTruthy();
    expect(page.files[0].url).toMatch(/[?&]sig=/);
    expect(Date.parse(page.expiresAt) - Date.now()).toBeLessThanOrEqual(60 * 60_000);
    const anonymous = await fetch(`${stack.baseUrl}/api/jobs/openfoam-style-heat1d/outputs`);
    expect(anonymous.status).toBe(401);

    const to = mkdtempSync(path.join(tmpdir(), 'hpcjob-download-'));
    try {
      // Not spawnSync: the API the CLI calls is served by this very process.
      const cli = await runCli(['--endpoint', stack.baseUrl, '--key', stack.host.keys.functionKey, 'download', 'openfoam-style-heat1d', '--to', to]);
      expect(cli.stderr).toContain('scratch/case/200/T');
      expect(cli.status).toBe(0);
      expect(cli.stdout).toMatch(/file\(s\), .* downloaded to /);
      expect(readFileSync(path.join(to, 'scratch', 'case', '200', 'T'), 'utf8')).toBe(await blobText('results', `${page.prefix}/scratch/case/200/T`));
      expect(readdirSync(path.join(to, 'logs', 'ranks'), { recursive: true }).length).toBeGreaterThan(4);
    } finally {
      rmSync(to, { recursive: true, force: true });
    }
  }, 120_000);

  it('a failing run: its restart files (when: failure) and every log are uploaded after it fails', async () => {
    const id = await submitSpec(stack, asWritten('lammps-crash-keeps-restart.yaml'));
    const view = await ended(id, 'Failed');
    expect(view.result?.exitCode).toBe(3);
    expect(view.error?.message).toMatch(/MPI task exited with code 3/);
    const prefix = `${(view.result?.outputs as OutputsResult).prefix}/`;
    const names = await blobNames('results', prefix);
    expect(names).toEqual(expect.arrayContaining(['workdir/restart/lmp.restart.1000.0', 'workdir/log.lammps.0', 'logs/stdout.txt', 'logs/stderr.txt']));
    expect(await blobText('results', `${prefix}logs/stderr.txt`)).toContain('ERROR: Lost atoms');
    expect(await blobText('results', `${prefix}workdir/restart/lmp.restart.1000.0`)).toBe('step 1000 rank 0\n');
    expect((view.result?.outputs as OutputsResult).files.map((f) => f.name)).toEqual(expect.arrayContaining(['workdir/restart/lmp.restart.1000.0']));
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 300_000);

  it('files from an https URL reach every node with their modes; a pool mount carries the job scratch', async () => {
    const id = await submitSpec(stack, asWritten('wrf-tables-from-url.yaml'));
    const view = await ended(id, 'Succeeded');
    const prefix = `${(view.result?.outputs as OutputsResult).prefix}/`;
    const names = await blobNames('results', prefix);
    // Every node checked its copy (executable script, namelist) in the coordination step and kept the checksum.
    const sums = names.filter((n) => /^nodes\/[^/]+\/namelist\.sha256$/.test(n));
    expect(sums).toHaveLength(2);
    const sha = createHash('sha256').update(readFileSync(NAMELIST)).digest('hex');
    for (const n of sums) expect(await blobText('results', `${prefix}${n}`)).toContain(sha);
    // Both members wrote into the scratch on the blobfuse mount (modelled locally), uploaded from the master.
    const members = names.filter((n) => /^scratch\/member-\d\.out$/.test(n));
    expect(members).toHaveLength(2);
    const lines = await Promise.all(members.map((m) => blobText('results', `${prefix}${m}`)));
    expect(new Set(lines.map((l) => /on (\S+):/.exec(l)?.[1])).size).toBe(2);
    for (const l of lines) expect(l).toContain('&time_control');
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 300_000);

  it('sent Batch only requests the spec allows (mountConfiguration, commonResourceFiles, outputFiles included) and got only documented answers', () => {
    const violations = batchContract.violations().map((v) => `${v.method} ${v.path} -> ${v.status}\n    ${v.problems.join('\n    ')}`);
    expect(violations).toEqual([]);
    expect([...batchContract.coverage().keys()]).toEqual(expect.arrayContaining(['Pool_Add', 'Task_Add', 'Job_Patch']));
  });
});
