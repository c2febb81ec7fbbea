/** docker pull | images | login | logout | rmi */
import { CliError } from '../lib/errors';
import { readJson, writeJsonAtomic } from '../lib/fsutil';
import { parseImageRef, refKey, registryBaseUrl } from '../lib/imageRef';
import { LocalImage } from '../lib/imageStore';
import { pullImage } from '../lib/registryClient';
import { authorizationForChallenge, parseChallenge } from '../lib/registryAuth';
import { FlagSet, bool, flag, last, val } from '../lib/args';
import { renderTemplate } from '../lib/template';
import { DockerAuthFile, Session, authFile, authorizationFor } from './session';
import { humanSize, since } from './format';

const PULL = new FlagSet('docker pull', {
  all: bool('a', 'all-tags'),
  quiet: bool('q', 'quiet'),
  platform: val('platform'),
  trust: bool('disable-content-trust'),
});

/** Pulls `imageArg`, printing Docker's progress through `progress`; errors are raised as Docker's daemon errors. */
export async function pullRef(s: Session, imageArg: string, progress: (line: string) => void, authorization?: string): Promise<LocalImage> {
  const ref = parseImageRef(imageArg);
  const { image } = await pullImage(ref, {
    store: s.images,
    clientKey: s.node.clientKey,
    localAddress: process.env.AZ_BATCH_EMULATOR_NODE_IP,
    authorization: authorization ?? (await authorizationFor(s.node, ref.registry)),
    progress,
  });
  return image;
}

export async function pull(s: Session, argv: string[]): Promise<number> {
  const p = PULL.parse(argv, false);
  if (p.positionals.length !== 1) throw new CliError(`"docker pull" requires exactly 1 argument.\nSee 'docker pull --help'.`, 1);
  const quiet = flag(p, 'quiet');
  try {
    await pullRef(s, p.positionals[0], quiet ? () => undefined : s.out);
  } catch (err) {
    if (err instanceof CliError) throw new CliError(`Error response from daemon: ${err.message}`, 1);
    throw err;
  }
  s.out(p.positionals[0]);
  return 0;
}

const IMAGES = new FlagSet('docker images', {
  all: bool('a', 'all'),
  quiet: bool('q', 'quiet'),
  noTrunc: bool('no-trunc'),
  digests: bool('digests'),
  format: val('format'),
  filter: val('f', 'filter'),
});

interface ImageRow {
  Repository: string;
  Tag: string;
  Digest: string;
  ID: string;
  CreatedSince: string;
  Size: string;
}

export async function images(s: Session, argv: string[]): Promise<number> {
  const p = IMAGES.parse(argv, false);
  const want = p.positionals[0];
  const noTrunc = flag(p, 'noTrunc');
  const rows: ImageRow[] = [];
  for (const img of await s.images.list()) {
    for (const key of img.refs.filter((k) => !k.includes('@'))) {
      const colon = key.lastIndexOf(':');
      const [repo, tag] = [key.slice(0, colon), key.slice(colon + 1)];
      if (want && want !== repo && want !== key) continue;
      const digestKey = img.refs.find((k) => k.startsWith(`${repo}@`));
      rows.push({
        Repository: repo,
        Tag: tag,
        Digest: digestKey ? digestKey.slice(repo.length + 1) : '<none>',
        ID: noTrunc ? img.id : img.id.slice(7, 19),
        CreatedSince: img.config.created ? since(img.config.created) : 'N/A',
        Size: humanSize(img.size),
      });
    }
  }
  const format = last(p, 'format');
  if (flag(p, 'quiet')) {
    for (const id of new Set(rows.map((r) => r.ID))) s.out(id);
  } else if (format) {
    for (const r of rows) s.out(renderTemplate(format, r));
  } else {
    const digests = flag(p, 'digests');
    const head = ['REPOSITORY', 'TAG', ...(digests ? ['DIGEST'] : []), 'IMAGE ID', 'CREATED', 'SIZE'];
    const table = rows.map((r) => [r.Repository, r.Tag, ...(digests ? [r.Digest] : []), r.ID, r.CreatedSince, r.Size]);
    printTable(s, head, table);
  }
  return 0;
}

