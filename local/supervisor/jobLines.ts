/**
 * One readable console line per job transition, from the job events the stack's webhook receiver accepts (the same
 * CloudEvents a customer's service gets; docs/events.md): what `npm start` shows instead of the host's JSON log.
 * Delivery is at least once, so a repeated event id prints nothing. Event text is the app's and may carry what a
 * submitter wrote (names, reasons): control characters are replaced so no escape sequence reaches the terminal.
 */
import { isTerminal } from '../../shared/core/state/states';

const REASON_CHARS = 300;
/** Event ids remembered for de-duplication (repeats come within minutes; older ids are let go). */
const REMEMBERED_IDS = 10_000;

function clean(value: unknown, max = 120): string {
  const text = String(value ?? '')
    // eslint-disable-next-line no-control-regex -- control characters are what it removes
    .replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ')
    .trim();
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The line for one job event, or undefined for an event that is not a job state change. */
export function jobTransitionLine(event: Record<string, unknown>): string | undefined {
  const data = event.data as Record<string, unknown> | undefined;
  if (event.type !== 'com.hpcjobs.job.stateChanged.v1' || !data || typeof data.jobId !== 'string' || typeof data.state !== 'string') return undefined;
  const when = typeof data.time === 'string' && !Number.isNaN(Date.parse(data.time)) ? new Date(data.time).toISOString().slice(11, 19) : '--:--:--';
  const job = `job ${clean(data.jobId)}`;
  const reason = data.reason ? `: ${clean(data.reason, REASON_CHARS)}` : '';
  const state = clean(data.state, 40);
  if (data.previousState === null || data.previousState === undefined) {
    const name = data.name && data.name !== data.jobId ? ` (${clean(data.name, 80)})` : '';
    return `${when}  ${job}${name} submitted${state === 'Submitted' ? '' : ` → ${state}`}${reason}`;
  }
  if (isTerminal(data.state)) return `${when}  ${job} ended ${state}${reason}`;
  return `${when}  ${job} ${clean(data.previousState, 40)} → ${state}${reason}`;
}

/** A printer of job lines that drops repeated deliveries of the same event (by its id). */
export function jobLinePrinter(print: (line: string) => void): (event: Record<string, unknown>) => void {
  const seen = new Set<string>();
  return (event) => {
    const id = typeof event.id === 'string' ? event.id : undefined;
    if (id) {
      if (seen.has(id)) return;
      seen.add(id);
      if (seen.size > REMEMBERED_IDS) seen.delete(seen.values().next().value as string);
    }
    const line = jobTransitionLine(event);
    if (line) print(line);
  };
}
