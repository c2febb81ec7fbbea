import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { holdLauncher } from '../../local/batch/runner/launcher';
import { groupAlive, killGroup, runCommandLine } from '../../local/batch/runner/processes';

// Node processes are started by a small launcher process, not forked from the large process hosting the stack
// (~14 ms of CPU per fork of that process). What runs and what the emulator sees of it must be unchanged.
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'launcher-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const files = (name: string) => ({ stdoutPath: path.join(dir, `${name}.out`), stderrPath: path.join(dir, `${name}.err`) });
const read = (p: string) => readFileSync(p, 'utf8');

describe('node processes through the launcher', () => {
  it('run the command line with its cwd and environment, append its output, and report its exit code', async () => {
    const f = files('exit');
    const proc = await runCommandLine({
      commandLine: `/bin/sh -c 'echo "$GREETING $PWD"; echo oops >&2; exit 3'`,
      cwd: dir,
      env: { GREETING: 'hello', PATH: '/usr/bin:/bin' },
      ...f,
    });
    expect(proc.pgid).toBeGreaterThan(0);
    expect(await proc.done).toEqual({ exitCode: 3 });
    expect(read(f.stdoutPath)).toBe(`hello ${dir}\n`);
    expect(read(f.stderrPath)).toBe('oops\n');
    // Appended, as a node agent does with a retried task's files.
    await (
      await runCommandLine({ commandLine: '/bin/echo again', cwd: dir, env: {}, ...f })
    ).done;
    expect(read(f.stdoutPath)).toBe(`hello ${dir}\nagain\n`);
  });

  it('are not children of the stack process, and lead their own process group', async () => {
    const f = files('parent');
    const proc = await runCommandLine({ commandLine: `/bin/sh -c 'echo $PPID; ps -o pgid= -p $$'`, cwd: dir, env: { PATH: '/usr/bin:/bin' }, ...f });
    expect(await proc.done).toEqual({ exitCode: 0 });
    const [ppid, pgid] = read(f.stdoutPath).trim().split(/\s+/).map(Number);
    expect(ppid).not.toBe(process.pid);
    expect(pgid).toBe(proc.pgid);
  });

  it('can be killed as a group by the stack, which sees the signal', async () => {
    const f = files('kill');
    const proc = await runCommandLine({ commandLine: `/bin/sh -c 'sleep 60 & sleep 60'`, cwd: dir, env: { PATH: '/usr/bin:/bin' }, ...f });
    expect(groupAlive(proc.pgid as number)).toBe(true);
    killGroup(proc.pgid);
    expect(await proc.done).toEqual({ signal: 'SIGKILL' });
    for (let i = 0; i < 500 && groupAlive(proc.pgid as number); i++) await new Promise((r) => setTimeout(r, 20));
    expect(groupAlive(proc.pgid as number)).toBe(false);
  });

  it('report a program that cannot start as a start failure naming it', async () => {
    const proc = await runCommandLine({ commandLine: 'no-such-program-xyz arg', cwd: dir, env: { PATH: '/usr/bin:/bin' }, ...files('missing') });
    expect(proc.pgid).toBeUndefined();
    expect((await proc.done).spawnError).toMatch(/^no-such-program-xyz: spawn no-such-program-xyz ENOENT/);
  });

  it('run many at once, each with its own outcome', async () => {
    const procs = await Promise.all(
      Array.from({ length: 12 }, (_, i) => runCommandLine({ commandLine: `/bin/sh -c 'exit ${i}'`, cwd: dir, env: {}, ...files(`many-${i}`) })),
    );
    expect(await Promise.all(procs.map((p) => p.done))).toEqual(Array.from({ length: 12 }, (_, i) => ({ exitCode: i })));
  });

  it('end when the last engine holding the launcher lets go (an emulator stop), and a later start brings up a new one', async () => {
    const launcherOf = async (name: string) => {
      const f = files(name);
      const proc = await runCommandLine({ commandLine: `/bin/sh -c 'echo $PPID'`, cwd: dir, env: { PATH: '/usr/bin:/bin' }, ...f });
      expect(await proc.done).toEqual({ exitCode: 0 });
      return Number(read(f.stdoutPath).trim());
    };
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    const first = holdLauncher();
    const second = holdLauncher();
    const pid = await launcherOf('held');
    first();
    first(); // a second release of the same hold changes nothing
    expect(alive(pid)).toBe(true);
    second();
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
    expect(alive(pid)).toBe(false);
    const next = await launcherOf('after');
    expect(next).not.toBe(pid);
    expect(alive(next)).toBe(true);
  });
});
