/** docker exec | ps | kill | stop | rm | logs | inspect (containers and images) */
import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import * as path from 'node:path';
import { FlagSet, all, bool, flag, last, val } from '../lib/args';
import { Container } from '../lib/containerStore';
import { ContainerView, parseEnvAssignments, parseEnvFile, resolveProgram, toHostPath, translateArgs } from '../lib/containerView';
import { CliError } from '../lib/errors';
import { parseImageRef, refKey } from '../lib/imageRef';
import { LocalImage } from '../lib/imageStore';
import { renderTemplate } from '../lib/template';
import { duration, since } from './format';
import { printTable } from './imageCommands';
import { signalNumber } from './run';
import { Session } from './session';
import { processAlive } from '../lib/processAlive';

async function mustFind(s: Session, name: string): Promise<Container> {
  const c = await s.containers.find(name);
  if (!c) throw new CliError(`Error response from daemon: No such container: ${name}`, 1);
  return c;
}

function viewOf(s: Session, c: Container): ContainerView {
  return { rootfs: c.record.rootfs, binds: c.state.binds, nodeRootDir: s.node.rootDir };
}

const EXEC = new FlagSet('docker exec', {
  detach: bool('d', 'detach'),
  interactive: bool('i', 'interactive'),
  tty: bool('t', 'tty'),
  privileged: bool('privileged'),
  env: val('e', 'env'),
  envFile: val('env-file'),
  workdir: val('w', 'workdir'),
  user: val('u', 'user'),
  detachKeys: val('detach-keys'),
});

export async function exec(s: Session, argv: string[]): Promise<number> {
  const p = EXEC.parse(argv, true);
  const [name, ...command] = p.positionals;
  if (!name || command.length === 0) throw new CliError(`"docker exec" requires at least 2 arguments.\nSee 'docker exec --help'.`, 1);
  const c = await mustFind(s, name);
  if (!s.containers.isRunning(c)) throw new CliError(`Error response from daemon: container ${c.state.id} is not running`, 1);
  const view = viewOf(s, c);
  const env: Record<string, string> = { ...c.record.env };
  for (const f of all(p, 'envFile')) Object.assign(env, parseEnvFile(await readFile(f, 'utf8'), process.env));
  Object.assign(env, parseEnvAssignments(all(p, 'env'), process.env));
  const w = last(p, 'workdir');
  const cwd = w ? toHostPath(view, w) : (c.record.workdir ?? c.record.rootfs);
  const program = resolveProgram(view, command[0], env.PATH ?? '', cwd);
  if (!program) {
    throw new CliError(
      `OCI runtime exec failed: exec failed: unable to start container process: exec: "${command[0]}": executable file not found in $PATH: unknown`,
      126,
    );
  }
  const detach = flag(p, 'detach');
  const child = spawn(program, translateArgs(view, command.slice(1)), { cwd, env, stdio: detach ? 'ignore' : 'inherit', detached: detach });
  if (detach) {
    child.unref();
    return 0;
  }
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => child.kill(sig));
  return new Promise<number>((resolve) => {
    child.once('error', (e) => resolve(reportSpawnError(s, e)));
    child.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? signalNumber(signal) : 1)));
  });
}

function reportSpawnError(s: Session, e: Error): number {
  s.err(`OCI runtime exec failed: exec failed: unable to start container process: ${e.message}: unknown`);
  return 126;
}

function statusText(s: Session, c: Container): string {
  if (s.containers.isRunning(c)) return `Up ${duration(Date.now() - Date.parse(c.state.startedAt ?? c.state.created))}`;
  if (!c.state.startedAt) return 'Created';
  return `Exited (${c.state.exitCode ?? 0}) ${since(c.state.finishedAt ?? c.state.created)}`;
}

const PS = new FlagSet('docker ps', {
  all: bool('a', 'all'),
  quiet: bool('q', 'quiet'),
  noTrunc: bool('no-trunc'),
  latest: bool('l', 'latest'),
  size: bool('s', 'size'),
  filter: val('f', 'filter'),
  format: val('format'),
  last: val('n', 'last'),
});

