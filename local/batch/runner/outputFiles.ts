/**
 * A task's outputFiles, uploaded as Batch uploads them after the task process exits: each filePattern (relative
 * to the working directory, `$VAR` expanded, `*`, `**`, `?` and `[...]` wildcards, dot files only when named)
 * under its uploadCondition, to destination.container.containerUrl (a SAS URL, or a plain URL with an
 * identityReference to a pool identity) under `path`. Every attempt writes
 * fileuploadout.txt and fileuploaderr.txt beside stdout.txt; a failed upload becomes the task's failureInfo
 * (FileUploadContainerNotFound, FileUploadAccessDenied or FileUploadMiscError, category usererror).
 */
import { AnonymousCredential, ContainerClient, RestError } from '@azure/storage-blob';
import { appendFileSync, readFileSync, readdirSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';
import type { Json } from '../model/types';
import { nodeIdentityToken, STORAGE_RESOURCE, type NodeAgent } from './nodeIdentity';
import { agentRequest, NODE_AGENT_USER_AGENT, storageErrorCode } from './nodeAgentHttp';

export interface OutputFilesRun {
  outputFiles: Json[];
  /** The task root directory (stdout.txt, wd/); the logs go here. */
  taskDir: string;
  /** The node's root: what lies outside it is not on the emulated node. */
  nodeRoot: string;
  /** File systems mounted on the node (modelled mounts): outside the sandbox, yet on the node. */
  mounted?: string[];
  /** The task's environment, for $VAR in patterns. */
  env: Record<string, string>;
  exitCode: number | undefined;
  /** The node's agent (its instance metadata service, extra CAs), for destinations with an identityReference. */
  agent?: NodeAgent;
  /** Fault injection (lostUploads): this blob's upload is lost without a trace but the log line. */
  lost?: (blobName: string) => boolean;
}

interface Upload {
  file: string;
  blobName: string;
}

/** Uploads what applies; resolves the failureInfo of the first failed upload, or undefined. */
/** Output files up to this size are read whole before their upload; bigger ones are streamed by the SDK. */
const STREAMED_ABOVE_BYTES = 256 * 1024 * 1024;

export async function uploadOutputFiles(run: OutputFilesRun): Promise<Json | undefined> {
  const out = path.join(run.taskDir, 'fileuploadout.txt');
  const err = path.join(run.taskDir, 'fileuploaderr.txt');
  writeFileSync(out, '');
  writeFileSync(err, '');
  let failure: Json | undefined;
  for (const spec of run.outputFiles) {
    if (!conditionHolds(spec, run.exitCode)) continue;
    const pattern = expandVariables(String(spec.filePattern ?? ''), run.env);
    const container = ((spec.destination as Json).container ?? {}) as Json;
    const matched = matchFiles(
      pattern,
      path.join(run.taskDir, 'wd'),
      run.nodeRoot,
      typeof container.path === 'string' ? container.path : undefined,
      run.mounted,
    );
    if (matched.outside) appendFileSync(err, `${pattern}: outside the node's file system (${run.nodeRoot}); nothing uploaded\n`);
    appendFileSync(out, `${pattern}: ${matched.uploads.length} file(s)\n`);
    const identity = (container.identityReference as Json | undefined)?.resourceId;
    const { headers, metadata } = uploadHeaders(container.uploadHeaders as Json[] | undefined);
    if (typeof identity === 'string') {
      // identityReference: each file is one Put Blob with that pool identity's token (the URL carries no SAS).
      if (matched.uploads.length === 0) continue;
      const token = await nodeIdentityToken(run.agent?.imds, identity, STORAGE_RESOURCE).then(
        (t) => t.token,
        (e: Error) => e,
      );
      if (token instanceof Error) {
        appendFileSync(err, `${pattern}: ${redact(token.message)}\n`);
        failure ??= uploadFailure(token, pattern);
        continue;
      }
      const base = String(container.containerUrl).replace(/\/+$/, '');
      for (const u of matched.uploads) {
        if (run.lost?.(u.blobName)) {
          appendFileSync(
            out,
            `uploaded ${path.relative(run.taskDir, u.file)} to ${redact(base)}/${u.blobName} (${statSync(u.file).size} bytes) with identity ${identity}\n`,
          );
          continue;
        }
        const target = `${base}/${u.blobName.split('/').map(encodeURIComponent).join('/')}`;
        const res = await agentRequest('PUT', target, token, run.agent?.trustedCertificates, readFileSync(u.file), {
          'x-ms-blob-type': 'BlockBlob',
          ...blobHeaders(headers, metadata),
        }).catch((e: Error) => e);
        if (!(res instanceof Error) && res.status === 201) {
          appendFileSync(
            out,
            `uploaded ${path.relative(run.taskDir, u.file)} to ${redact(base)}/${u.blobName} (${statSync(u.file).size} bytes) with identity ${identity}\n`,
          );
          continue;
        }
        const e =
          res instanceof Error
            ? res
            : new RestError(`Put Blob answered ${res.status} ${storageErrorCode(res.body)}`.trim(), {
                statusCode: res.status,
                code: storageErrorCode(res.body),
              });
        const f = uploadFailure(e, pattern);
        appendFileSync(err, `${path.relative(run.taskDir, u.file)} -> ${redact(base)}/${u.blobName}: ${f.code}: ${describe(e)}\n`);
        failure ??= f;
      }
      continue;
    }
    const client = new ContainerClient(String(container.containerUrl), new AnonymousCredential(), {
      retryOptions: { maxTries: 2, tryTimeoutInMs: 60_000 },
      userAgentOptions: { userAgentPrefix: NODE_AGENT_USER_AGENT },
    });
    for (const u of matched.uploads) {
      if (run.lost?.(u.blobName)) {
        appendFileSync(out, `uploaded ${path.relative(run.taskDir, u.file)} to ${redact(client.url)}/${u.blobName} (${statSync(u.file).size} bytes)\n`);
        continue;
      }
      try {
        // Read here, not by the SDK's own stream: a file removed under the upload (its pool deleted meanwhile) is then
        // this upload's failure; the SDK's stream error escaped as an uncaught exception. Big files stay streamed.
        const blob = client.getBlockBlobClient(u.blobName);
        if (statSync(u.file).size <= STREAMED_ABOVE_BYTES) await blob.uploadData(readFileSync(u.file), { blobHTTPHeaders: headers, metadata });
        else await blob.uploadFile(u.file, { blobHTTPHeaders: headers, metadata });
        appendFileSync(out, `uploaded ${path.relative(run.taskDir, u.file)} to ${redact(client.url)}/${u.blobName} (${statSync(u.file).size} bytes)\n`);
      } catch (e) {
        const f = uploadFailure(e, pattern);
        appendFileSync(err, `${path.relative(run.taskDir, u.file)} -> ${redact(client.url)}/${u.blobName}: ${f.code}: ${describe(e)}\n`);
        failure ??= f;
      }
    }
  }
  return failure;
}

function conditionHolds(spec: Json, exitCode: number | undefined): boolean {
  const condition = String(((spec.uploadOptions ?? {}) as Json).uploadCondition ?? 'taskcompletion').toLowerCase();
  if (condition === 'tasksuccess') return exitCode === 0;
  if (condition === 'taskfailure') return exitCode !== 0;
  return true;
}

/** "Environment variables ($var on Linux) are expanded prior to the pattern being applied." */
export function expandVariables(pattern: string, env: Record<string, string>): string {
  return pattern.replace(
    /\$(\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))/g,
    (_m, _all, braced: string | undefined, bare: string | undefined) => env[(braced ?? bare) as string] ?? '',
  );
}

