/**
 * The examples' licence server (local/licenceServer.ts) and where `npm start` serves it (local/exampleNetwork.ts):
 * the answer to a checkout line, the server over real sockets, and its ports as TCP services of the examples' subnet,
 * the subnet pools without pool.network join (POOL_SUBNET_ID).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { EXAMPLE_SUBNET_ID, exampleNetwork, exampleNetworkSettings } from '../../local/exampleNetwork';
import { licenceAnswer, startLicenceServer } from '../../local/licenceServer';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const ROOT = path.join(__dirname, '..', '..');

test('GRANTED for the hash of the site key only', () => {
  expect(licenceAnswer(`CHECKOUT ${sha('k1')}`, 'k1')).toBe('GRANTED');
  expect(licenceAnswer(`CHECKOUT ${sha('k2')}`, 'k1')).toBe('DENIED');
  expect(licenceAnswer('CHECKOUT k1', 'k1')).toBe('DENIED');
  expect(licenceAnswer('', 'k1')).toBe('DENIED');
});

test('the server answers one line per connection and records the checkouts', async () => {
  const server = await startLicenceServer({ key: 'k1' });
  const ask = (line: string) =>
    new Promise<string>((resolve, reject) => {
      let out = '';
      const s = connect(server.lmgrdPort, '127.0.0.1', () => s.write(`${line}\n`));
      s.on('data', (d) => (out += d.toString()));
      s.on('end', () => resolve(out));
      s.on('error', reject);
    });
  try {
    expect(await ask(`CHECKOUT ${sha('k1')}`)).toBe('GRANTED\n');
    expect(await ask(`CHECKOUT ${sha('nope')}`)).toBe('DENIED\n');
    expect(server.checkouts).toEqual([`CHECKOUT ${sha('k1')}`, `CHECKOUT ${sha('nope')}`]);
  } finally {
    await server.stop();
  }
});

test("the examples' network serves 10.0.0.4:27000 and :27001 in their subnet, the default subnet of pools", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'exnet-'));
  try {
    const without = exampleNetwork(dir, ROOT);
    expect(without.services.map((s) => s.name)).not.toContain('licence-server');
    const { services } = exampleNetwork(dir, ROOT, { lmgrdPort: 40001, vendorPort: 40002 });
    expect(services.find((s) => s.name === 'licence-server')).toEqual({
      name: 'licence-server',
      subnetId: EXAMPLE_SUBNET_ID,
      address: '10.0.0.4',
      exports: [],
      tcp: [
        { port: 27000, target: 40001 },
        { port: 27001, target: 40002 },
      ],
    });
    expect(exampleNetworkSettings().POOL_SUBNET_ID).toBe(EXAMPLE_SUBNET_ID);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