export async function ps(s: Session, argv: string[]): Promise<number> {
  const p = PS.parse(argv, false);
  const noTrunc = flag(p, 'noTrunc');
  let list = await s.containers.list();
  if (!flag(p, 'all')) list = list.filter((c) => s.containers.isRunning(c));
  for (const f of all(p, 'filter')) {
    const [k, v = ''] = [f.slice(0, f.indexOf('=')), f.slice(f.indexOf('=') + 1)];
    list = list.filter((c) => {
      if (k === 'name') return new RegExp(v).test(c.record.name);
      if (k === 'id') return c.state.id.startsWith(v);
      if (k === 'status') return (s.containers.isRunning(c) ? 'running' : c.state.startedAt ? 'exited' : 'created') === v;
      if (k === 'ancestor') return c.state.image === v || c.state.imageId === v;
      throw new CliError(`Error response from daemon: invalid filter '${k}'`, 1);
    });
  }
  if (flag(p, 'latest')) list = list.slice(0, 1);
  const rows = list.map((c) => {
    const command = [c.state.path, ...c.state.args].join(' ');
    return {
      ID: noTrunc ? c.state.id : c.state.id.slice(0, 12),
      Image: c.state.image,
      Command: JSON.stringify(noTrunc || command.length <= 20 ? command : `${command.slice(0, 19)}…`),
      RunningFor: since(c.state.created),
      Status: statusText(s, c),
      State: s.containers.isRunning(c) ? 'running' : 'exited',
      Ports: c.record.sshPort !== undefined && c.state.hostConfig.networkMode !== 'host' ? `${c.record.sshPort}/tcp` : '',
      Names: c.record.name,
    };
  });
  const format = last(p, 'format');
  if (flag(p, 'quiet')) for (const r of rows) s.out(r.ID);
  else if (format) for (const r of rows) s.out(renderTemplate(format, r));
  else
    printTable(
      s,
      ['CONTAINER ID', 'IMAGE', 'COMMAND', 'CREATED', 'STATUS', 'PORTS', 'NAMES'],
      rows.map((r) => [r.ID, r.Image, r.Command, r.RunningFor, r.Status, r.Ports, r.Names]),
    );
  return 0;
}

const alive = processAlive;

/** Signals the container's process group (falls back to its pid) and waits up to `waitMs` for it to end. */
async function signalContainer(c: Container, signal: string, waitMs: number): Promise<boolean> {
  const pid = c.record.pid;
  if (!pid) return true;
  const sig = (/^\d+$/.test(signal) ? Number(signal) : signal.toUpperCase().startsWith('SIG') ? signal.toUpperCase() : `SIG${signal.toUpperCase()}`) as
    NodeJS.Signals | number;
  try {
    process.kill(-pid, sig);
  } catch {
    try {
      process.kill(pid, sig);
    } catch {
      return true;
    }
  }
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return !alive(pid);
}

async function markExited(s: Session, c: Container, fallbackCode: number): Promise<void> {
  const code = await readFile(path.join(c.dir, 'exitcode'), 'utf8').then(
    (t) => Number(t.trim()),
    () => NaN,
  );
  c.record.state = 'exited';
  c.state.exitCode = Number.isFinite(code) ? code : fallbackCode;
  c.state.finishedAt = new Date().toISOString();
  await s.containers.save(c);
}

const KILL = new FlagSet('docker kill', { signal: val('s', 'signal') });

export async function kill(s: Session, argv: string[]): Promise<number> {
  const p = KILL.parse(argv, false);
  const signal = last(p, 'signal') ?? 'KILL';
  if (signalNumber(signal) === 0) throw new CliError(`invalid signal: ${signal}`, 1);
  let rc = 0;
  for (const name of p.positionals) {
    const c = await s.containers.find(name);
    if (!c) {
      s.err(`Error response from daemon: Cannot kill container: ${name}: No such container: ${name}`);
      rc = 1;
      continue;
    }
    if (!s.containers.isRunning(c)) {
      s.err(`Error response from daemon: Cannot kill container: ${name}: Container ${c.state.id} is not running`);
      rc = 1;
      continue;
    }
    const isKill = signalNumber(signal) === 9;
    const gone = await signalContainer(c, signal, isKill ? 5000 : 200);
    if (gone) await markExited(s, c, 128 + signalNumber(signal));
    s.out(name);
  }
  return rc;
}

