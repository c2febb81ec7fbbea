/** Adapters from the Durable client to the small interfaces the services need (start once, cancel, read status). */
import type { InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient, DurableOrchestrationStatus } from 'durable-functions';
import { CANCEL_EVENT, MPI_JOB_ORCHESTRATION, isOrchestrationFinished, type CancelEventData, type MpiJobInput } from '../../shared/core/contract';
import type { CancelSignal } from '../../shared/adapters/intake/cancel';
import type { OrchestrationStarter } from '../../shared/adapters/intake/submit';
import { pipelineSettings } from '../../shared/adapters/intake/settings';
import { appConfig } from '../../shared/services';

/**
 * The HTTP status behind a DurableClient error. The library (durable-functions 3.x) turns the management API's
 * answers into plain Errors: "…replied with HTTP 404 response…" from getStatus, "…unexpected status code: 409…"
 * from the others, "No instance with ID … found." for raiseEvent's 404. This is the one place that reads them.
 */
export function durableErrorStatus(err: unknown): number | undefined {
  const message = err instanceof Error ? err.message : '';
  const m = /\bHTTP (\d{3}) response\b/.exec(message) ?? /\bunexpected status code: (\d{3})\b/.exec(message);
  if (m) return Number(m[1]);
  return /^No instance with ID '.*' found\.$/.test(message) ? 404 : undefined;
}

/**
 * The function's durableClient binding gave no usable client: the Durable extension has not started yet (a host that
 * is starting: a restart here, a cold start or scale-out in Azure). Transient: the answer is 503 with Retry-After.
 */
export class DurableClientNotReady extends Error {
  override readonly name = 'DurableClientNotReady';
}

/**
 * The Durable client of this invocation. A function registered with the binding whose binding data is missing or
 * not a client (durable-functions' getClient: "Received input is not a valid durable client input") is met while
 * the extension is starting, so it is DurableClientNotReady; a function registered without the binding is a bug and
 * its error goes on as it came.
 */
export function durableClientOf(context: InvocationContext): DurableClient {
  try {
    return df.getClient(context);
  } catch (err) {
    if (!context.options.extraInputs.some((i) => i.type === 'durableClient' || i.type === 'orchestrationClient')) throw err;
    throw new DurableClientNotReady(`the Durable client is not ready yet (the host is starting): ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
}

/** The instance's status, or undefined when there is no such instance. */
export async function instanceStatus(client: DurableClient, id: string): Promise<DurableOrchestrationStatus | undefined> {
  try {
    return await client.getStatus(id, { showInput: false });
  } catch (err) {
    if (durableErrorStatus(err) === 404) return undefined;
    throw err;
  }
}

export interface LiveStatus {
  runtimeStatus: string;
  customStatus?: unknown;
}

/** The orchestration's runtime status and live progress (custom status), when the instance exists. */
export async function liveStatus(client: DurableClient, jobId: string): Promise<LiveStatus | undefined> {
  const s = await instanceStatus(client, jobId);
  return s && { runtimeStatus: String(s.runtimeStatus), customStatus: s.customStatus };
}

export function orchestrationStarter(client: DurableClient): OrchestrationStarter {
  return {
    async ensureStarted(jobId, spec, justCreated) {
      if (!justCreated && (await liveStatus(client, jobId))) return 'exists';
      const input: MpiJobInput = { jobId, spec, settings: pipelineSettings(appConfig()) };
      try {
        await client.startNew(MPI_JOB_ORCHESTRATION, { instanceId: jobId, input });
        return 'started';
      } catch (err) {
        // Two intakes of the same job raced; the other one started it.
        if (durableErrorStatus(err) === 409) return 'exists';
        throw err;
      }
    },
  };
}

export function cancelSignal(client: DurableClient): CancelSignal {
  return {
    async raiseCancel(jobId, reason) {
      const s = await liveStatus(client, jobId);
      if (!s || isOrchestrationFinished(s.runtimeStatus)) return false;
      const data: CancelEventData = { reason };
      try {
        await client.raiseEvent(jobId, CANCEL_EVENT, data);
      } catch (err) {
        // Finished or purged between the look and the raise.
        if (durableErrorStatus(err) === 404) return false;
        throw err;
      }
      return true;
    },
  };
}
