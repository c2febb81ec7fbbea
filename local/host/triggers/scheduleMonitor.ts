/**
 * Timer schedule status kept in storage, as the host's ScheduleMonitor does (blob
 * `azure-webjobs-hosts/timers/<hostId>/<function>/status` holding {Last, Next, LastUpdated}), so that a
 * host that was down across an occurrence fires once at start with isPastDue = true.
 */
import type { ContainerClient } from '@azure/storage-blob';
import { blobServiceClient, type StorageConnection } from '../storageConnection';

export interface ScheduleStatus {
  Last: string;
  Next: string;
  LastUpdated: string;
}

export interface ScheduleMonitor {
  get(functionName: string): Promise<ScheduleStatus | undefined>;
  set(functionName: string, status: ScheduleStatus): Promise<void>;
}

export const MONITOR_CONTAINER = 'azure-webjobs-hosts';

export function statusBlobName(hostId: string, functionName: string): string {
  return `timers/${hostId}/Host.Functions.${functionName}/status`;
}

export class BlobScheduleMonitor implements ScheduleMonitor {
  private readonly container: ContainerClient;
  private created?: Promise<unknown>;

  constructor(
    storage: StorageConnection,
    private readonly hostId: string,
  ) {
    this.container = blobServiceClient(storage).getContainerClient(MONITOR_CONTAINER);
  }

  async get(functionName: string): Promise<ScheduleStatus | undefined> {
    const blob = this.container.getBlobClient(statusBlobName(this.hostId, functionName));
    try {
      const text = (await blob.downloadToBuffer()).toString('utf8');
      const parsed = JSON.parse(text) as Partial<ScheduleStatus>;
      if (typeof parsed.Next !== 'string' || Number.isNaN(Date.parse(parsed.Next))) return undefined;
      return parsed as ScheduleStatus;
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return undefined;
      throw new Error(`Cannot read timer status of "${functionName}" (${MONITOR_CONTAINER}/${blob.name}): ${(err as Error).message}`);
    }
  }

  async set(functionName: string, status: ScheduleStatus): Promise<void> {
    this.created ??= this.container.createIfNotExists().catch((err: unknown) => {
      this.created = undefined;
      throw err;
    });
    await this.created;
    const text = JSON.stringify(status);
    await this.container.getBlockBlobClient(statusBlobName(this.hostId, functionName)).upload(text, Buffer.byteLength(text));
  }
}

/** The host id: AzureFunctionsWebHost__hostid when set, else derived from the app folder name. */
export function localHostId(appDir: string, env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env.AzureFunctionsWebHost__hostid;
  if (explicit) return explicit;
  const base = appDir.split(/[\\/]/).filter(Boolean).pop() ?? 'app';
  return (
    base
      .toLowerCase()
      .replace(/[^a-z0-9-]/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 32) || 'app'
  );
}
