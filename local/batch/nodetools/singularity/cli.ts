/**
 * `singularity` for emulated Batch nodes: `pull`, `exec`, `run` (and `inspect`), the subset a Singularity MPI task
 * emits. Images come from `docker://` references (the local OCI registry) through the same pull and digest checks as
 * docker, into Singularity's own layer cache: `$SINGULARITY_CACHEDIR` (or `$APPTAINER_CACHEDIR`), else the node's
 * `singularity/cache`. A pulled ".sif" is a small JSON file naming the cached image, not a real SIF: only SIF files
 * this tool wrote can be run. Unlike docker, the host environment and working directory carry into the container, as
 * Singularity does; the image's root filesystem is unpacked once per image.
 *
 * What is modelled and what is not: no namespaces or isolation (the program runs as a host process that sees the
 * host, with image paths resolved into the unpacked root filesystem), no GPUs (`--nv` warns that no NVIDIA
 * libraries were found, as Singularity does on a host without a driver), no `library://` (Sylabs cloud library)
 * or `oras://` source here: those are refused with an error naming the transport.
 */
import { spawn } from 'node:child_process';
import { mkdir, rename, rm } from 'node:fs/promises';
import * as path from 'node:path';
import { FlagSet, all, bool, flag, last, val } from '../lib/args';
import { BindMount, ContainerView, containerPathVar, parseEnvAssignments, resolveProgram, toHostPath, translateArgs } from '../lib/containerView';
import { CliError } from '../lib/errors';
import { exists, readJson, writeJsonAtomic } from '../lib/fsutil';
import { parseImageRef, refKey } from '../lib/imageRef';
import { ImageStore, LocalImage } from '../lib/imageStore';
import { unpackImage } from '../lib/unpack';
import { pullRef } from '../docker/imageCommands';
import { signalNumber } from '../docker/run';
import { Session, openSession } from '../docker/session';

const SIF_FORMAT = 'emulated-sif/1';

interface SifFile {
  format: typeof SIF_FORMAT;
  ref: string;
  imageId: string;
  manifestDigest: string;
  /**
   * The layer cache the image was pulled into. A real SIF carries its whole image; this stand-in points at the
   * cache instead, so it opens whatever SINGULARITY_CACHEDIR the process that runs it has (as a real SIF would).
   */
  store?: string;
}

function fatal(message: string): CliError {
  return new CliError(`FATAL:   ${message}`, 255);
}

function info(message: string): void {
  process.stderr.write(`INFO:    ${message}\n`);
}

/** Singularity keeps its own cache of OCI blobs, apart from docker's image store. */
function cacheSession(s: Session): Session {
  const dir = process.env.SINGULARITY_CACHEDIR || process.env.APPTAINER_CACHEDIR || path.join(s.node.singularityDir, 'cache');
  return { ...s, images: new ImageStore(path.join(path.resolve(dir), 'oci')) };
}

/** Transports a real Singularity pulls from that the local stack has no service for. */
function refuseTransport(uri: string): void {
  const scheme = /^([a-z]+):\/\//.exec(uri)?.[1];
  if (scheme === 'library')
    throw fatal(
      `Unable to get library client configuration: library:// needs the Sylabs cloud library, which the local stack does not have: emulated nodes pull docker:// references from the local registry`,
    );
  if (scheme === 'oras')
    throw fatal(`oras:// needs an OCI registry holding SIF artifacts, which the local stack does not serve: emulated nodes pull docker:// references`);
  if (scheme && scheme !== 'docker') throw fatal(`Unsupported transport type: ${scheme}`);
}

async function pullDocker(s: Session, uri: string): Promise<LocalImage> {
  try {
    // Singularity takes registry credentials from the environment rather than from `docker login`.
    const user = process.env.SINGULARITY_DOCKER_USERNAME ?? process.env.APPTAINER_DOCKER_USERNAME;
    const pass = process.env.SINGULARITY_DOCKER_PASSWORD ?? process.env.APPTAINER_DOCKER_PASSWORD;
    const auth = user && pass ? `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` : undefined;
    return await pullRef(s, uri.slice('docker://'.length), () => undefined, auth);
  } catch (err) {
    if (err instanceof CliError) throw fatal(`While making image from oci registry: error fetching image to cache: ${err.message}`);
    throw err;
  }
}

interface Resolved {
  image: LocalImage;
  /** The store holding its blobs. */
  store: ImageStore;
}

