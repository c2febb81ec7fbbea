/** parseJobSpec on hand-picked inputs: formats, messages, defaults, identity helpers. */
import fc from 'fast-check';
import { deriveJobId, diffSpecs, MAX_SPEC_TEXT_CHARS, parseJobSpec, resolveDestination, specHash, type JobSpec } from '../../shared/core/spec';
import { jsonErrorOffset } from '../../shared/core/spec/jsonErrorOffset';

const minimal = { name: 'demo', pool: { vmSize: 'Standard_HB120rs_v3', nodes: 4 }, mpi: { runtime: 'openmpi', command: './app' } };

function ok(input: unknown, type?: string): JobSpec {
  const r = parseJobSpec(input, type);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
}
function errors(input: unknown, type?: string) {
  const r = parseJobSpec(input, type);
  if (r.ok) throw new Error('expected a rejection');
  return r.errors;
}

test('defaults are applied and documented values come out', () => {
  const spec = ok(minimal);
  expect(spec.pool).toMatchObject({
    lowPriorityNodes: 0,
    resizeTimeout: 'PT15M',
    partialAllocation: { policy: 'fail' },
    image: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204', version: 'latest' },
    nodeAgentSku: 'batch.node.ubuntu 22.04',
  });
  expect(spec.container).toEqual({ runtime: 'none', images: [], pullConcurrency: 10, allowAboveTen: false, imageDistribution: 'peers', gpus: false });
  expect(spec.data).toEqual({ inputs: [], shardSizeMB: { min: 80, max: 100 }, recordBytes: 1, stagingAccounts: [], retention: 'P2D' });
  expect(spec.mpi).toMatchObject({ processesPerNode: 'nproc', fabric: 'auto', options: [], env: {}, sshPort: 22 });
  expect(spec.limits).toEqual({ maxRetries: 0 });
  expect(spec.cleanup).toEqual({ autoComplete: true, deletePool: 'always', keepStagedData: false });
  expect(resolveDestination(spec, 'job-1', '/mnt/batch/tasks/shared/')).toBe('/mnt/batch/tasks/shared/jobdata/job-1');
});

test('docker defaults the ssh port to 23; a reused pool is never deleted and gets no default image', () => {
  const docker = ok({ ...minimal, container: { runtime: 'docker', images: ['myregistry.azurecr.io/hpc/app:1.0'] } });
  expect(docker.mpi.sshPort).toBe(23);
  const reuse = ok({ ...minimal, pool: { poolId: 'shared-hb-pool', nodes: 2 } });
  expect(reuse.cleanup.deletePool).toBe('never');
  expect(reuse.pool.image).toBeUndefined();
  expect(reuse.pool.vmSize).toBeUndefined();
});

test('YAML syntax errors carry line and column', () => {
  const errs = errors('name: demo\npool:\n  nodes: [1, 2\nmpi: {}\n', 'application/yaml');
  expect(errs[0].path).toBe('');
  expect(errs[0].message).toMatch(/^YAML syntax error/);
  expect(errs[0].line).toBeGreaterThanOrEqual(3);
  expect(errs[0].column).toBeGreaterThanOrEqual(1);
});

test('duplicate YAML keys are an error, not a silent last-one-wins', () => {
  const errs = errors('name: a\nname: b\n');
  expect(errs[0].message).toMatch(/the key "name" appears twice/);
  expect(errs[0].line).toBe(2);
});

test('JSON syntax errors carry line and column', () => {
  const errs = errors('{\n  "name": "demo",\n  "pool": { "nodes": 4, }\n}', 'application/json; charset=utf-8');
  expect(errs[0]).toMatchObject({ path: '', line: 3, column: 25 });
});

test('JSON without a content type is read as YAML (a superset), so both work', () => {
  expect(ok(JSON.stringify(minimal)).name).toBe('demo');
});

test('every problem is listed at once, each with its path', () => {
  const errs = errors({
    name: 'bad name',
    pool: { vmSize: 'Standard_HB120rs_v3', nodes: 200 },
    container: { runtime: 'docker', images: [] },
    mpi: { runtime: 'openmpi', command: './app', env: { 'BAD-KEY': 'x' } },
  });
  expect(errs.map((e) => e.path).sort()).toEqual(['container.images', 'mpi.env["BAD-KEY"]', 'name', 'pool.nodes']);
  expect(errs.find((e) => e.path === 'pool.nodes')!.message).toMatch(/at most 100.*inter-node/);
});

test('a registry password is rejected with an explanation, at the password field', () => {
  const errs = errors({
    ...minimal,
    container: { runtime: 'docker', images: ['r.io/app:1'], registry: { server: 'r.io', identity: 'managed', password: 'hunter2' } },
  });
  expect(errs).toHaveLength(1);
  expect(errs[0].path).toBe('container.registry.password');
  expect(errs[0].message).toMatch(/never accepted.*secretRef/);
});

test('registry secrets by reference are accepted', () => {
  for (const secretRef of ['https://myvault.vault.azure.net/secrets/acr-token', 'ACR_TOKEN_SETTING']) {
    ok({ ...minimal, container: { runtime: 'docker', images: ['r.io/app:1'], registry: { server: 'r.io', identity: { secretRef, username: 'pull-token' } } } });
  }
});