export function printTable(s: Session, head: string[], rows: string[][]): void {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] + 3))).join('');
  s.out(line(head));
  for (const r of rows) s.out(line(r));
}

const LOGIN = new FlagSet('docker login', { username: val('u', 'username'), password: val('p', 'password'), stdin: bool('password-stdin') });

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function login(s: Session, argv: string[]): Promise<number> {
  const p = LOGIN.parse(argv, false);
  const server = p.positionals[0] ?? 'docker.io';
  let password = last(p, 'password');
  if (flag(p, 'stdin')) {
    if (password) throw new CliError('--password and --password-stdin are mutually exclusive', 1);
    password = (await readStdin()).replace(/\r?\n$/, '');
  }
  if (!password) throw new CliError('Error: Cannot perform an interactive login from a non TTY device', 1);
  if (last(p, 'password')) s.err('WARNING! Using --password via the CLI is insecure. Use --password-stdin.');
  const username = last(p, 'username') ?? '00000000-0000-0000-0000-000000000000';
  // Reach the registry as Docker does before saving the credential, so a wrong server fails here.
  const url = `${registryBaseUrl(server)}/v2/`;
  const basic = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  const ping = await fetch(url).catch((e: Error) => {
    throw new CliError(`Error response from daemon: Get "${url}": ${e.message}`, 1);
  });
  await ping.arrayBuffer();
  const challenge = ping.status === 401 ? parseChallenge(ping.headers.get('www-authenticate') ?? undefined) : undefined;
  let status = ping.status;
  if (challenge?.scheme === 'bearer') {
    // Docker checks a login against a token registry by asking its realm for a token with the credentials.
    status = await authorizationForChallenge(challenge, basic, undefined).then(
      () => 200,
      () => 401,
    );
  } else if (status === 401) {
    status = (await fetch(url, { headers: { Authorization: basic } })).status;
  }
  if (status === 401 || status === 403) throw new CliError(`Error response from daemon: Get "${url}": unauthorized: incorrect username or password`, 1);
  const file = authFile(s.node);
  const cfg = (await readJson<DockerAuthFile>(file)) ?? { auths: {} };
  cfg.auths[server] = { auth: Buffer.from(`${username}:${password}`).toString('base64') };
  await writeJsonAtomic(file, cfg);
  s.out('Login Succeeded');
  return 0;
}

export async function logout(s: Session, argv: string[]): Promise<number> {
  const server = argv[0] ?? 'docker.io';
  const file = authFile(s.node);
  const cfg = (await readJson<DockerAuthFile>(file)) ?? { auths: {} };
  if (!cfg.auths[server]) {
    s.out(`Not logged in to ${server}`);
    return 0;
  }
  delete cfg.auths[server];
  await writeJsonAtomic(file, cfg);
  s.out(`Removing login credentials for ${server}`);
  return 0;
}

const RMI = new FlagSet('docker rmi', { force: bool('f', 'force'), noPrune: bool('no-prune') });

export async function rmi(s: Session, argv: string[]): Promise<number> {
  const p = RMI.parse(argv, false);
  let rc = 0;
  for (const arg of p.positionals) {
    let key: string;
    try {
      key = refKey(parseImageRef(arg));
    } catch {
      key = arg;
    }
    const image = await s.images.find(key).then((i) => i ?? s.images.find(arg));
    if (!image) {
      s.err(`Error response from daemon: No such image: ${arg}`);
      rc = 1;
      continue;
    }
    const users = (await s.containers.list()).filter((c) => c.state.imageId === image.id);
    if (users.length && !flag(p, 'force')) {
      s.err(
        `Error response from daemon: conflict: unable to remove repository reference "${arg}" (must force) - container ${users[0].state.id.slice(0, 12)} is using its referenced image ${image.id.slice(7, 19)}`,
      );
      rc = 1;
      continue;
    }
    const keys = image.refs.includes(key) ? [key] : image.refs;
    for (const k of keys) if (await s.images.removeRef(k)) s.out(`Untagged: ${k}`);
  }
  return rc;
}
