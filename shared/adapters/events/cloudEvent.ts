/**
 * A job's state change as a CloudEvents 1.0 event (https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/spec.md).
 * Pure. The id is `<jobId>:<seq>`: the same transition always gives the same id, so receivers deduplicate redeliveries.
 * The payload carries who, what and why of the change and nothing else: no spec (it may name registry secrets, data
 * locations, environment values), no result or output tail.
 */
import type { JobEvent, JobState } from '../state';

export const JOB_STATE_CHANGED_TYPE = 'com.hpcjobs.job.stateChanged.v1';
/** Longest reason carried (reasons may quote an error message). */
export const MAX_REASON_CHARS = 1_000;

export interface JobStateChangedData {
  jobId: string;
  name: string;
  /** The job's owner id (`<tenant id>/<object id>`, "operator", "anonymous" or "queue"). */
  owner: string;
  state: JobState;
  /** null for the creation (seq 1). */
  previousState: JobState | null;
  reason: string;
  /** 1 for the creation, +1 per transition: the order of this job's events. */
  seq: number;
  /** When the transition was recorded (ISO 8601 UTC). */
  time: string;
}

/** The structured-mode JSON of the event (application/cloudevents+json). */
export interface JobCloudEvent {
  specversion: '1.0';
  id: string;
  source: string;
  type: typeof JOB_STATE_CHANGED_TYPE;
  subject: JobState;
  time: string;
  datacontenttype: 'application/json';
  /** CloudEvents "sequence" extension: the seq zero-padded to 10 digits, so it also orders as a string. */
  sequence: string;
  data: JobStateChangedData;
}

/** The part of the job row an event needs. */
export interface EventJob {
  id: string;
  name: string;
  owner: string;
}

export function eventId(jobId: string, seq: number): string {
  return `${jobId}:${seq}`;
}

/** `<origin>/api/jobs/<id>`, or the relative reference `/api/jobs/<id>` when no origin is configured. */
export function eventSource(jobId: string, sourceBaseUrl: string | undefined): string {
  return `${(sourceBaseUrl ?? '').replace(/\/+$/, '')}/api/jobs/${encodeURIComponent(jobId)}`;
}

export function jobStateChangedEvent(job: EventJob, transition: JobEvent, sourceBaseUrl?: string): JobCloudEvent {
  if (transition.kind !== 'transition' || transition.seq === undefined || transition.to === undefined) {
    throw new TypeError(`job ${job.id}: only transitions become events (got a ${transition.kind} "${transition.reason}")`);
  }
  if (transition.jobId !== job.id) throw new TypeError(`transition of job ${transition.jobId} given with job ${job.id}`);
  const reason = transition.reason.length > MAX_REASON_CHARS ? `${transition.reason.slice(0, MAX_REASON_CHARS - 1)}…` : transition.reason;
  return {
    specversion: '1.0',
    id: eventId(job.id, transition.seq),
    source: eventSource(job.id, sourceBaseUrl),
    type: JOB_STATE_CHANGED_TYPE,
    subject: transition.to,
    time: transition.at,
    datacontenttype: 'application/json',
    sequence: String(transition.seq).padStart(10, '0'),
    data: {
      jobId: job.id,
      name: job.name,
      owner: job.owner,
      state: transition.to,
      previousState: transition.from ?? null,
      reason,
      seq: transition.seq,
      time: transition.at,
    },
  };
}