/** The stored image behind a `docker://` URI (pulled when missing) or a .sif written by `singularity pull`. */
async function resolveImage(s: Session, arg: string): Promise<Resolved> {
  refuseTransport(arg);
  if (arg.startsWith('docker://')) {
    const local = await s.images.find(refKey(parseImageRef(arg.slice('docker://'.length))));
    if (local) {
      info('Using cached SIF image');
      return { image: local, store: s.images };
    }
    info('Converting OCI blobs to SIF format');
    return { image: await pullDocker(s, arg), store: s.images };
  }
  const sif = await readJson<SifFile>(path.resolve(arg)).catch(() => undefined);
  if (!sif) throw fatal(`could not open image ${path.resolve(arg)}: failed to retrieve path for ${arg}: lstat ${path.resolve(arg)}: no such file or directory`);
  if (sif.format !== SIF_FORMAT) throw fatal(`could not open image ${path.resolve(arg)}: image format not recognized`);
  const store = sif.store ? new ImageStore(sif.store) : s.images;
  // By digest first: the tag may have moved on since this SIF was pulled.
  const image = (await store.find(`${sif.ref.replace(/:[^:/]+$/, '')}@${sif.manifestDigest}`)) ?? (await store.find(sif.ref));
  if (!image || image.id !== sif.imageId) throw fatal(`could not open image ${path.resolve(arg)}: image ${sif.imageId} is not in this node's image store`);
  return { image, store };
}

/** Unpacks the image once per node (temp dir + rename, so concurrent ranks never see half a rootfs). */
async function rootfsFor(s: Session, { image, store }: Resolved): Promise<string> {
  const dir = path.join(s.node.singularityDir, 'rootfs', image.id.slice('sha256:'.length));
  if (await exists(dir)) return dir;
  const tmp = `${dir}.tmp-${process.pid}`;
  await mkdir(path.dirname(dir), { recursive: true });
  await unpackImage(store, image, tmp);
  try {
    await rename(tmp, dir);
  } catch {
    await rm(tmp, { recursive: true, force: true });
  }
  return dir;
}

const PULL = new FlagSet('singularity pull', { force: bool('F', 'force'), dir: val('dir'), name: val('name'), disableCache: bool('disable-cache') });

async function pull(s: Session, argv: string[]): Promise<number> {
  const p = PULL.parse(argv, false);
  const uri = p.positionals[p.positionals.length - 1];
  if (!uri) throw fatal('pull requires a URI');
  refuseTransport(uri);
  if (!uri.startsWith('docker://')) throw fatal(`Unsupported transport type: ${uri.split('://')[0]}: only docker:// is available on emulated nodes`);
  const ref = parseImageRef(uri.slice('docker://'.length));
  const defaultName = `${ref.repository.split('/').pop()}_${ref.tag ?? 'latest'}.sif`;
  const file = path.resolve(last(p, 'dir') ?? '.', p.positionals.length > 1 ? p.positionals[0] : (last(p, 'name') ?? defaultName));
  if ((await exists(file)) && !flag(p, 'force')) throw fatal(`Image file already exists: "${file}" - will not overwrite`);
  info('Converting OCI blobs to SIF format');
  const image = await pullDocker(s, uri);
  const sif: SifFile = { format: SIF_FORMAT, ref: refKey(ref), imageId: image.id, manifestDigest: image.manifestDigest, store: s.images.dir };
  await writeJsonAtomic(file, sif);
  info(`Creating SIF file... ${file}`);
  return 0;
}

const EXEC = new FlagSet('singularity exec', {
  pwd: val('pwd'),
  bind: val('B', 'bind'),
  cleanenv: bool('e', 'cleanenv'),
  env: val('env'),
  nv: bool('nv'),
  ignored: bool(
    'writable-tmpfs',
    'contain',
    'C',
    'containall',
    'userns',
    'u',
    'no-home',
    'fakeroot',
    'f',
    'writable',
    'w',
    'no-init',
    'no-privs',
    'quiet',
    'q',
  ),
  ignoredValue: val('home', 'H', 'security', 'overlay', 'o', 'app', 'scratch', 'S', 'workdir', 'W'),
});

function parseBinds(specs: string[]): BindMount[] {
  return specs
    .flatMap((s) => s.split(','))
    .filter(Boolean)
    .map((b) => {
      const [source, target, mode] = b.split(':');
      return { source, target: target || source, readOnly: mode === 'ro' };
    });
}