const WILDCARD = /[*?[]/;

/**
 * The files a pattern names and their blob names. A pattern without wildcards is one file, uploaded as `path`
 * (or its own name); with wildcards, each match keeps its path below the pattern's fixed leading directories,
 * under the virtual directory `path`.
 */
export function matchFiles(
  pattern: string,
  workingDir: string,
  nodeRoot: string,
  blobPath: string | undefined,
  mounted: string[] = [],
): { uploads: Upload[]; outside: boolean } {
  const absolute = path.isAbsolute(pattern) ? pattern : path.join(workingDir, pattern);
  const segments = absolute.split('/');
  const firstWild = segments.findIndex((s) => WILDCARD.test(s));
  const base = path.normalize(firstWild < 0 ? path.dirname(absolute) : segments.slice(0, firstWild).join('/') || '/');
  const onNode = (p: string) => [nodeRoot, ...mounted].some((root) => inside(p, root));
  if (!onNode(base)) return { uploads: [], outside: true };
  const trimmed = (blobPath ?? '').replace(/^\/+|\/+$/g, '');
  if (firstWild < 0) {
    const file = path.normalize(absolute);
    if (!isFile(file)) return { uploads: [], outside: false };
    // A link the task made to a file elsewhere on the machine is not a file of the emulated node.
    if (!onNode(file)) return { uploads: [], outside: true };
    return { uploads: [{ file, blobName: trimmed || path.basename(file) }], outside: false };
  }
  const isMatch = picomatch(segments.slice(firstWild).join('/'), { dot: false });
  const uploads: Upload[] = [];
  for (const rel of walk(base)) {
    if (isMatch(rel)) uploads.push({ file: path.join(base, rel), blobName: trimmed ? `${trimmed}/${rel}` : rel });
  }
  return { uploads, outside: false };
}

/** True when `p` (links resolved) lies in `root`. */
function inside(p: string, root: string): boolean {
  let real: string;
  let realRoot: string;
  try {
    realRoot = realpathSync(root);
    real = realpathSync(p);
  } catch {
    // Not there (yet): judge the path as written.
    return p === root || p.startsWith(root + path.sep);
  }
  return real === realRoot || real.startsWith(realRoot + path.sep);
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Every file below `dir`, as paths relative to it (symbolic links are not followed out of the node). */
function walk(dir: string, prefix = ''): string[] {
  let entries;
  try {
    entries = readdirSync(path.join(dir, prefix), { withFileTypes: true });
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...walk(dir, rel));
    else if (e.isFile()) out.push(rel);
  }
  return out;
}

/** The blob properties and metadata as Put Blob's request headers. */
function blobHeaders(headers: Record<string, string>, metadata: Record<string, string>): Record<string, string> {
  const names: Record<string, string> = {
    blobContentType: 'x-ms-blob-content-type',
    blobContentEncoding: 'x-ms-blob-content-encoding',
    blobContentLanguage: 'x-ms-blob-content-language',
    blobContentDisposition: 'x-ms-blob-content-disposition',
    blobCacheControl: 'x-ms-blob-cache-control',
  };
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (names[k]) out[names[k]] = v;
  for (const [k, v] of Object.entries(metadata)) out[`x-ms-meta-${k}`] = v;
  return out;
}

function uploadHeaders(list: Json[] | undefined) {
  const headers: Record<string, string> = {};
  const metadata: Record<string, string> = {};
  const field: Record<string, string> = {
    'content-type': 'blobContentType',
    'content-encoding': 'blobContentEncoding',
    'content-language': 'blobContentLanguage',
    'content-disposition': 'blobContentDisposition',
    'cache-control': 'blobCacheControl',
  };
  for (const h of list ?? []) {
    const name = String(h.name).toLowerCase();
    const value = typeof h.value === 'string' ? h.value : '';
    if (name.startsWith('x-ms-meta-')) metadata[name.slice('x-ms-meta-'.length)] = value;
    else if (field[name]) headers[field[name]] = value;
  }
  return { headers, metadata };
}

/** The failure codes Batch reports for output file uploads (TaskFailureInformationCodes). */
function uploadFailure(e: unknown, pattern: string): Json {
  const status = e instanceof RestError ? e.statusCode : undefined;
  const code = status === 404 ? 'FileUploadContainerNotFound' : status === 403 ? 'FileUploadAccessDenied' : 'FileUploadMiscError';
  const message = {
    FileUploadContainerNotFound: 'One of the specified Azure container(s) was not found while attempting to upload an output file',
    FileUploadAccessDenied: 'Access to the Azure Storage container for uploading output files was denied',
    FileUploadMiscError: 'The compute node hit an unexpected error when uploading output files',
  }[code];
  return {
    category: 'usererror',
    code,
    message,
    details: [
      { name: 'FilePattern', value: pattern },
      { name: 'Message', value: describe(e) },
    ],
  };
}

function describe(e: unknown): string {
  const text = e instanceof RestError ? `HTTP ${e.statusCode ?? '-'} ${e.code ?? ''} ${e.message.split('\n')[0]}` : (e as Error).message;
  return redact(text.trim());
}

/** SAS signatures must not reach logs or failure messages. */
function redact(text: string): string {
  return text.replace(/([?&]sig=)[^&\s]*/gi, '$1REDACTED');
}
