/**
 * The job scratch at a fixed path (scratch.path) and BeeOND over the nodes' local disks (scratch.kind beeond; issue 26
 * item 2): validation with the mounts' fixed-path rules and field paths, the start task's BeeOND install, the
 * coordination and release commands, the image catalog's refusal, and `hpcjob explain --offline` on the example.
 */
import * as path from 'node:path';
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { scratchExport, scratchSetupScript, scratchTeardownScript } from '../../shared/core/mpi/sharedScratch';
import { nodeFilesystemSetup } from '../../shared/core/planning/nodeFilesystems';
import { checkImage } from '../../shared/core/images/imageChecks';
import { PlanningError } from '../../shared/core/planning/errors';
import { explainJob } from '../../shared/adapters/intake/explain';

const yaml = (scratch: string, extra = '') => `
name: s
pool: { vmSize: Standard_HB120rs_v3, nodes: 2 }
container: { runtime: none }
mpi: { runtime: openmpi, command: ./solver }
scratch: ${scratch}
${extra}`;

function spec(text: string): JobSpec {
  const r = parseJobSpec(text, 'application/yaml');
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
}
function errorsOf(text: string): { path: string; message: string }[] {
  const r = parseJobSpec(text, 'application/yaml');
  if (r.ok) throw new Error('expected the spec to be refused');
  return r.errors.map((e) => ({ path: e.path, message: e.message }));
}

describe('scratch.path', () => {
  it('accepts /scratch with every kind', () => {
    expect(spec(yaml('{ path: /scratch }')).scratch).toEqual({ kind: 'masterNfs', path: '/scratch' });
    expect(spec(yaml('{ kind: beeond, path: /scratch/job }')).scratch).toEqual({ kind: 'beeond', path: '/scratch/job' });
  });

  it('refuses what mounts[].path refuses, with the field path', () => {
    expect(errorsOf(yaml('{ path: /tmp/x }'))).toEqual([{ path: 'scratch.path', message: expect.stringContaining('must not be at or below /tmp') }]);
    expect(errorsOf(yaml('{ path: /home }'))).toEqual([{ path: 'scratch.path', message: expect.stringContaining('must not be /home itself') }]);
    expect(errorsOf(yaml('{ path: scratch }'))).toEqual([{ path: 'scratch.path', message: expect.stringContaining('an absolute path') }]);
    expect(errorsOf(yaml('{ path: /a/b/c/d/e }'))).toEqual([{ path: 'scratch.path', message: expect.stringContaining('at most 4') }]);
    expect(errorsOf(yaml('{ path: 7 }'))).toEqual([{ path: 'scratch.path', message: expect.stringContaining('must be a string') }]);
  });

  it("refuses a scratch at, inside or around a mount's fixed path", () => {
    const mounts = (p: string) => `mounts: [{ name: data, path: ${p}, nfs: { source: "10.0.0.4:/x" } }]`;
    for (const p of ['/scratch', '/scratch/a', '/sc']) {
      const at = p === '/sc' ? '/sc/x' : '/scratch';
      expect(errorsOf(yaml(`{ path: ${at} }`, mounts(p)))).toEqual([
        { path: 'scratch.path', message: expect.stringContaining(`overlaps mounts[0].path ${p}`) },
      ]);
    }
    expect(spec(yaml('{ path: /scratch }', mounts('/data'))).scratch?.path).toBe('/scratch');
  });

  it("binds the job's scratch at the path on every node and exports the path; the release task unmounts it first", () => {
    const s = { kind: 'masterNfs' as const, jobId: 'j-1', path: '/scratch' };
    expect(scratchExport(s)).toBe('export MPIJOB_SCRATCH=/scratch');
    const setup = scratchSetupScript(s);
    // The node's own scratch is ready first, then the bind, then the variable names the fixed path.
    expect(setup.indexOf('exportfs')).toBeLessThan(setup.indexOf('mount --bind "$MPIJOB_SCRATCH" /scratch'));
    expect(setup.indexOf('mount --bind "$MPIJOB_SCRATCH" /scratch')).toBeLessThan(setup.indexOf('export MPIJOB_SCRATCH=/scratch'));
    expect(setup).toContain('if mountpoint -q /scratch; then umount -l /scratch; fi');
    const release = scratchTeardownScript(s);
    expect(release.indexOf('umount -l /scratch')).toBeLessThan(release.indexOf('exportfs -u'));
    expect(() => scratchExport({ ...s, path: '/etc/x' })).toThrow(PlanningError);
  });
});

