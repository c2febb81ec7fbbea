/**
 * docker run: unpack the image into the container's rootfs under the node, then run the command natively with the
 * container's environment (node env + image Env + --env-file + -e) and working directory. Options that only mean
 * something on a real host (--device, --ulimit, --shm-size, --privileged, --cap-add, ...) are accepted and recorded;
 * --gpus fails as on a host without the NVIDIA container runtime (emulated nodes have no GPU).
 * A command that starts sshd is not run: its port is recorded for the node's ssh launcher and a placeholder
 * process keeps the container alive.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { constants } from 'node:os';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { FlagSet, all, bool, flag, last, val } from '../lib/args';
import { Container, ContainerRecord, ContainerState, isValidName, newContainerId } from '../lib/containerStore';
import {
  BindMount,
  ContainerView,
  containerPathVar,
  parseEnvAssignments,
  parseEnvFile,
  resolveProgram,
  sshdPort,
  toHostPath,
  translateArgs,
} from '../lib/containerView';
import { CliError } from '../lib/errors';
import { writeJsonAtomic } from '../lib/fsutil';
import { parseImageRef, refKey } from '../lib/imageRef';
import { LocalImage } from '../lib/imageStore';
import { unpackImage } from '../lib/unpack';
import { pullRef } from './imageCommands';
import { Session } from './session';

const RUN = new FlagSet('docker run', {
  detach: bool('d', 'detach'),
  rm: bool('rm'),
  interactive: bool('i', 'interactive'),
  tty: bool('t', 'tty'),
  privileged: bool('privileged'),
  init: bool('init'),
  publishAll: bool('P', 'publish-all'),
  readOnly: bool('read-only'),
  name: val('name'),
  env: val('e', 'env'),
  envFile: val('env-file'),
  volume: val('v', 'volume'),
  mount: val('mount'),
  workdir: val('w', 'workdir'),
  network: val('net', 'network'),
  user: val('u', 'user'),
  entrypoint: val('entrypoint'),
  shmSize: val('shm-size'),
  ulimit: val('ulimit'),
  device: val('device'),
  capAdd: val('cap-add'),
  gpus: val('gpus'),
  // Accepted and recorded; they change nothing on an emulated node.
  ignored: val(
    'cap-drop',
    'security-opt',
    'ipc',
    'pid',
    'hostname',
    'h',
    'runtime',
    'p',
    'publish',
    'label',
    'l',
    'add-host',
    'cpus',
    'm',
    'memory',
    'restart',
    'log-driver',
    'log-opt',
    'platform',
    'pull',
    'expose',
    'group-add',
    'tmpfs',
    'cgroupns',
    'uts',
    'stop-signal',
    'stop-timeout',
    'memlock',
    'dns',
    'cidfile',
  ),
});

// HPC_NODETOOLS_DIR is set by bin/launch.sh: the code may run from a bundle outside this directory.
const SUPERVISOR = path.join(process.env.HPC_NODETOOLS_DIR ? path.join(process.env.HPC_NODETOOLS_DIR, 'docker') : __dirname, 'supervise.sh');

function runError(message: string, code = 125): CliError {
  return new CliError(`docker: Error response from daemon: ${message}.\nSee 'docker run --help'.`, code);
}

function parseVolume(spec: string, containerDir: string): BindMount {
  const parts = spec.split(':');
  if (parts.length < 2 || !parts[1]) throw runError(`invalid volume specification: '${spec}'`);
  const [src, target, mode] = parts;
  if (!target.startsWith('/'))
    throw runError(
      `invalid volume specification: '${spec}': invalid mount config for type "bind": invalid mount path: '${target}' mount path must be absolute`,
    );
  const source = src.startsWith('/') ? src : path.join(containerDir, 'volumes', src);
  return { source, target, readOnly: mode?.split(',').includes('ro') };
}

function parseMount(spec: string, containerDir: string): BindMount {
  const kv = Object.fromEntries(spec.split(',').map((p) => [p.split('=')[0], p.split('=').slice(1).join('=')]));
  const target = kv.target ?? kv.destination ?? kv.dst;
  const src = kv.source ?? kv.src;
  if (!target) throw runError(`invalid argument "${spec}" for "--mount" flag: target is required`);
  return {
    source: src ? (src.startsWith('/') ? src : path.join(containerDir, 'volumes', src)) : path.join(containerDir, 'volumes', path.basename(target)),
    target,
    readOnly: 'readonly' in kv || kv.ro === 'true',
  };
}

async function ensureImage(s: Session, imageArg: string): Promise<LocalImage> {
  const ref = parseImageRef(imageArg);
  const local = (await s.images.find(refKey(ref))) ?? (await s.images.find(imageArg));
  if (local) return local;
  s.err(`Unable to find image '${imageArg}' locally`);
  try {
    return await pullRef(s, imageArg, s.err);
  } catch (err) {
    if (err instanceof CliError) throw runError(err.message.replace(/\.$/, ''));
    throw err;
  }
}

function imageEnv(image: LocalImage): Record<string, string> {
  return parseEnvAssignments(image.config.config?.Env ?? [], {});
}

export async function run(s: Session, argv: string[]): Promise<number> {
  const p = RUN.parse(argv, true);
  const [imageArg, ...cmdArgs] = p.positionals;
  if (!imageArg) throw new CliError(`"docker run" requires at least 1 argument.\nSee 'docker run --help'.`, 125);
  const name = last(p, 'name') ?? `c-${newContainerId().slice(0, 12)}`;
  if (!isValidName(name)) throw runError(`Invalid container name (${name}), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed`);

  // Emulated nodes have no GPU and no NVIDIA container runtime: Docker's own answer on such a host.
  if (all(p, 'gpus').length) throw runError('could not select device driver "" with capabilities: [[gpu]]');
  const image = await ensureImage(s, imageArg);
  const dir = s.containers.containerDir(name);
  await mkdir(s.containers.dir, { recursive: true });
  try {
    await mkdir(dir); // atomic claim of the name
    // Until the records exist, say who claimed it: a `docker rm` can then tell an abandoned claim from a live one.
    await writeFile(path.join(dir, 'claim'), String(process.pid));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const other = await s.containers.find(name);
    throw runError(
      `Conflict. The container name "/${name}" is already in use by container "${other?.state.id ?? 'unknown'}". You have to remove (or rename) that container to be able to reuse that name`,
    );
  }

  const id = newContainerId();
  const cfg = image.config.config ?? {};
  const entrypointFlag = last(p, 'entrypoint');
  const entrypoint = entrypointFlag !== undefined ? (entrypointFlag ? [entrypointFlag] : []) : (cfg.Entrypoint ?? []);
  const cmd = cmdArgs.length ? cmdArgs : entrypointFlag !== undefined ? [] : (cfg.Cmd ?? []);
  const command = [...entrypoint, ...cmd];
  if (command.length === 0) throw runError('No command specified');

  const rootfs = path.join(dir, 'rootfs');
  const binds = [...all(p, 'volume').map((v) => parseVolume(v, dir)), ...all(p, 'mount').map((m) => parseMount(m, dir))];
  await unpackImage(s.images, image, rootfs);
  for (const b of binds) {
    await mkdir(b.source, { recursive: true });
    if (path.resolve(b.source) === path.resolve(b.target)) continue;
    // A link at the target inside the rootfs makes paths built from the rootfs resolve to the bind source too.
    const link = path.join(rootfs, b.target);
    await mkdir(path.dirname(link), { recursive: true });
    await symlink(b.source, link).catch(() => undefined);
  }
  const view: ContainerView = { rootfs, binds, nodeRootDir: s.node.rootDir };

  const fromImage = imageEnv(image);
  const envFiles: Record<string, string> = {};
  for (const f of all(p, 'envFile')) {
    const text = await readFile(f, 'utf8').catch(() => {
      throw runError(`open ${f}: no such file or directory`);
    });
    Object.assign(envFiles, parseEnvFile(text, process.env));
  }
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'HPC_NODETOOLS_DIR') env[k] = v;
  Object.assign(env, fromImage, { PATH: containerPathVar(view, fromImage.PATH, process.env.PATH), HOSTNAME: id.slice(0, 12) });
  Object.assign(env, envFiles, parseEnvAssignments(all(p, 'env'), process.env));
  Object.assign(env, { CONTAINER_ROOTFS: rootfs, CONTAINER_NAME: name, CONTAINER_ID: id });

  const w = last(p, 'workdir') ?? cfg.WorkingDir;
  const workdir = w ? toHostPath(view, w) : (process.env.AZ_BATCH_TASK_WORKING_DIR ?? process.cwd());
  await mkdir(workdir, { recursive: true });

  const sshPort = sshdPort(command);
  const detached = flag(p, 'detach');
  const state: ContainerState = {
    id,
    name,
    created: new Date().toISOString(),
    image: imageArg,
    imageId: image.id,
    path: command[0],
    args: command.slice(1),
    detached,
    autoRemove: flag(p, 'rm'),
    binds,
    hostConfig: {
      networkMode: last(p, 'network') ?? 'default',
      privileged: flag(p, 'privileged'),
      user: last(p, 'user'),
      shmSize: last(p, 'shmSize'),
      ulimits: all(p, 'ulimit'),
      devices: all(p, 'device'),
      capAdd: all(p, 'capAdd'),
      extra: all(p, 'ignored'),
    },
    sshPlaceholder: sshPort !== undefined,
  };
  const record: ContainerRecord = { name, image: imageArg, env, rootfs, workdir, ...(sshPort !== undefined ? { sshPort } : {}), state: 'exited' };
  const c: Container = { dir, record, state };

  let program: string | undefined;
  let args: string[];
  if (sshPort !== undefined) {
    program = resolveProgram(view, 'sleep', process.env.PATH ?? '/usr/bin:/bin', workdir);
    args = ['infinity'];
  } else {
    program = resolveProgram(view, command[0], env.PATH, workdir);
    args = translateArgs(view, command.slice(1));
  }
  if (!program) {
    state.exitCode = 127;
    state.finishedAt = state.created;
    await s.containers.save(c);
    if (state.autoRemove) await s.containers.remove(c);
    throw runError(
      `failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "${command[0]}": executable file not found in $PATH: unknown`,
      127,
    );
  }
  state.startedAt = new Date().toISOString();
  return detached ? startDetached(s, c, program, args) : runAttached(s, c, program, args);
}

async function startDetached(s: Session, c: Container, program: string, args: string[]): Promise<number> {
  const exitedRecord = path.join(c.dir, 'config.exited.json');
  const out = openSync(path.join(c.dir, 'stdout.log'), 'a');
  const err = openSync(path.join(c.dir, 'stderr.log'), 'a');
  if (c.state.sshPlaceholder) {
    await mkdir(c.dir, { recursive: true });
    const note = `sshd is not run on an emulated node: port ${c.record.sshPort} is served by the node's ssh launcher with this container's environment\n`;
    await writeJsonAtomic(path.join(c.dir, 'ssh.json'), { port: c.record.sshPort, note: note.trim() });
  }
  let child;
  try {
    child = spawn('bash', [SUPERVISOR, program, ...args], {
      cwd: c.record.workdir,
      env: {
        ...c.record.env,
        SUPERVISE_EXIT_FILE: path.join(c.dir, 'exitcode'),
        SUPERVISE_DONE_RECORD: exitedRecord,
        SUPERVISE_RECORD: path.join(c.dir, 'config.json'),
      },
      stdio: ['ignore', out, err],
      detached: true,
    });
  } finally {
    closeSync(out);
    closeSync(err);
  }
  const pid = await new Promise<number>((resolve, reject) => {
    child.once('spawn', () => resolve(child.pid as number));
    child.once('error', (e) => reject(runError(`failed to start container ${c.record.name}: ${e.message}`)));
  });
  child.unref();
  c.record.pid = pid;
  // The supervisor swaps this in when the command ends, so the record says "exited" even with no docker command around.
  await writeJsonAtomic(exitedRecord, { ...c.record, state: 'exited' });
  c.record.state = 'running';
  await s.containers.save(c);
  // If the command already ended, the supervisor's swap may have happened before our save: settle it now.
  await s.containers.find(c.record.name);
  s.out(c.state.id);
  return 0;
}

async function runAttached(s: Session, c: Container, program: string, args: string[]): Promise<number> {
  const child = spawn(program, args, { cwd: c.record.workdir, env: c.record.env, stdio: 'inherit' });
  // Listen before any await: a short command can end before the record is written.
  const exited = new Promise<number>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? signalNumber(signal) : 1)));
  });
  const pid = await new Promise<number | undefined>((resolve) => {
    child.once('spawn', () => resolve(child.pid));
    child.once('error', () => resolve(undefined));
  });
  if (pid === undefined) {
    c.state.exitCode = 126;
    await s.containers.save(c);
    throw runError(`failed to start ${program}`, 126);
  }
  c.record.pid = pid;
  c.record.state = 'running';
  await s.containers.save(c);
  const forward = (sig: NodeJS.Signals): void => {
    child.kill(sig);
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, forward);
  const code = await exited;
  c.record.state = 'exited';
  c.state.exitCode = code;
  c.state.finishedAt = new Date().toISOString();
  if (c.state.autoRemove) await s.containers.remove(c);
  else await s.containers.save(c);
  return code;
}

export function signalNumber(sig: string): number {
  if (/^\d+$/.test(sig)) return Number(sig);
  const name = (sig.toUpperCase().startsWith('SIG') ? sig : `SIG${sig}`).toUpperCase() as keyof typeof constants.signals;
  return constants.signals[name] ?? 0;
}
