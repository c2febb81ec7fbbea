/** Timer schedules: six-field NCRONTAB (`sec min hour day month dow`) or a TimeSpan interval ("00:05:00"). */
import { CronExpressionParser } from 'cron-parser';
import { parseTimeSpan } from '../hostJson';

export interface TimerSchedule {
  /** First occurrence strictly after `after`. */
  next(after: Date): Date;
  describe(): string;
}

export function parseTimerSchedule(expression: string, timeZone = 'UTC'): TimerSchedule {
  const expr = expression.trim();
  if (/^(\d+\.)?\d{1,2}:\d{1,2}:\d{1,2}(\.\d+)?$/.test(expr)) {
    const intervalMs = parseTimeSpan(expr, `timer schedule "${expr}"`);
    if (intervalMs <= 0) throw new Error(`Timer schedule "${expr}": the interval must be positive`);
    return { next: (after) => new Date(after.getTime() + intervalMs), describe: () => `every ${expr}` };
  }
  const fields = expr.split(/\s+/);
  if (fields.length !== 6) {
    throw new Error(`Timer schedule "${expr}" must have six fields (second minute hour day month day-of-week), got ${fields.length}`);
  }
  // Parsed now, so a bad schedule fails at start-up and not at the first tick; and only once: each tick asks for the
  // next occurrence three times, and a parse costs far more than the step (reset to `after`, then next()).
  let parsed: ReturnType<typeof CronExpressionParser.parse>;
  try {
    parsed = CronExpressionParser.parse(expr, { currentDate: new Date(), tz: timeZone, strict: false });
  } catch (err) {
    throw new Error(`Timer schedule "${expr}" is not a valid NCRONTAB expression: ${(err as Error).message}`);
  }
  return {
    next(after) {
      parsed.reset(after);
      return parsed.next().toDate();
    },
    describe: () => expr,
  };
}
