/** Every committed example job spec parses, so the docs and examples never rot. */
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseJobSpec } from '../../shared/core/spec';

const dir = path.join(__dirname, '../../examples/jobs');
const files = readdirSync(dir).filter((f) => /\.(ya?ml|json)$/.test(f));

test('there are example specs', () => {
  expect(files).toEqual(expect.arrayContaining(['native-openmpi.yaml', 'docker-intelmpi-hb.yaml']));
});

test.each(files)('examples/jobs/%s parses', (file) => {
  const text = readFileSync(path.join(dir, file), 'utf8');
  const r = parseJobSpec(text, file.endsWith('.json') ? 'application/json' : 'application/yaml');
  if (!r.ok) throw new Error(`${file}: ${JSON.stringify(r.errors, null, 2)}`);
  expect(r.spec.name.length).toBeGreaterThan(0);
});

test('the two documented examples say what the docs claim', () => {
  const read = (f: string) => {
    const r = parseJobSpec(readFileSync(path.join(dir, f), 'utf8'), 'application/yaml');
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    return r.spec;
  };
  const native = read('native-openmpi.yaml');
  expect(native).toMatchObject({ container: { runtime: 'none' }, mpi: { runtime: 'openmpi', sshPort: 22 }, pool: { nodes: 4 } });
  expect(native.data.inputs.length).toBeGreaterThan(0);
  const hb = read('docker-intelmpi-hb.yaml');
  expect(hb).toMatchObject({
    container: { runtime: 'docker' },
    mpi: { runtime: 'intelmpi', fabric: 'rdma', sshPort: 23 },
    pool: { vmSize: 'Standard_HB120rs_v3' },
  });
});
