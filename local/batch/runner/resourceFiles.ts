import { AnonymousCredential, ContainerClient } from '@azure/storage-blob';
import { nodeIdentityCredential, nodeIdentityToken, STORAGE_RESOURCE, type NodeAgent } from './nodeIdentity';
import { agentRequest, NODE_AGENT_USER_AGENT, storageErrorCode } from './nodeAgentHttp';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Json } from '../model/types';

/**
 * Downloads a task's resourceFiles into `dir` (wd for task files, the task root for commonResourceFiles). https URLs
 * are read trusting the public roots plus the node image's extra CAs (`agent.trustedCertificates`). A file with an
 * identityReference is read with a token of that pool identity from the node's instance metadata service.
 */
export async function downloadResourceFiles(files: Json[] | undefined, dir: string, agent: NodeAgent = {}): Promise<void> {
  for (const rf of files ?? []) await downloadOne(rf, dir, agent);
}

/** The URL a node really reads: an https URL on an aliased public host goes to the local server standing in for it. */
export function resolvedUrl(url: string, aliases: Record<string, string> | undefined): string {
  if (!aliases || !url.startsWith('https:')) return url;
  const u = new URL(url);
  const target = aliases[u.host.toLowerCase()];
  if (!target) return url;
  u.host = target;
  return u.toString();
}

async function fetchUrl(original: string, agent: NodeAgent, identity: string | undefined): Promise<Buffer> {
  const url = resolvedUrl(original, agent.hostAliases);
  if (identity) {
    // With an identity, the blob is read as Azure Storage takes an Entra token: bearer plus a service version.
    const token = (await nodeIdentityToken(agent.imds, identity, STORAGE_RESOURCE)).token;
    const res = await agentRequest('GET', url, token, agent.trustedCertificates);
    if (res.status !== 200) throw new Error(`GET ${redact(url)} with identity ${identity} answered ${res.status} ${storageErrorCode(res.body)}`.trim());
    return res.body;
  }
  if (url.startsWith('https:') && agent.trustedCertificates?.length) {
    const res = await agentRequest('GET', url, undefined, agent.trustedCertificates);
    if (res.status < 200 || res.status >= 300) throw new Error(`GET ${redact(url)} answered ${res.status}`);
    return res.body;
  }
  const res = await fetch(url, { headers: { 'User-Agent': NODE_AGENT_USER_AGENT } });
  if (!res.ok) throw new Error(`GET ${redact(url)} answered ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

const identityOf = (rf: Json): string | undefined => {
  const ref = rf.identityReference as Json | undefined;
  return typeof ref?.resourceId === 'string' ? ref.resourceId : undefined;
};

function inside(dir: string, rel: string): string {
  const target = path.resolve(dir, rel);
  if (target !== dir && !target.startsWith(dir + path.sep)) throw new Error(`filePath ${rel} escapes the task directory`);
  return target;
}

function applyMode(file: string, mode: unknown): void {
  if (typeof mode === 'string' && /^[0-7]{3,4}$/.test(mode)) chmodSync(file, parseInt(mode, 8));
}

async function downloadOne(rf: Json, dir: string, agent: NodeAgent): Promise<void> {
  const filePath = typeof rf.filePath === 'string' ? rf.filePath : undefined;
  const identity = identityOf(rf);
  const imds = agent.imds;
  if (typeof rf.httpUrl === 'string') {
    const body = await fetchUrl(rf.httpUrl, agent, identity).catch((e: Error) => {
      throw new Error(
        e.message.startsWith('GET ') || e.message.startsWith('identityReference ') ? e.message : `GET ${redact(rf.httpUrl as string)} failed: ${e.message}`,
      );
    });
    const name = filePath ?? path.basename(new URL(rf.httpUrl).pathname);
    const target = inside(dir, name);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, body);
    applyMode(target, rf.fileMode);
    return;
  }
  if (typeof rf.storageContainerUrl === 'string') {
    // Ask for the token first, so a pool without the identity fails with that reason.
    if (identity) await nodeIdentityToken(imds, identity, STORAGE_RESOURCE);
    const container = new ContainerClient(rf.storageContainerUrl, identity ? nodeIdentityCredential(imds, identity) : new AnonymousCredential(), {
      userAgentOptions: { userAgentPrefix: NODE_AGENT_USER_AGENT },
    });
    const prefix = typeof rf.blobPrefix === 'string' ? rf.blobPrefix : undefined;
    for await (const blob of container.listBlobsFlat({ prefix })) {
      const target = inside(dir, path.join(filePath ?? '', blob.name));
      mkdirSync(path.dirname(target), { recursive: true });
      await container.getBlobClient(blob.name).downloadToFile(target);
      applyMode(target, rf.fileMode);
    }
    return;
  }
  throw new Error(
    typeof rf.autoStorageContainerName === 'string'
      ? 'autoStorageContainerName needs a linked auto-storage account, which the emulator does not have'
      : 'a resource file needs httpUrl or storageContainerUrl',
  );
}

/** SAS signatures must not land in error messages. */
function redact(url: string): string {
  return url.replace(/([?&]sig=)[^&]*/i, '$1REDACTED');
}
