/**
 * Container records on a node: `$AZ_BATCH_NODE_ROOT_DIR/containers/<name>/`
 * - config.json: the record shared with the Batch emulator (its ssh launcher and node teardown read it);
 * - state.json:  what only the docker command needs (id, command, host options, exit code, timestamps);
 * - ssh.sh: while a container with an ssh port runs, what the node's ssh launcher (local/batch/runner/bin/ssh) needs
 *   of config.json as shell assignments (sshLauncherFile), so that every connection is read by bash alone instead of
 *   starting node to parse JSON (~50 ms of CPU each; mpirun's daemons connect once per node per launch);
 * - rootfs/, stdout.log, stderr.log, exitcode (written by the detached container's supervisor);
 * - claim: the pid of the `docker run` that took the name, until the records above exist.
 */
import { randomBytes } from 'node:crypto';
import { readFile, readdir, rm, stat } from 'node:fs/promises';
import * as path from 'node:path';
import { BindMount } from './containerView';
import { readJson, writeFileAtomic, writeJsonAtomic } from './fsutil';
import { processAlive } from './processAlive';
import { shellQuote } from './shellQuote';

/** The on-disk contract with the Batch emulator. */
export interface ContainerRecord {
  name: string;
  image: string;
  env: Record<string, string>;
  rootfs: string;
  workdir?: string;
  sshPort?: number;
  /** Process group leader of the container: kill `-pid` to end everything in it. */
  pid?: number;
  state: 'running' | 'exited';
}

export interface ContainerState {
  id: string;
  name: string;
  created: string;
  image: string;
  imageId: string;
  path: string;
  args: string[];
  detached: boolean;
  autoRemove: boolean;
  binds: BindMount[];
  hostConfig: {
    networkMode: string;
    privileged: boolean;
    user?: string;
    shmSize?: string;
    ulimits: string[];
    devices: string[];
    capAdd: string[];
    extra: string[];
  };
  startedAt?: string;
  finishedAt?: string;
  exitCode?: number;
  /** Set when the container runs an sshd placeholder instead of its command. */
  sshPlaceholder?: boolean;
}

export interface Container {
  dir: string;
  record: ContainerRecord;
  state: ContainerState;
}

const NAME_RE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/;

export function isValidName(name: string): boolean {
  return NAME_RE.test(name);
}

export function newContainerId(): string {
  return randomBytes(32).toString('hex');
}

const alive = processAlive;

/** The ssh launcher's file beside config.json (its name is the launcher's too). */
export const SSH_LAUNCHER_FILE = 'ssh.sh';

const SHELL_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The ssh launcher's view of a running container with an ssh port: the port and pid on the first two lines (read
 * without sourcing), then the container's environment (names a shell can export), its workdir and rootfs, for the
 * connection's shell to source. Undefined when no connection may reach the container.
 */
export function sshLauncherFile(record: ContainerRecord): string | undefined {
  if (record.sshPort === undefined || record.state !== 'running') return undefined;
  const lines = [
    `__port=${record.sshPort}`,
    `__pid=${record.pid ?? ''}`,
    ...Object.entries(record.env)
      .filter(([k]) => SHELL_NAME_RE.test(k))
      .map(([k, v]) => `export ${k}=${shellQuote(String(v))}`),
    // Last: the launcher's own names win over a container variable that happens to share them.
    `__workdir=${shellQuote(record.workdir ?? '')}`,
    `__rootfs=${shellQuote(record.rootfs ?? '')}`,
  ];
  return `${lines.join('\n')}\n`;
}

export class ContainerStore {
  constructor(readonly dir: string) {}

  containerDir(name: string): string {
    return path.join(this.dir, name);
  }

  async save(c: Container): Promise<void> {
    await writeJsonAtomic(path.join(c.dir, 'state.json'), c.state);
    // Written before the record says running and removed before it says exited: the launcher never finds a
    // container through ssh.sh that config.json calls exited.
    const ssh = sshLauncherFile(c.record);
    if (ssh === undefined) await rm(path.join(c.dir, SSH_LAUNCHER_FILE), { force: true });
    else await writeFileAtomic(path.join(c.dir, SSH_LAUNCHER_FILE), ssh);
    await writeJsonAtomic(path.join(c.dir, 'config.json'), c.record);
  }

  private async load(name: string): Promise<Container | undefined> {
    const dir = this.containerDir(name);
    const record = await readJson<ContainerRecord>(path.join(dir, 'config.json'));
    const state = await readJson<ContainerState>(path.join(dir, 'state.json'));
    if (!record || !state) return undefined;
    return this.reconcile({ dir, record, state });
  }

  /** A container whose process is gone has exited: pick up the exit code its supervisor left and record that. */
  private async reconcile(c: Container): Promise<Container> {
    if (c.record.state === 'running' && alive(c.record.pid)) return c;
    // Exited with the outcome not yet in state.json (the supervisor records it on its own, without a docker command).
    if (c.record.state === 'exited' && (c.state.exitCode !== undefined || !c.state.startedAt)) return c;
    const exitFile = path.join(c.dir, 'exitcode');
    const code = await readFile(exitFile, 'utf8').then(
      (s) => Number(s.trim()),
      () => NaN,
    );
    const endedAt = await stat(exitFile).then(
      (st) => st.mtime.toISOString(),
      () => new Date().toISOString(),
    );
    c.record.state = 'exited';
    c.state.exitCode ??= Number.isFinite(code) ? code : 137;
    c.state.finishedAt ??= endedAt;
    await this.save(c).catch(() => undefined);
    return c;
  }

  async list(): Promise<Container[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return [];
    }
    const out: Container[] = [];
    for (const n of names.sort()) {
      const c = await this.load(n).catch(() => undefined);
      if (c) out.push(c);
    }
    return out.sort((a, b) => b.state.created.localeCompare(a.state.created));
  }

  /** By name, full id or unambiguous id prefix, as Docker resolves container arguments. */
  async find(nameOrId: string): Promise<Container | undefined> {
    const q = nameOrId.replace(/^\//, '');
    if (isValidName(q)) {
      const byName = await this.load(q).catch(() => undefined);
      if (byName) return byName;
    }
    if (!/^[a-f0-9]+$/.test(q)) return undefined;
    const matches = (await this.list()).filter((c) => c.state.id.startsWith(q));
    return matches.length === 1 ? matches[0] : undefined;
  }

  /**
   * Removes the folder of a container whose `docker run` died (killed, or its node rebooted) after claiming the
   * name and before writing its records: Docker would list it as a created container, which `docker rm` removes.
   * False when there is no such folder, it has records, or the `docker run` that claimed it is still alive.
   */
  async removeAbandoned(name: string): Promise<boolean> {
    if (!isValidName(name)) return false;
    const dir = this.containerDir(name);
    if (
      !(await stat(dir).then(
        (st) => st.isDirectory(),
        () => false,
      ))
    )
      return false;
    if (
      await stat(path.join(dir, 'config.json')).then(
        () => true,
        () => false,
      )
    )
      return false;
    const claimer = Number(await readFile(path.join(dir, 'claim'), 'utf8').catch(() => ''));
    if (claimer > 0 && alive(claimer)) return false;
    await rm(dir, { recursive: true, force: true });
    return true;
  }

  async remove(c: Container): Promise<void> {
    await rm(c.dir, { recursive: true, force: true });
  }

  isRunning(c: Container): boolean {
    return c.record.state === 'running' && alive(c.record.pid);
  }
}
