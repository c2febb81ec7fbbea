import { ContainerClient } from '@azure/storage-blob';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { rootCertificates } from 'node:tls';
import path from 'node:path';
import type { Json } from '../model/types';

export interface DownloadOptions {
  /** PEM CA certificates the node trusts besides the public roots (for https URLs). */
  trustedCertificates?: string[];
}

/** Downloads a task's resourceFiles into `dir` (wd for task files, the task root for commonResourceFiles). */
export async function downloadResourceFiles(files: Json[] | undefined, dir: string, opts: DownloadOptions = {}): Promise<void> {
  for (const rf of files ?? []) await downloadOne(rf, dir, opts);
}

/** GET over https trusting the public roots plus the node's extra CAs; the body, or an error naming the status. */
function httpsGet(url: string, extraCas: string[]): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca: [...rootCertificates, ...extraCas], timeout: 60_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
  });
}

async function fetchUrl(url: string, opts: DownloadOptions): Promise<Buffer> {
  if (url.startsWith('https:') && opts.trustedCertificates?.length) {
    const res = await httpsGet(url, opts.trustedCertificates);
    if (res.status < 200 || res.status >= 300) throw new Error(`GET ${redact(url)} answered ${res.status}`);
    return res.body;
  }
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${redact(url)} answered ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

function inside(dir: string, rel: string): string {
  const target = path.resolve(dir, rel);
  if (target !== dir && !target.startsWith(dir + path.sep)) throw new Error(`filePath ${rel} escapes the task directory`);
  return target;
}

function applyMode(file: string, mode: unknown): void {
  if (typeof mode === 'string' && /^[0-7]{3,4}$/.test(mode)) chmodSync(file, parseInt(mode, 8));
}

async function downloadOne(rf: Json, dir: string, opts: DownloadOptions): Promise<void> {
  const filePath = typeof rf.filePath === 'string' ? rf.filePath : undefined;
  if (typeof rf.httpUrl === 'string') {
    const body = await fetchUrl(rf.httpUrl, opts).catch((e: Error) => {
      throw new Error(e.message.startsWith('GET ') ? e.message : `GET ${redact(rf.httpUrl as string)} failed: ${e.message}`);
    });
    const name = filePath ?? path.basename(new URL(rf.httpUrl).pathname);
    const target = inside(dir, name);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, body);
    applyMode(target, rf.fileMode);
    return;
  }
  if (typeof rf.storageContainerUrl === 'string') {
    const container = new ContainerClient(rf.storageContainerUrl);
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
