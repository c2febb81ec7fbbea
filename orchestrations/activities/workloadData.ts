import type { OutputsListRequest, OutputsResult, WorkloadUrls, WorkloadUrlsRequest } from '../../shared/core/contract';
import { dataAccount, outputsSasScopeOf } from '../../shared/services';
import { registerActivity } from './registration';
import { containerSasUrl, directorySasUrl, readOnlyBlobUrl, withoutQuery } from '../../shared/adapters/storage/sas';
import { summarizeOutputs } from '../../shared/adapters/storage/outputs';
import type { BlobAccount } from '../../shared/adapters/storage/clients';
import type { NodeFileSource, NodeResourceFile } from '../../shared/core/planning/workloadData';
import { nodeResourceFile } from '../../shared/core/planning/batchRequests';

/** At most this many outputs are listed in a job result (the row must stay small); the rest are counted. */
export const LISTED_OUTPUTS = 200;

/**
 * At most this many blobs under one `files[].prefix`: each becomes a resource file with its own SAS URL (a few hundred
 * bytes), and Batch refuses a task request that grows too large.
 */
export const MAX_PREFIX_BLOBS = 500;

export interface WorkloadUrlDeps {
  /** A data account for one container; throws when the data-access policy refuses it. */
  dataAccount(account: string, container: string): BlobAccount;
  /** Which SAS a node gets for outputs to this account (a directory SAS on HNS accounts); throws when refused. */
  outputsSasScope(account: string, container: string): 'directory' | 'container';
}

/**
 * The MPI task's commonResourceFiles (a read-only SAS for each blob; for a prefix, one per blob under it, listed now)
 * and a create/write SAS for the outputs, all expiring at `expiresAt`. No node gets a SAS that reads or lists a whole
 * container: the container may hold other owners' areas (docs/security.md, "Data areas"). The outputs SAS covers the
 * job's outputs prefix alone on an HNS account; on a flat one it is the container's (docs/security.md, "Outputs").
 */
export async function mintWorkloadUrls(deps: WorkloadUrlDeps, input: WorkloadUrlsRequest): Promise<WorkloadUrls> {
  const expires = new Date(input.expiresAt);
  const files = (
    await Promise.all(
      input.files.map(async (f: NodeFileSource): Promise<NodeResourceFile[]> => {
        if (f.kind === 'url') return [nodeResourceFile(f, {})];
        const account = deps.dataAccount(f.account, f.container);
        if (f.kind === 'blob') return [nodeResourceFile(f, { blobUrl: await readOnlyBlobUrl(account, f.container, f.blob, expires) })];
        return prefixResourceFiles(account, f, expires);
      }),
    )
  ).flat();
  const outputs = input.outputs;
  const outputsContainerUrl = outputs ? await createContainerAndSign(deps, outputs, expires) : undefined;
  return { files, ...(outputsContainerUrl ? { outputsContainerUrl } : {}) };
}

/**
 * Every blob under the prefix as its own resource file, landing where Batch would put it with a container URL and
 * blobPrefix (`<filePath>/<full blob name>`), each with a read-only SAS for that blob alone.
 */
async function prefixResourceFiles(account: BlobAccount, f: Extract<NodeFileSource, { kind: 'prefix' }>, expires: Date): Promise<NodeResourceFile[]> {
  const names: string[] = [];
  for await (const b of account.service.getContainerClient(f.container).listBlobsFlat({ prefix: f.prefix })) {
    names.push(b.name);
    if (names.length > MAX_PREFIX_BLOBS) {
      throw new Error(
        `files: more than ${MAX_PREFIX_BLOBS} blobs under ${f.account}/${f.container}/${f.prefix}: each becomes a resource file of the MPI task; pack them (e.g. into a tar blob) or name a narrower prefix`,
      );
    }
  }
  const mode = f.fileMode === undefined ? {} : { fileMode: f.fileMode };
  return Promise.all(
    names.map(async (name) => ({ httpUrl: await readOnlyBlobUrl(account, f.container, name, expires), filePath: `${f.filePath}/${name}`, ...mode })),
  );
}

/** Batch fails uploads to a container that does not exist (FileUploadContainerNotFound): create it first. */
async function createContainerAndSign(deps: WorkloadUrlDeps, outputs: NonNullable<WorkloadUrlsRequest['outputs']>, expires: Date): Promise<string> {
  const account = deps.dataAccount(outputs.account, outputs.container);
  const scope = deps.outputsSasScope(outputs.account, outputs.container);
  await account.service.getContainerClient(outputs.container).createIfNotExists();
  // Create and write only: no read, list or delete, so a node cannot see or remove what is already there.
  if (scope === 'directory' && outputs.prefix) return directorySasUrl(account, outputs.container, outputs.prefix, 'cw', expires);
  if (scope === 'directory')
    throw new Error(
      `outputs: no outputs prefix to scope the SAS of ${outputs.account}/${outputs.container} to (a run started before the prefix was sent); rerun the job`,
    );
  return containerSasUrl(account, outputs.container, 'cw', expires);
}

export async function listJobOutputs(deps: WorkloadUrlDeps, input: OutputsListRequest): Promise<OutputsResult> {
  const account = deps.dataAccount(input.account, input.container);
  const summary = await summarizeOutputs(account, input.container, input.prefix, LISTED_OUTPUTS);
  return {
    container: withoutQuery(account.service.getContainerClient(input.container).url),
    prefix: input.prefix,
    files: summary.files.map(({ name, size, url }) => ({ name, size, url: withoutQuery(url) })),
    count: summary.count,
    bytes: summary.bytes,
    truncated: summary.truncated,
    errors: input.errors,
  };
}

export function workloadUrls(input: WorkloadUrlsRequest): Promise<WorkloadUrls> {
  return mintWorkloadUrls({ dataAccount, outputsSasScope: outputsSasScopeOf }, input);
}

export function outputsList(input: OutputsListRequest): Promise<OutputsResult> {
  return listJobOutputs({ dataAccount, outputsSasScope: outputsSasScopeOf }, input);
}

registerActivity('workloadUrls', workloadUrls);
registerActivity('outputsList', outputsList);
