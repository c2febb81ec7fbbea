/**
 * Azurite saves its stores every AZURITE_AUTOSAVE_MS (1 s) instead of its hard-coded 5 s, so a SIGKILL of the whole
 * stack loses at most about a second of acknowledged writes (docs/local-stack.md; bench/azuriteAutosave.ts measures
 * the window and the cost).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { TableClient } from '@azure/data-tables';
import { AZURITE_AUTOSAVE_MS, startAzurite } from '../../local/azurite';
import { waitFor } from './harness';

const AUTOSAVE = path.resolve(__dirname, '../../local/azurite/autosave.cjs');

describe('Azurite autosave interval', () => {
  it('gives every LokiJS store opened with autosave the configured interval (Azurite hard-codes 5000)', () => {
    const probe = `require(${JSON.stringify(AUTOSAVE)});
      const Loki = require(require.resolve('lokijs', { paths: [require('path').dirname(require.resolve('azurite/package.json'))] }));
      const saved = new Loki('x.json', { persistenceMethod: 'memory', autosave: true, autosaveInterval: 5000 });
      const plain = new Loki('y.json', { persistenceMethod: 'memory' });
      saved.autosaveDisable();
      console.log(JSON.stringify([saved.autosaveInterval, plain.autosave]));`;
    const out = execFileSync(process.execPath, ['-e', probe], {
      cwd: path.resolve(__dirname, '../..'),
      env: { ...process.env, HPC_AZURITE_AUTOSAVE_MS: '1000' },
    }).toString();
    expect(JSON.parse(out)).toEqual([1000, false]);
    expect(AZURITE_AUTOSAVE_MS).toBe(1000);
  });

  it("refuses a nonsensical interval rather than running with Azurite's", () => {
    expect(() =>
      execFileSync(process.execPath, ['-e', `require(${JSON.stringify(AUTOSAVE)})`], {
        env: { ...process.env, HPC_AZURITE_AUTOSAVE_MS: 'soon' },
        stdio: 'pipe',
      }),
    ).toThrow(/HPC_AZURITE_AUTOSAVE_MS must be an integer/);
  });

  it('keeps acknowledged inserts across a SIGKILL once the store has saved without a stop', async () => {
    const location = await mkdtemp(path.join(tmpdir(), 'azurite-autosave-test-'));
    try {
      const a = await startAzurite({ location });
      const t = TableClient.fromConnectionString(a.connectionString(), 'kept', { allowInsecureConnection: true });
      await t.createTable();
      for (let i = 0; i < 50; i++) await t.createEntity({ partitionKey: 'p', rowKey: String(i).padStart(3, '0'), n: i });
      // Saved while running (no stop, no close): the last insert is in the table store's file.
      const file = path.join(location, '__azurite_db_table__.json');
      await waitFor(
        'the table store saved with the last insert',
        () => (existsSync(file) && readFileSync(file, 'utf8').includes('"RowKey":"049"') ? true : undefined),
        20_000,
      );
      process.kill(a.pid, 'SIGKILL');
      await waitFor('Azurite gone', () => {
        try {
          process.kill(a.pid, 0);
          return undefined;
        } catch {
          return true;
        }
      });
      const b = await startAzurite({ location });
      let n = 0;
      for await (const _ of TableClient.fromConnectionString(b.connectionString(), 'kept', { allowInsecureConnection: true }).listEntities()) n++;
      await b.stop();
      expect(n).toBe(50);
    } finally {
      await rm(location, { recursive: true, force: true });
    }
  }, 60_000);
});
