/**
 * Admission settings: the queues jobs wait in and the limits admission keeps (docs/scheduling.md). Parsed from
 * ADMISSION_QUEUES (JSON list) and ADMISSION_CORE_QUOTA (JSON object); each problem names the variable.
 */
import { z } from 'zod';
import { DEFAULT_QUEUE, QUEUE_NAME_RE, SCHEDULING_LIMITS } from '../spec/sections/scheduling';

export interface QueueSetting {
  name: string;
  priority: number;
  maxNodes?: number;
  maxCores?: number;
}

export interface AdmissionConfig {
  queues: QueueSetting[];
  /** The Batch account's dedicated core quota: per VM family, and the account total. Empty: no core limit. */
  coreQuota: { total?: number; families: Record<string, number> };
  maxPools?: number;
  maxNodes?: number;
  ownerMaxNodes?: number;
  ownerMaxCores?: number;
  backfillLimit: number;
  /** How often a waiting job asks whether it was admitted (a lost event only delays it by this much). */
  pollMs: number;
}

export const DEFAULT_QUEUES: QueueSetting[] = [{ name: DEFAULT_QUEUE, priority: 0 }];

const cap = z.number().int().min(1).max(1_000_000).optional();
const QueuesSchema = z
  .array(
    z.strictObject({
      name: z.string().regex(QUEUE_NAME_RE, { error: 'queue names are 1–32 lowercase letters, digits and hyphens' }),
      priority: z.number().int().min(SCHEDULING_LIMITS.minPriority).max(SCHEDULING_LIMITS.maxPriority).default(0),
      maxNodes: cap,
      maxCores: cap,
    }),
  )
  .min(1)
  .max(100);

const QuotaSchema = z.record(z.string().min(1).max(100), z.number().int().min(0).max(100_000_000));

function issues(err: z.ZodError): string {
  return err.issues.map((i) => `${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`).join('; ');
}

function json(name: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${name}: not JSON: ${(err as Error).message}`);
  }
}

/** ADMISSION_QUEUES, e.g. [{"name":"default","priority":0},{"name":"urgent","priority":10,"maxNodes":40}]. */
export function parseQueues(text: string | undefined): QueueSetting[] {
  if (!text?.trim()) return DEFAULT_QUEUES.map((q) => ({ ...q }));
  const parsed = QueuesSchema.safeParse(json('ADMISSION_QUEUES', text));
  if (!parsed.success) throw new Error(`ADMISSION_QUEUES: ${issues(parsed.error)}`);
  const names = parsed.data.map((q) => q.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) throw new Error(`ADMISSION_QUEUES: queue "${twice}" is listed twice`);
  if (!names.includes(DEFAULT_QUEUE)) throw new Error(`ADMISSION_QUEUES: must declare the queue "${DEFAULT_QUEUE}" (jobs that name no queue wait there)`);
  return parsed.data.map((q) => Object.fromEntries(Object.entries(q).filter(([, v]) => v !== undefined)) as unknown as QueueSetting);
}

/** ADMISSION_CORE_QUOTA, e.g. {"standardHBv3Family":720,"total":900}: VM family → dedicated cores, "total" for the account. */
export function parseCoreQuota(text: string | undefined): AdmissionConfig['coreQuota'] {
  if (!text?.trim()) return { families: {} };
  const parsed = QuotaSchema.safeParse(json('ADMISSION_CORE_QUOTA', text));
  if (!parsed.success) throw new Error(`ADMISSION_CORE_QUOTA: ${issues(parsed.error)} (expected {"<VM family>": cores, …, "total": cores})`);
  const { total, ...families } = parsed.data;
  return total === undefined ? { families } : { total, families };
}