test('missing fields say "is required"; numbers where strings belong get a YAML hint', () => {
  const errs = errors(
    'name: demo\npool:\n  nodes: 2\n  vmSize: Standard_D2s_v3\n  image: { publisher: p, offer: o, sku: 2204 }\n  nodeAgentSku: batch.node.ubuntu 22.04\nmpi:\n  runtime: openmpi\n',
  );
  expect(errs).toEqual(
    expect.arrayContaining([
      { path: 'mpi.command', message: 'is required' },
      expect.objectContaining({ path: 'pool.image.sku', message: expect.stringMatching(/got number 2204.*quote/) }),
    ]),
  );
});

test('not an object at all', () => {
  expect(errors('- a\n- b\n')[0].message).toMatch(/must be an object/);
  expect(errors('')[0].message).toMatch(/must be an object/);
  expect(errors(42)[0].path).toBe('');
});

test('YAML alias bombs are refused, not expanded', () => {
  const bomb = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
  for (let i = 1; i < 10; i++)
    bomb.push(
      `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10)
        .fill(`*${String.fromCharCode(96 + i)}`)
        .join(',')}]`,
    );
  const errs = errors(bomb.join('\n'));
  expect(errs[0].message).toMatch(/alias/i);
});

test('specHash ignores key order; deriveJobId follows the documented precedence', () => {
  const a = ok(minimal);
  const b = ok({ mpi: { command: './app', runtime: 'openmpi' }, pool: { nodes: 4, vmSize: 'Standard_HB120rs_v3' }, name: 'demo' });
  expect(specHash(a)).toBe(specHash(b));
  expect(specHash(a)).toMatch(/^[a-f0-9]{64}$/);
  expect(deriveJobId(a)).toBe(`h-${specHash(a).slice(0, 32)}`);
  expect(deriveJobId(a, 'queue-message-123')).toMatch(/^k-[a-f0-9]{32}$/);
  expect(deriveJobId(a, 'queue-message-123')).toBe(deriveJobId(b, 'queue-message-123'));
  expect(deriveJobId(a, 'queue-message-123')).not.toBe(deriveJobId(a, 'queue-message-124'));
  const withId = ok({ ...minimal, id: 'my-run-7' });
  expect(deriveJobId(withId, 'ignored-key')).toBe('my-run-7');
  expect(specHash(withId)).not.toBe(specHash(a));
});

test('diffSpecs names the differing paths', () => {
  const a = ok({ ...minimal, container: { runtime: 'docker', images: ['app:1', 'tools:2'] } });
  const b = ok({ ...minimal, pool: { ...minimal.pool, nodes: 8 }, container: { runtime: 'docker', images: ['app:1'] }, tags: { x: 'y' } });
  expect(diffSpecs(a, b)).toEqual(['container.images[1]', 'pool.nodes', 'tags.x']);
  expect(diffSpecs(a, a)).toEqual([]);
});

test('the JSON error locator agrees with JSON.parse: valid text has no error, broken text is located inside it', () => {
  fc.assert(
    fc.property(fc.jsonValue(), fc.nat(), (value, cutAt) => {
      const text = JSON.stringify(value, null, 1);
      expect(jsonErrorOffset(text)).toBe(text.length);
      const cut = text.slice(0, cutAt % (text.length + 1));
      let parses = true;
      try {
        JSON.parse(cut);
      } catch {
        parses = false;
      }
      const offset = jsonErrorOffset(cut);
      if (parses) expect(offset).toBe(cut.length);
      else expect(offset).toBeLessThanOrEqual(cut.length);
    }),
    { numRuns: 300 },
  );
});

test('oversized bodies are refused before parsing', () => {
  const errs = errors(`name: x\n#${'y'.repeat(MAX_SPEC_TEXT_CHARS)}`);
  expect(errs[0].message).toMatch(/too large/);
});

test("the image distribution and the preflight's pre-execution switch refuse other values, with their paths", () => {
  const docker = { runtime: 'docker', images: ['r.io/app:1'] };
  expect(errors({ ...minimal, container: { ...docker, imageDistribution: 'torrent' } })).toEqual([
    expect.objectContaining({ path: 'container.imageDistribution' }),
  ]);
  expect(errors({ ...minimal, preflight: { runPreExecutionCommand: 'no' } })).toEqual([expect.objectContaining({ path: 'preflight.runPreExecutionCommand' })]);
  expect(ok({ ...minimal, container: { ...docker, imageDistribution: 'registry' } }).container.imageDistribution).toBe('registry');
});

test('cleanup.autoComplete (honoured since stop 22) takes true or false only, with its path', () => {
  for (const bad of ['no', 0, null, {}]) {
    expect(errors({ ...minimal, cleanup: { autoComplete: bad } })).toEqual([
      expect.objectContaining({ path: 'cleanup.autoComplete', message: expect.stringMatching(/^must be true or false/) }),
    ]);
  }
  expect(ok({ ...minimal, cleanup: { autoComplete: false } }).cleanup.autoComplete).toBe(false);
});
