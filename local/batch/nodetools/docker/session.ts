/** What every docker subcommand needs: the node, its image store, its containers, output streams. */
import * as path from 'node:path';
import { ContainerStore } from '../lib/containerStore';
import { readJson } from '../lib/fsutil';
import { ImageStore } from '../lib/imageStore';
import { NodeContext, nodeContext } from '../lib/node';

export interface Session {
  node: NodeContext;
  images: ImageStore;
  containers: ContainerStore;
  out: (s: string) => void;
  err: (s: string) => void;
}

export function openSession(): Session {
  const node = nodeContext();
  return {
    node,
    images: new ImageStore(node.imagesDir),
    containers: new ContainerStore(node.containersDir),
    out: (s) => process.stdout.write(s.endsWith('\n') ? s : `${s}\n`),
    err: (s) => process.stderr.write(s.endsWith('\n') ? s : `${s}\n`),
  };
}

export interface DockerAuthFile {
  auths: Record<string, { auth: string }>;
}

export function authFile(node: NodeContext): string {
  return path.join(node.dockerDir, 'config.json');
}

export async function authorizationFor(node: NodeContext, registry: string): Promise<string | undefined> {
  const auth = (await readJson<DockerAuthFile>(authFile(node)))?.auths?.[registry]?.auth;
  return auth ? `Basic ${auth}` : undefined;
}