async function execIn(s: Session, argv: string[], useImageCommand: boolean): Promise<number> {
  const p = EXEC.parse(argv, true);
  const [imageArg, ...command] = p.positionals;
  if (!imageArg) throw fatal('no image given');
  const resolved = await resolveImage(s, imageArg);
  const { image } = resolved;
  const rootfs = await rootfsFor(s, resolved);
  // No GPU on an emulated node: what Singularity says on a host without the NVIDIA driver, and it carries on.
  if (flag(p, 'nv')) process.stderr.write('WARNING: Could not find any nv files on this host!\n');
  const binds = parseBinds(all(p, 'bind'));
  const view: ContainerView = { rootfs, binds, nodeRootDir: s.node.rootDir };
  const imageEnv = parseEnvAssignments(image.config.config?.Env ?? [], {});
  const hostEnv: Record<string, string> = {};
  const keep = flag(p, 'cleanenv') ? ['HOME', 'USER', 'TERM', 'LANG', 'AZ_BATCH_NODE_ROOT_DIR', 'AZ_BATCH_NODE_ID', 'AZ_BATCH_POOL_ID'] : undefined;
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'HPC_NODETOOLS_DIR' && (!keep || keep.includes(k))) hostEnv[k] = v;
  const injected: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    const m = /^(?:SINGULARITYENV|APPTAINERENV)_(.+)$/.exec(k);
    if (m && v !== undefined) injected[m[1]] = v;
  }
  const env = {
    ...hostEnv,
    ...imageEnv,
    PATH: containerPathVar(view, imageEnv.PATH, process.env.PATH),
    ...injected,
    ...parseEnvAssignments(
      all(p, 'env').flatMap((e) => e.split(',')),
      process.env,
    ),
    CONTAINER_ROOTFS: rootfs,
    SINGULARITY_CONTAINER: imageArg,
    SINGULARITY_NAME: path.basename(imageArg),
  };
  const pwd = last(p, 'pwd');
  const cwd = pwd ? toHostPath(view, pwd) : process.cwd();
  // Paths the host has stay host paths (Singularity binds the host's cwd, $HOME and /tmp); only image paths move.
  const cwdResolved = pwd && (await exists(pwd)) && !binds.some((b) => pwd.startsWith(b.target)) ? pwd : cwd;
  const cfg = image.config.config ?? {};
  const argvFull = useImageCommand ? [...(cfg.Entrypoint ?? []), ...(command.length ? command : (cfg.Cmd ?? []))] : command;
  if (argvFull.length === 0) throw fatal(useImageCommand ? 'no runscript and no command for this image' : 'exec requires a command');
  const program = resolveProgram(view, argvFull[0], env.PATH, cwdResolved);
  if (!program) throw fatal(`"${argvFull[0]}": executable file not found in $PATH`);
  const child = spawn(program, translateArgs(view, argvFull.slice(1)), { cwd: cwdResolved, env, stdio: 'inherit' });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => child.kill(sig));
  return new Promise<number>((resolve) => {
    child.once('error', (e) => {
      process.stderr.write(`FATAL:   ${e.message}\n`);
      resolve(255);
    });
    child.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? signalNumber(signal) : 1)));
  });
}

async function inspect(s: Session, argv: string[]): Promise<number> {
  const { image } = await resolveImage(s, argv[argv.length - 1] ?? '');
  process.stdout.write(`${JSON.stringify({ id: image.id, manifest: image.manifestDigest, refs: image.refs, config: image.config.config }, null, 2)}\n`);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const args = argv.filter((a, i) => !(i === 0 && (a === '-q' || a === '--quiet' || a === '-s' || a === '--silent')));
  const [cmd, ...rest] = args;
  if (cmd === '--version' || cmd === 'version') {
    process.stdout.write('singularity-ce version 3.11.0-emulated\n');
    return 0;
  }
  const s = cacheSession(openSession());
  switch (cmd) {
    case 'pull':
      return pull(s, rest);
    case 'exec':
      return execIn(s, rest, false);
    case 'run':
      return execIn(s, rest, true);
    case 'inspect':
      return inspect(s, rest);
    default:
      throw fatal(`unknown command "${cmd ?? ''}" for "singularity" (emulated: pull, exec, run, inspect)`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: Error) => {
    process.stderr.write(`${err instanceof CliError ? err.message : `FATAL:   ${err.stack ?? err.message}`}\n`);
    process.exitCode = err instanceof CliError ? err.exitCode : 255;
  },
);
