/** Adapters from the Durable client to the intake's small interfaces (start once, raise cancel, read progress). */
import type { DurableClient, DurableOrchestrationStatus } from 'durable-functions';
import { MPI_JOB, type MpiJobInput } from '../../orchestrations/mpiJob';
import type { CancelSignal } from '../../shared/intake/cancel';
import type { OrchestrationStarter } from '../../shared/intake/submit';
import { pipelineSettings } from '../../shared/intake/settings';
import { appConfig } from '../../orchestrations/activities/services';

/** The instance's status, or undefined when there is no such instance. */
export async function instanceStatus(client: DurableClient, id: string): Promise<DurableOrchestrationStatus | undefined> {
  try {
    return await client.getStatus(id, { showInput: false });
  } catch (err) {
    if (/404|not found|no instance/i.test((err as Error).message)) return undefined;
    throw err;
  }
}

async function exists(client: DurableClient, id: string): Promise<{ runtimeStatus: string; customStatus?: unknown } | undefined> {
  const s = await instanceStatus(client, id);
  return s && { runtimeStatus: String(s.runtimeStatus), customStatus: s.customStatus };
}

export function orchestrationStarter(client: DurableClient): OrchestrationStarter {
  return {
    async ensureStarted(jobId, spec, justCreated) {
      if (!justCreated && (await exists(client, jobId))) return 'exists';
      const input: MpiJobInput = { jobId, spec, settings: pipelineSettings(appConfig()) };
      try {
        await client.startNew(MPI_JOB, { instanceId: jobId, input });
        return 'started';
      } catch (err) {
        // Two intakes of the same job raced; the other one started it.
        if (/409|already exists/i.test((err as Error).message)) return 'exists';
        throw err;
      }
    },
  };
}

export function cancelSignal(client: DurableClient): CancelSignal {
  return {
    async raiseCancel(jobId, reason) {
      const s = await exists(client, jobId);
      if (!s || ['Completed', 'Failed', 'Terminated', 'Canceled'].includes(s.runtimeStatus)) return false;
      await client.raiseEvent(jobId, 'cancel', { reason });
      return true;
    },
  };
}

/** The orchestration's live progress (custom status), if it has one. */
export async function liveStatus(client: DurableClient, jobId: string): Promise<{ runtimeStatus: string; customStatus?: unknown } | undefined> {
  return exists(client, jobId);
}
