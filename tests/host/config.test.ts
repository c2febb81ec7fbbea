import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { AzuriteHandle } from '../../local/azurite';
import { startFunctionsHost, type HostContext } from '../../local/host';
import { loadLocalSettings } from '../../local/settings/localSettings';
import { parseCliArgs } from '../../local/host/main';
import { LogCapture, startAzurite } from './harness';

/** A throw-away app in a temp dir: plain JS entry point, local.settings.json, host.json with routePrefix. */
async function makeTempApp(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'host-config-app-'));
  const lib = JSON.stringify(require.resolve('@azure/functions'));
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name: 'tmp-app', main: 'dist/*.js' }));
  await writeFile(path.join(dir, 'host.json'), JSON.stringify({ version: '2.0', extensions: { http: { routePrefix: 'v1' } } }));
  await writeFile(
    path.join(dir, 'local.settings.json'),
    JSON.stringify({
      IsEncrypted: false,
      Host: { LocalHttpPort: 7099 },
      Values: { GREETING: 'hello from settings', PRESET_ELSEWHERE: 'from file', AzureWebJobsStorage: 'UseDevelopmentStorage=true' },
    }),
  );
  await import('node:fs/promises').then((fs) => fs.mkdir(path.join(dir, 'dist')));
  await writeFile(
    path.join(dir, 'dist', 'index.js'),
    `const { app } = require(${lib});
app.get('env', { route: 'env', authLevel: 'function', handler: () => ({ jsonBody: {
  greeting: process.env.GREETING, preset: process.env.PRESET_ELSEWHERE, storage: process.env.AzureWebJobsStorage } }) });`,
  );
  return dir;
}

