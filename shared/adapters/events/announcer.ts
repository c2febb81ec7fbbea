/**
 * Announces a job's transitions on the `job-events` queue, so its events go out at once rather than at the relay's
 * next run. Best effort by design: a lost announcement (the host died after the row write, storage refused) only
 * delays the events until the relay finds the job. A delayed announcement (visibility timeout) schedules a retry.
 */
import type { TokenCredential } from '@azure/core-auth';
import { QueueClient } from '@azure/storage-queue';
import type { StorageAccountRef } from '../config';

export const EVENTS_QUEUE = 'job-events';
/** Azure Storage queues hide a message for at most 7 days. */
const MAX_DELAY_S = 7 * 24 * 3600;

export interface EventAnnouncer {
  announce(jobId: string, delayMs?: number): Promise<void>;
}

/** The message the queue trigger reads: `{"jobId": "..."}` (base64, as host.json messageEncoding says). */
export function announcementText(jobId: string): string {
  return Buffer.from(JSON.stringify({ jobId }), 'utf8').toString('base64');
}

export function queueAnnouncer(host: StorageAccountRef, credential: () => TokenCredential): EventAnnouncer {
  const client =
    host.kind === 'connectionString'
      ? new QueueClient(host.connectionString, EVENTS_QUEUE)
      : new QueueClient(`${host.queueEndpoint}/${EVENTS_QUEUE}`, credential());
  let ready: Promise<unknown> | undefined;
  return {
    async announce(jobId, delayMs = 0) {
      ready ??= client.createIfNotExists().catch((err: unknown) => {
        ready = undefined;
        throw err;
      });
      await ready;
      const visibilityTimeout = Math.min(MAX_DELAY_S, Math.max(0, Math.ceil(delayMs / 1000)));
      await client.sendMessage(announcementText(jobId), visibilityTimeout > 0 ? { visibilityTimeout } : {});
    },
  };
}
