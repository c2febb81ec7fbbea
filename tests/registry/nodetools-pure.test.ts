/**
 * Pure parts of the node tools: image references, path mapping, env assignments, sshd recognition, flag parsing, the
 * ssh launcher's file (read back by a real bash).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FlagSet, all, bool, flag, last, val } from '../../local/batch/nodetools/lib/args';
import { containerPathVar, parseEnvAssignments, parseEnvFile, sshdPort, toHostPath } from '../../local/batch/nodetools/lib/containerView';
import { parseImageRef, refKey, registryBaseUrl } from '../../local/batch/nodetools/lib/imageRef';
import { renderTemplate } from '../../local/batch/nodetools/lib/template';
import { sshLauncherFile, type ContainerRecord } from '../../local/batch/nodetools/lib/containerStore';

test('image references normalise like the Docker CLI', () => {
  expect(parseImageRef('127.0.0.1:5000/hpc/mpi-demo:1.0')).toMatchObject({ registry: '127.0.0.1:5000', repository: 'hpc/mpi-demo', tag: '1.0' });
  expect(parseImageRef('ubuntu')).toMatchObject({ registry: 'docker.io', repository: 'library/ubuntu', tag: 'latest' });
  expect(refKey(parseImageRef('ubuntu'))).toBe('ubuntu:latest');
  const d = `sha256:${'a'.repeat(64)}`;
  expect(parseImageRef(`localhost/x@${d}`)).toMatchObject({ registry: 'localhost', repository: 'x', digest: d, tag: undefined });
  expect(() => parseImageRef('Bad/Name')).toThrow(/invalid reference format/);
  expect(registryBaseUrl('127.0.0.1:5000')).toBe('http://127.0.0.1:5000');
  expect(registryBaseUrl('myacr.azurecr.io')).toBe('https://myacr.azurecr.io');
  expect(registryBaseUrl('reg.local:5000', { DOCKER_INSECURE_REGISTRIES: 'reg.local:5000' })).toBe('http://reg.local:5000');
});

test('container paths map to bind sources, stay under the node root, else go into the rootfs', () => {
  const view = { rootfs: '/n/containers/c/rootfs', binds: [{ source: '/host/data', target: '/data' }], nodeRootDir: '/n' };
  expect(toHostPath(view, '/data/x/y')).toBe('/host/data/x/y');
  expect(toHostPath(view, '/n/workitems/wd')).toBe('/n/workitems/wd');
  expect(toHostPath(view, '/opt/mpi-demo')).toBe('/n/containers/c/rootfs/opt/mpi-demo');
  expect(toHostPath(view, '/datax')).toBe('/n/containers/c/rootfs/datax');
  expect(containerPathVar(view, '/opt/bin:/usr/bin', '/usr/bin:/bin')).toBe('/n/containers/c/rootfs/opt/bin:/n/containers/c/rootfs/usr/bin:/usr/bin:/bin');
});

test('-e and --env-file assignments, bare names taken from the caller environment', () => {
  expect(parseEnvAssignments(['A=1', 'B', 'C', 'D=x=y'], { B: 'from-host' })).toEqual({ A: '1', B: 'from-host', D: 'x=y' });
  expect(parseEnvFile('# comment\nX=1\n\n  Y=two words\nZ\n', { Z: 'z' })).toEqual({ X: '1', Y: 'two words', Z: 'z' });
});

test('sshd command lines are recognised with their port, also behind a plain sh -c', () => {
  expect(sshdPort(['/usr/sbin/sshd', '-D', '-p', '23'])).toBe(23);
  expect(sshdPort(['sshd', '-p2222'])).toBe(2222);
  expect(sshdPort(['/usr/sbin/sshd', '-D', '-o', 'Port=24'])).toBe(24);
  expect(sshdPort(['/usr/sbin/sshd'])).toBe(22);
  expect(sshdPort(['/bin/sh', '-c', 'exec /usr/sbin/sshd -D -p 23'])).toBe(23);
  expect(sshdPort(['/bin/sh', '-c', '/usr/sbin/sshd -D -p 23; echo done'])).toBeUndefined();
  expect(sshdPort(['sleep', 'infinity'])).toBeUndefined();
});

test('Docker-style flags: clusters, attached values, repeated values, stop at the image', () => {
  const fs = new FlagSet('docker run', { d: bool('d', 'detach'), i: bool('i'), t: bool('t'), rm: bool('rm'), e: val('e', 'env'), name: val('name') });
  const p = fs.parse(['-dit', '-eA=1', '--env', 'B=2', '--name=x', '--rm=false', 'img', '-e', 'notmine'], true);
  expect([flag(p, 'd'), flag(p, 'i'), flag(p, 't'), flag(p, 'rm')]).toEqual([true, true, true, false]);
  expect(all(p, 'e')).toEqual(['A=1', 'B=2']);
  expect(last(p, 'name')).toBe('x');
  expect(p.positionals).toEqual(['img', '-e', 'notmine']);
  expect(() => fs.parse(['--bogus'], true)).toThrow(/unknown flag: --bogus/);
});

test('inspect templates', () => {
  const data = { State: { Running: true, Pid: 7 }, Config: { Env: ['A=1'] }, Name: '/c' };
  expect(renderTemplate('{{.State.Running}} {{ .State.Pid }} {{json .Config.Env}} {{.Name}} {{.Nope}}', data)).toBe('true 7 ["A=1"] /c <no value>');
});

test('the ssh launcher file: only for a running container with an ssh port; bash reads back every value as written', () => {
  const record: ContainerRecord = {
    name: 'c',
    image: 'img',
    env: { PLAIN: 'x', QUOTED: 'it\'s "q" $HOME `id`', MULTI: 'a\nb', 'NOT-A-NAME': 'skipped', __workdir: '/from-env' },
    rootfs: '/n/containers/c/rootfs',
    workdir: '/work dir',
    sshPort: 23,
    pid: 4242,
    state: 'running',
  };
  expect(sshLauncherFile({ ...record, state: 'exited' })).toBeUndefined();
  expect(sshLauncherFile({ ...record, sshPort: undefined })).toBeUndefined();
  const text = sshLauncherFile(record) as string;
  // The launcher reads the first two lines without sourcing the file.
  expect(text.split('\n').slice(0, 2)).toEqual(['__port=23', '__pid=4242']);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ssh-launcher-file-'));
  try {
    writeFileSync(path.join(dir, 'ssh.sh'), text);
    const printed = execFileSync(
      'bash',
      ['-c', '. "$1"; for v in PLAIN QUOTED MULTI __workdir __rootfs; do printf "%s=%s\\0" "$v" "${!v}"; done', 'bash', path.join(dir, 'ssh.sh')],
      {
        encoding: 'utf8',
        env: { PATH: process.env.PATH },
      },
    );
    const values = Object.fromEntries(
      printed
        .split('\0')
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    );
    // The container's own __workdir loses to the record's: the launcher's names are written last.
    expect(values).toEqual({ PLAIN: 'x', QUOTED: 'it\'s "q" $HOME `id`', MULTI: 'a\nb', __workdir: '/work dir', __rootfs: '/n/containers/c/rootfs' });
    expect(text).not.toContain('NOT-A-NAME');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