describe('scratch.kind beeond', () => {
  const s = { kind: 'beeond' as const, jobId: 'j-2' };

  it("the master runs beeond start over the job's nodes with the local disk dir; the others wait for the mount", () => {
    const setup = scratchSetupScript(s);
    expect(setup).toContain('printf \'%s\\n\' ${AZ_BATCH_HOST_LIST//,/ } > "$AZ_BATCH_NODE_SHARED_DIR/scratch/j-2.nodes"');
    expect(setup).toContain(
      'beeond start -n "$AZ_BATCH_NODE_SHARED_DIR/scratch/j-2.nodes" -d "$AZ_BATCH_NODE_SHARED_DIR/beeond/j-2" -c "$MPIJOB_SCRATCH" -i "$AZ_BATCH_NODE_SHARED_DIR/scratch/j-2.beeond"',
    );
    expect(setup).toMatch(/else .*until mountpoint -q "\$MPIJOB_SCRATCH"/);
    expect(setup).not.toContain('exportfs');
  });

  it('the release task on the master runs beeond stop (data and logs deleted); it never fails', () => {
    const release = scratchTeardownScript(s);
    expect(release).toContain('beeond stop -n "$AZ_BATCH_NODE_SHARED_DIR/scratch/j-2.nodes" -L -d -i "$AZ_BATCH_NODE_SHARED_DIR/scratch/j-2.beeond"');
    expect(release.startsWith('{ ')).toBe(true);
    expect(release.endsWith('} || true')).toBe(true);
  });

  it("the pool's start task checks for beeond and installs it from the BeeGFS repository when missing", () => {
    const lines = nodeFilesystemSetup([], { kind: 'beeond' }).join('\n');
    expect(lines).toMatch(/^if ! command -v beeond/);
    expect(lines).toContain('apt-get install -y -q beeond "linux-headers-$(uname -r)"');
    expect(lines).toContain('dnf install -y -q beeond');
    expect(nodeFilesystemSetup([], { kind: 'masterNfs' })).toEqual([]);
  });

  it('the image check refuses an image BeeGFS does not package, with the reason', () => {
    const base = { container: { runtime: 'none' as const }, mpi: { command: './a', launcher: { mode: 'managed' as const } }, scratch: { kind: 'beeond' } };
    const centos = checkImage({ ...base, pool: { image: { publisher: 'openlogic', offer: 'centos-hpc', sku: '7.7' } } });
    expect(centos.findings).toEqual([
      expect.objectContaining({ path: 'scratch.kind', kind: 'scratch', message: expect.stringContaining('cannot run BeeOND') }),
    ]);
    expect(checkImage({ ...base, pool: {} }).findings).toEqual([]);
    expect(
      checkImage({ ...base, scratch: { kind: 'masterNfs' }, pool: { image: { publisher: 'openlogic', offer: 'centos-hpc', sku: '7.7' } } }).findings,
    ).toEqual([]);
  });

  it("is refused with pool.poolId (a reused pool's start task cannot install it)", () => {
    expect(errorsOf(yaml('{ kind: beeond }').replace('pool: { vmSize: Standard_HB120rs_v3, nodes: 2 }', 'pool: { poolId: p1, nodes: 2 }'))).toContainEqual({
      path: 'scratch.kind',
      message: expect.stringContaining('pool.poolId'),
    });
  });
});

describe('hpcjob explain --offline on beeond-scratch-ior.yaml', () => {
  it('shows the start task installing BeeOND, beeond start in the coordination command, beeond stop in the release task, /scratch', async () => {
    const { explainCommand } = await import('../../cli/commands/explain');
    const out: string[] = [];
    const ctx = {
      json: true,
      out: (t: string) => out.push(t),
      err: () => undefined,
      api: () => {
        throw new Error('offline');
      },
    };
    await explainCommand(ctx as unknown as Parameters<typeof explainCommand>[0], path.join(__dirname, '../../examples/workloads/beeond-scratch-ior.yaml'), {
      offline: true,
    });
    const doc = JSON.parse(out.join('')) as ReturnType<typeof explainJob>;
    expect(doc.scratch).toMatchObject({ kind: 'beeond', path: '/scratch' });
    const startTask = (doc.pool.request as { startTask?: { commandLine: string } }).startTask?.commandLine ?? '';
    expect(startTask).toContain('command -v beeond');
    const all = JSON.stringify(doc);
    expect(all).toContain('beeond start -n');
    expect(all).toContain('beeond stop -n');
    expect(all).toContain('mount --bind \\"$MPIJOB_SCRATCH\\" /scratch');
  });
});
