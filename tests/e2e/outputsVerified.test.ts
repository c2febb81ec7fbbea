/**
 * Outputs verified before success, end to end on the local stack: the emulator loses the upload of the master's
 * workdir/result.txt without any error (fault lostUploads, docs/local-batch.md), as a node dying mid-upload does. The
 * job never ends Succeeded with empty errors: with onUploadFailure "report" it follows the MPI exit and lists the
 * missing file in result.outputs.errors; with "fail" it fails. The same for a file every node uploads (its own upload
 * task per node): the lost one is named with its node.
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { DATA_ACCOUNT } from '../../local/azurite';
import { submitSpec, watchJob } from '../../local/jobRunner';
import type { OutputsResult } from '../../shared/core/contract';
import { smallSpec } from '../ops/helpers';

let stack: Stack;

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({ port: 0, demoImage: false, logDestination: path.join(logs, 'e2e-outputs-verified-host.log') });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

async function blobNames(prefix: string): Promise<string[]> {
  const names: string[] = [];
  for await (const b of stack.operator
    .blobService(DATA_ACCOUNT.name)
    .getContainerClient('results')
    .listBlobsFlat({ prefix: `${prefix}/` }))
    names.push(b.name.slice(prefix.length + 1));
  return names.sort();
}

const spec = (id: string, onUploadFailure: 'report' | 'fail') => `${smallSpec(id, { nodes: 1, command: 'cp /etc/hostname result.txt' })}
outputs: { account: ${DATA_ACCOUNT.name}, container: results, onUploadFailure: ${onUploadFailure}, files: [ { pattern: result.txt } ] }
`;

describe('outputs verified before success', () => {
  it('a lost upload is in result.outputs.errors (report) or fails the job (fail), never a silent success', async () => {
    stack.batch.setFaults({ lostUploads: { blobPattern: '**/workdir/result.txt' } });
    try {
      const [report, fail] = await Promise.all([submitSpec(stack, spec('ver-lost-report', 'report')), submitSpec(stack, spec('ver-lost-fail', 'fail'))]);
      const [r, f] = await Promise.all([watchJob(stack, report, 180_000), watchJob(stack, fail, 180_000)]);

      const outputs = r.result?.outputs as OutputsResult;
      expect(r.state).toBe('Succeeded');
      expect(outputs.errors).toEqual([
        `master: ${outputs.prefix}/workdir/result.txt was on the node but is not in the outputs container (its upload was lost)`,
      ]);
      // The rest of the master's uploads went through, and the lost one is really not there.
      const names = await blobNames(outputs.prefix);
      expect(names).toEqual(expect.arrayContaining(['logs/stdout.txt', 'logs/stderr.txt']));
      expect(names).not.toContain('workdir/result.txt');

      expect(f.state).toBe('Failed');
      const failed = f as typeof f & { error?: { message: string } };
      expect(failed.error?.message).toMatch(/outputs incomplete: master: .*workdir\/result\.txt was on the node but is not in the outputs container/);
    } finally {
      stack.batch.setFaults({ lostUploads: undefined });
    }
  }, 300_000);

  it('a lost every-node upload is named with its node in result.outputs.errors', async () => {
    // Each node writes node.log in its working directory before the run (the coordination command runs on every node).
    const allNodes = `id: ver-lost-nodes
name: ver-lost-nodes
tags: { suite: ops }
pool: { vmSize: Standard_D8s_v5, nodes: 2 }
container: { runtime: none }
data: { inputs: [] }
mpi: { runtime: openmpi, processesPerNode: 1, fabric: tcp, options: [--mca, btl_tcp_if_include, lo], coordinationCommand: 'echo "on $AZ_BATCH_NODE_ID" > node.log', command: 'true' }
limits: { maxWallClock: PT10M }
outputs: { account: ${DATA_ACCOUNT.name}, container: results, files: [ { pattern: node.log, from: allNodes } ] }
`;
    // One of the two nodes' node.log is lost without a trace.
    stack.batch.setFaults({ lostUploads: { blobPattern: '**/nodes/*/node.log', count: 1 } });
    try {
      const v = await watchJob(stack, await submitSpec(stack, allNodes), 180_000);
      const outputs = v.result?.outputs as OutputsResult;
      expect(v.state).toBe('Succeeded');
      expect(outputs.errors).toHaveLength(1);
      const [, node] = /^node (\S+): /.exec(outputs.errors[0]) ?? [];
      expect(outputs.errors[0]).toBe(
        `node ${node}: ${outputs.prefix}/nodes/${node}/node.log was on the node but is not in the outputs container (its upload was lost)`,
      );
      // The other node's upload went through: the check named only the lost one.
      const names = await blobNames(outputs.prefix);
      const landed = names.filter((n) => /^nodes\/[^/]+\/node\.log$/.test(n));
      expect(landed).toHaveLength(1);
      expect(landed[0]).not.toBe(`nodes/${node}/node.log`);
    } finally {
      stack.batch.setFaults({ lostUploads: undefined });
    }
  }, 300_000);
});