describe('local host: configuration', () => {
  let azurite: AzuriteHandle;
  let appDir: string;

  beforeAll(async () => {
    azurite = await startAzurite();
    appDir = await makeTempApp();
  });
  afterAll(async () => {
    await azurite?.stop();
    if (appDir) await rm(appDir, { recursive: true, force: true });
  });

  it('loads local.settings.json Values (environment wins), routePrefix from host.json, and creates keys on first start', async () => {
    process.env.PRESET_ELSEWHERE = 'from environment';
    const keysFile = path.join(appDir, '.local', 'function-keys.json');
    try {
      const host = await startFunctionsHost({ appDir, port: 0, storageConnectionString: azurite.connectionString(), logDestination: new LogCapture() });
      let firstKeys;
      try {
        expect(existsSync(keysFile)).toBe(true);
        firstKeys = JSON.parse(readFileSync(keysFile, 'utf8')) as { functionKey: string; masterKey: string };
        expect(firstKeys).toEqual(host.keys);
        expect((await fetch(`${host.baseUrl}/v1/env`)).status).toBe(401);
        const res = await fetch(`${host.baseUrl}/v1/env?code=${host.keys.functionKey}`);
        expect(await res.json()).toEqual({
          greeting: 'hello from settings',
          preset: 'from environment',
          storage: azurite.connectionString(), // the host's storage overrides the file's dev-storage shortcut
        });
        expect((await fetch(`${host.baseUrl}/api/env`)).status).toBe(404);
      } finally {
        await host.stop();
      }
      expect(process.env.GREETING).toBeUndefined();
      // Second start: the same keys from the file.
      const again = await startFunctionsHost({ appDir, port: 0, storageConnectionString: azurite.connectionString(), logDestination: new LogCapture() });
      expect(again.keys).toEqual(firstKeys);
      await again.stop();
    } finally {
      delete process.env.PRESET_ELSEWHERE;
    }
  });

  it('creates an extension webhook system key on first use, saves it to the keys file and reuses it after a restart', async () => {
    const keysFile = path.join(appDir, '.local', 'function-keys.json');
    const asking = { urls: [] as string[] };
    const extension = {
      name: 'asker',
      triggerTypes: [],
      inputBindingTypes: [],
      start: async (host: HostContext) => {
        asking.urls.push(host.webhookUrl('durabletask'));
      },
      stop: async () => undefined,
    };
    const first = await startFunctionsHost({
      appDir,
      port: 0,
      storageConnectionString: azurite.connectionString(),
      logDestination: new LogCapture(),
      extensions: [extension],
    });
    await first.stop();
    const saved = JSON.parse(readFileSync(keysFile, 'utf8')) as { systemKeys: Record<string, string> };
    expect(saved.systemKeys.durabletask_extension).toMatch(/^[A-Za-z0-9_-]{40}$/);
    expect(asking.urls[0]).toBe(`${first.baseUrl}/runtime/webhooks/durabletask?code=${saved.systemKeys.durabletask_extension}`);
    const second = await startFunctionsHost({
      appDir,
      port: 0,
      storageConnectionString: azurite.connectionString(),
      logDestination: new LogCapture(),
      extensions: [extension],
    });
    try {
      expect(new URL(asking.urls[1]).searchParams.get('code')).toBe(saved.systemKeys.durabletask_extension);
      // The file keeps the function and master keys next to it.
      expect(second.keys).toEqual(JSON.parse(readFileSync(keysFile, 'utf8')));
      // Without an extension answering it, a keyed webhook request reaches no one (404); unkeyed it is refused (401).
      expect((await fetch(`${second.baseUrl}/runtime/webhooks/durabletask/instances?code=${saved.systemKeys.durabletask_extension}`)).status).toBe(404);
      expect((await fetch(`${second.baseUrl}/runtime/webhooks/durabletask/instances`)).status).toBe(401);
    } finally {
      await second.stop();
    }
  });

  it('writes its log to a file when given a path', async () => {
    const logFile = path.join(appDir, 'logs', 'host.log');
    const host = await startFunctionsHost({
      appDir,
      port: 0,
      storageConnectionString: azurite.connectionString(),
      logDestination: logFile,
      keys: { functionKey: 'f', masterKey: 'm' },
    });
    await fetch(`${host.baseUrl}/v1/env?code=f`);
    await host.stop();
    const lines = readFileSync(logFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string; functionName?: string });
    expect(lines.some((l) => l.functionName === 'env' && /Executed 'Functions.env' \(Succeeded\)/.test(l.msg))).toBe(true);
    expect(lines.at(-1)?.msg).toBe('Functions host stopped');
  });

  it('fails with the entry-point pattern when nothing matches package.json main', async () => {
    const empty = await mkdtemp(path.join(tmpdir(), 'host-empty-app-'));
    try {
      await writeFile(path.join(empty, 'package.json'), JSON.stringify({ main: 'dist/functions/*.js' }));
      await expect(
        startFunctionsHost({
          appDir: empty,
          port: 0,
          storageConnectionString: azurite.connectionString(),
          keys: { functionKey: 'a', masterKey: 'b' },
          logDestination: new LogCapture(),
        }),
      ).rejects.toThrow(/No entry point matches package.json "main" \("dist\/functions\/\*\.js"\)/);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('CLI port: --port, else local.settings.json Host.LocalHttpPort, else 7071', () => {
    expect(parseCliArgs(['--app', appDir]).port).toBe(7099);
    expect(parseCliArgs(['--app', appDir, '--port', '0']).port).toBe(0);
    expect(parseCliArgs(['--app', tmpdir()]).port).toBe(7071);
    expect(() => parseCliArgs(['--app', appDir, '--port', 'x'])).toThrow(/--port must be an integer/);
  });

  it('loadLocalSettings refuses non-string values and encrypted files', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'host-settings-'));
    try {
      await writeFile(path.join(dir, 'local.settings.json'), JSON.stringify({ Values: { A: 'x', N: 3, O: { nested: true } } }));
      expect(() => loadLocalSettings(dir, {})).toThrow(/Values\.O must be a string/);
      await writeFile(path.join(dir, 'local.settings.json'), JSON.stringify({ IsEncrypted: true, Values: {} }));
      expect(() => loadLocalSettings(dir, {})).toThrow(/encrypted/);
      await writeFile(path.join(dir, 'local.settings.json'), JSON.stringify({ Values: { A: 'x', N: 3 } }));
      expect(loadLocalSettings(dir, { A: 'set' })).toEqual({ N: '3' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
