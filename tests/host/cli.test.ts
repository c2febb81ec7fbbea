import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { FIXTURE_APP, waitFor } from './harness';

const MAIN = path.resolve(__dirname, '../../local/host/main.ts');

function portIsOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('local host CLI (main.ts)', () => {
  let child: ChildProcess | undefined;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'host-cli-azurite-'));
  });
  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  it('starts Azurite and the host, prints the banner, serves requests and stops cleanly on SIGINT', async () => {
    child = spawn(
      process.execPath,
      ['--import', 'tsx', MAIN, '--app', FIXTURE_APP, '--port', '0', '--azurite-location', dataDir, '--log-level', 'info', '--pretty'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, NODE_OPTIONS: '' },
      },
    );
    let out = '';
    let err = '';
    child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<number | null>((resolve) => child?.once('exit', (code) => resolve(code)));

    const baseUrl = await waitFor('the banner', () => /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1], 60_000).catch((e: Error) => {
      throw new Error(`${e.message}\nstdout:\n${out}\nstderr:\n${err}`);
    });
    await waitFor('Press Ctrl+C', () => (out.includes('Press Ctrl+C') ? true : undefined));
    expect(out).toContain(`greet: [GET,POST] ${baseUrl}/api/greet/{name:alpha}/{count:int?}`);
    const blobPort = Number(/Azurite: blob http:\/\/127\.0\.0\.1:(\d+)\//.exec(out)?.[1]);
    expect(blobPort).toBeGreaterThan(0);

    const res = await fetch(`${baseUrl}/api/greet/Cli`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ name: 'Cli' });
    // --pretty: one readable line per log entry, with function name and invocation id.
    await waitFor('the pretty user log line', () => (/INFO: \[greet [0-9a-f-]{36}\] greeting Cli/.test(out) ? true : undefined));

    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(out).toContain('SIGINT: stopping the host');
    expect(await portIsOpen(blobPort)).toBe(false); // Azurite went down with the host
  });
});
