/**
 * Job events (docs/events.md). Adapters only:
 * - queue `job-events`: a transition was announced (or a retry is due): deliver what is due of that job;
 * - timer `eventsRelay` (EVENTS_RELAY_SCHEDULE): find transitions no announcement delivered and due retries.
 * Both do nothing when no event endpoint is configured.
 */
import { app, type InvocationContext, type Timer } from '@azure/functions';
import { eventsRelaySchedule } from '../shared/adapters/config';
import { EVENTS_QUEUE } from '../shared/adapters/events/announcer';
import { deliverJob, relayOnce, RelayMemory } from '../shared/adapters/events/delivery';
import { JOB_ID_RE } from '../shared/core/spec/patterns';
import { eventAnnouncer, eventDelivery } from '../shared/services';
import { relayRunLevel } from '../shared/core/ops/routineRuns';

/** A job whose cursor another sender holds is looked at again this soon (its sender may miss the newest transition). */
const BUSY_RETRY_MS = 2_000;
/** The relay's memory of settled jobs, kept across its runs in this process (shared/adapters/events/delivery.ts). */
const relayMemory = new RelayMemory();

export async function jobEventsFromQueue(message: unknown, context: InvocationContext): Promise<void> {
  const body = typeof message === 'string' ? parseJson(message) : message;
  const jobId = typeof body === 'object' && body !== null ? (body as { jobId?: unknown }).jobId : undefined;
  if (typeof jobId !== 'string' || !JOB_ID_RE.test(jobId)) {
    context.warn(`${EVENTS_QUEUE}: dropped a message without a valid jobId: ${JSON.stringify(message).slice(0, 200)}`);
    return;
  }
  const deps = await eventDelivery();
  if (!deps) return;
  const runs = await deliverJob(deps, jobId);
  if (runs.some((r) => r.state === 'busy')) await eventAnnouncer()?.announce(jobId, BUSY_RETRY_MS);
  const failed = runs.filter((r) => r.state === 'waiting');
  const line = JSON.stringify({ event: 'jobEvents', jobId, runs });
  if (failed.length) context.warn(line);
  else context.info(line);
}

export async function eventsRelayTimer(timer: Timer, context: InvocationContext): Promise<void> {
  const deps = await eventDelivery();
  if (!deps) return;
  const report = await relayOnce(deps, { memory: relayMemory });
  const line = JSON.stringify({ event: 'eventsRelay', isPastDue: timer.isPastDue, ...report });
  // A pass with nothing to relay is routine: debug, not a line every few seconds at info.
  context[relayRunLevel(report)](line);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

app.storageQueue('jobEvents', { queueName: EVENTS_QUEUE, connection: 'AzureWebJobsStorage', handler: jobEventsFromQueue });
app.timer('eventsRelay', { schedule: eventsRelaySchedule(), handler: eventsRelayTimer });