const STOP = new FlagSet('docker stop', { time: val('t', 'time', 'timeout'), signal: val('s', 'signal') });

export async function stop(s: Session, argv: string[]): Promise<number> {
  const p = STOP.parse(argv, false);
  const seconds = Number(last(p, 'time') ?? '10');
  let rc = 0;
  for (const name of p.positionals) {
    const c = await s.containers.find(name);
    if (!c) {
      s.err(`Error response from daemon: No such container: ${name}`);
      rc = 1;
      continue;
    }
    if (s.containers.isRunning(c)) await stopContainer(s, c, last(p, 'signal') ?? 'TERM', seconds);
    s.out(name);
  }
  return rc;
}

async function stopContainer(s: Session, c: Container, signal: string, seconds: number): Promise<void> {
  if (!(await signalContainer(c, signal, seconds * 1000))) await signalContainer(c, 'KILL', 5000);
  await markExited(s, c, 137);
}

const RM = new FlagSet('docker rm', { force: bool('f', 'force'), volumes: bool('v', 'volumes'), link: bool('l', 'link') });

export async function rm(s: Session, argv: string[]): Promise<number> {
  const p = RM.parse(argv, false);
  const force = flag(p, 'force');
  let rc = 0;
  for (const name of p.positionals) {
    const c = await s.containers.find(name);
    if (!c && (await s.containers.removeAbandoned(name))) {
      s.out(name);
      continue;
    }
    if (!c) {
      // Like current Docker, `rm -f` of a container that does not exist is not an error.
      if (!force) {
        s.err(`Error response from daemon: No such container: ${name}`);
        rc = 1;
      }
      continue;
    }
    if (s.containers.isRunning(c)) {
      if (!force) {
        s.err(
          `Error response from daemon: cannot remove container "/${c.record.name}": container is running: stop the container before removing or force remove`,
        );
        rc = 1;
        continue;
      }
      await signalContainer(c, 'KILL', 5000);
    }
    await s.containers.remove(c);
    s.out(name);
  }
  return rc;
}

const LOGS = new FlagSet('docker logs', {
  follow: bool('f', 'follow'),
  tail: val('n', 'tail'),
  timestamps: bool('t', 'timestamps'),
  since: val('since'),
  until: val('until'),
  details: bool('details'),
});

function tailLines(text: string, n: string | undefined): string {
  if (n === undefined || n === 'all') return text;
  const lines = text.split('\n');
  const trailing = lines[lines.length - 1] === '' ? lines.pop() : undefined;
  return [...lines.slice(Math.max(0, lines.length - Number(n))), ...(trailing !== undefined ? [''] : [])].join('\n');
}

export async function logs(s: Session, argv: string[]): Promise<number> {
  const p = LOGS.parse(argv, false);
  if (p.positionals.length !== 1) throw new CliError(`"docker logs" requires exactly 1 argument.\nSee 'docker logs --help'.`, 1);
  const c = await mustFind(s, p.positionals[0]);
  const files = [
    { file: path.join(c.dir, 'stdout.log'), to: process.stdout, offset: 0 },
    { file: path.join(c.dir, 'stderr.log'), to: process.stderr, offset: 0 },
  ];
  for (const f of files) {
    const text = await readFile(f.file, 'utf8').catch(() => '');
    f.to.write(tailLines(text, last(p, 'tail')));
    f.offset = Buffer.byteLength(text);
  }
  if (!flag(p, 'follow')) return 0;
  for (;;) {
    const running = s.containers.isRunning((await s.containers.find(c.record.name)) ?? c);
    for (const f of files) {
      const size = await stat(f.file).then(
        (st) => st.size,
        () => 0,
      );
      if (size > f.offset) {
        await new Promise<void>((resolve) =>
          createReadStream(f.file, { start: f.offset, end: size - 1 })
            .on('end', resolve)
            .pipe(f.to, { end: false }),
        );
        f.offset = size;
      }
    }
    if (!running) return 0;
    await new Promise((r) => setTimeout(r, 200));
  }
}

