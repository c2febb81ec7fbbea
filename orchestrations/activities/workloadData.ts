import type { OutputsListRequest, OutputsResult, WorkloadUrls, WorkloadUrlsRequest } from '../../shared/contract';
import { dataAccount } from '../../shared/services';
import { registerActivity } from '../runtime/activityCalls';
import { containerSasUrl, readOnlyBlobUrl, withoutQuery } from '../../shared/storage/sas';
import { summarizeOutputs } from '../../shared/storage/outputs';
import type { BlobAccount } from '../../shared/storage/clients';
import type { NodeFileSource, NodeResourceFile } from '../../shared/planning/workloadData';

/** At most this many outputs are listed in a job result (the row must stay small); the rest are counted. */
export const LISTED_OUTPUTS = 200;

export interface WorkloadUrlDeps {
  /** A data account for one container; throws when the data-access policy refuses it. */
  dataAccount(account: string, container: string): BlobAccount;
}

/**
 * The MPI task's commonResourceFiles (a read-only SAS for each blob, a read/list SAS on the container of a prefix)
 * and a create/write SAS on the outputs' container, all expiring at `expiresAt`.
 */
export async function mintWorkloadUrls(deps: WorkloadUrlDeps, input: WorkloadUrlsRequest): Promise<WorkloadUrls> {
  const expires = new Date(input.expiresAt);
  const files = await Promise.all(
    input.files.map(async (f: NodeFileSource): Promise<NodeResourceFile> => {
      const mode = f.fileMode === undefined ? {} : { fileMode: f.fileMode };
      if (f.kind === 'url') return { httpUrl: f.url, filePath: f.filePath, ...mode };
      const account = deps.dataAccount(f.account, f.container);
      if (f.kind === 'blob') return { httpUrl: await readOnlyBlobUrl(account, f.container, f.blob, expires), filePath: f.filePath, ...mode };
      return {
        storageContainerUrl: await containerSasUrl(account, f.container, 'rl', expires),
        ...(f.prefix ? { blobPrefix: f.prefix } : {}),
        filePath: f.filePath,
        ...mode,
      };
    }),
  );
  const outputs = input.outputs;
  const outputsContainerUrl = outputs
    ? await createContainerAndSign(deps.dataAccount(outputs.account, outputs.container), outputs.container, expires)
    : undefined;
  return { files, ...(outputsContainerUrl ? { outputsContainerUrl } : {}) };
}

/** Batch fails uploads to a container that does not exist (FileUploadContainerNotFound): create it first. */
async function createContainerAndSign(account: BlobAccount, container: string, expires: Date): Promise<string> {
  await account.service.getContainerClient(container).createIfNotExists();
  return containerSasUrl(account, container, 'cw', expires);
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
  return mintWorkloadUrls({ dataAccount }, input);
}

export function outputsList(input: OutputsListRequest): Promise<OutputsResult> {
  return listJobOutputs({ dataAccount }, input);
}

registerActivity('workloadUrls', workloadUrls);
registerActivity('outputsList', outputsList);
