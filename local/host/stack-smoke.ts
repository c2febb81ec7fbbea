/**
 * Smoke test of the embedded stack on the real app: Azurite + the local host on the compiled app
 * (repo root, `dist/` from `npm run build`), GET /api/health, then stop everything.
 *   node --import tsx local/host/stack-smoke.ts    (exit code 0 on success)
 */
import * as path from 'node:path';
import { startAzurite } from '../azurite';
import { startFunctionsHost } from './index';

export async function runSmoke(): Promise<void> {
  const appDir = path.resolve(__dirname, '..', '..');
  const azurite = await startAzurite();
  try {
    const host = await startFunctionsHost({
      appDir,
      port: 0,
      storageConnectionString: azurite.connectionString(),
      logLevel: 'warn',
      logDestination: 2,
    });
    try {
      process.stdout.write(`${host.banner()}\n\n`);
      const url = `${host.baseUrl}/api/health`;
      const res = await fetch(url);
      const text = await res.text();
      process.stdout.write(`GET ${url} -> ${res.status} ${text}\n`);
      if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${text}`);
      const body = JSON.parse(text) as { status?: string };
      if (body.status !== 'ok') throw new Error(`GET ${url} did not report status "ok": ${text}`);
    } finally {
      await host.stop();
    }
  } finally {
    await azurite.stop();
  }
}

if (require.main === module) {
  runSmoke().then(
    () => process.stdout.write('smoke: OK\n'),
    (err: unknown) => {
      process.stderr.write(`smoke: FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