function containerJson(s: Session, c: Container): Record<string, unknown> {
  const running = s.containers.isRunning(c);
  return {
    Id: c.state.id,
    Created: c.state.created,
    Path: c.state.path,
    Args: c.state.args,
    State: {
      Status: running ? 'running' : c.state.startedAt ? 'exited' : 'created',
      Running: running,
      Pid: running ? (c.record.pid ?? 0) : 0,
      ExitCode: running ? 0 : (c.state.exitCode ?? 0),
      StartedAt: c.state.startedAt ?? '0001-01-01T00:00:00Z',
      FinishedAt: c.state.finishedAt ?? '0001-01-01T00:00:00Z',
    },
    Image: c.state.imageId,
    Name: `/${c.record.name}`,
    HostConfig: {
      NetworkMode: c.state.hostConfig.networkMode,
      Privileged: c.state.hostConfig.privileged,
      Binds: c.state.binds.map((b) => `${b.source}:${b.target}${b.readOnly ? ':ro' : ''}`),
      AutoRemove: c.state.autoRemove,
      ShmSize: c.state.hostConfig.shmSize,
      Ulimits: c.state.hostConfig.ulimits,
      Devices: c.state.hostConfig.devices,
      CapAdd: c.state.hostConfig.capAdd,
    },
    Mounts: c.state.binds.map((b) => ({ Type: 'bind', Source: b.source, Destination: b.target, RW: !b.readOnly })),
    Config: {
      Image: c.state.image,
      Env: Object.entries(c.record.env).map(([k, v]) => `${k}=${v}`),
      Cmd: c.state.args,
      WorkingDir: c.record.workdir,
      User: c.state.hostConfig.user ?? '',
    },
    GraphDriver: { Name: 'emulated', Data: { MergedDir: c.record.rootfs } },
    Emulated: { Rootfs: c.record.rootfs, SshPort: c.record.sshPort ?? null, RecordDir: c.dir },
  };
}

function imageJson(img: LocalImage): Record<string, unknown> {
  return {
    Id: img.id,
    RepoTags: img.refs.filter((r) => !r.includes('@')),
    RepoDigests: img.refs.filter((r) => r.includes('@')),
    Created: img.config.created,
    Architecture: img.config.architecture,
    Os: img.config.os,
    Size: img.size,
    Config: img.config.config,
    RootFS: { Type: 'layers', Layers: img.config.rootfs.diff_ids },
    Metadata: { ManifestDigest: img.manifestDigest },
  };
}

const INSPECT = new FlagSet('docker inspect', { format: val('f', 'format'), type: val('type'), size: bool('s', 'size') });

export async function inspect(s: Session, argv: string[], only?: 'container' | 'image'): Promise<number> {
  const p = INSPECT.parse(argv, false);
  const type = only ?? last(p, 'type');
  const found: Record<string, unknown>[] = [];
  let rc = 0;
  for (const arg of p.positionals) {
    const c = type === 'image' ? undefined : await s.containers.find(arg);
    let img: LocalImage | undefined;
    if (!c && type !== 'container') {
      let key: string | undefined;
      try {
        key = refKey(parseImageRef(arg));
      } catch {
        key = undefined;
      }
      img = (key ? await s.images.find(key) : undefined) ?? (await s.images.find(arg));
    }
    if (c) found.push(containerJson(s, c));
    else if (img) found.push(imageJson(img));
    else {
      s.err(`Error: No such ${type === 'container' ? 'container' : type === 'image' ? 'image' : 'object'}: ${arg}`);
      rc = 1;
    }
  }
  const format = last(p, 'format');
  if (format) for (const f of found) s.out(renderTemplate(format, f));
  else s.out(JSON.stringify(found, null, 4));
  return rc;
}
