/**
 * The levels of `npm start`'s two views of the host log: the file (<data>/logs/host.log) keeps everything from info
 * (or from --log-level when that is more verbose), the console shows host entries from --log-level (default warn:
 * the console is for the banner and the job lines) as readable lines, or with `--log-console json` the JSON lines
 * at the file's level, as before.
 */
import type { ConsoleLog } from './hostWorker';

export const CONSOLE_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
const DEFAULT_CONSOLE_LEVEL = 'warn';
const FILE_LEVEL_AT_LEAST = 'info';

export function hostLogLevels(requested: string | undefined, mode: 'jobs' | 'json'): { file: string; console: ConsoleLog } {
  if (requested !== undefined && !(CONSOLE_LEVELS as readonly string[]).includes(requested)) {
    throw new Error(`--log-level must be one of ${CONSOLE_LEVELS.join(', ')}, got ${JSON.stringify(requested)}`);
  }
  const rank = (l: string) => CONSOLE_LEVELS.indexOf(l as (typeof CONSOLE_LEVELS)[number]);
  const file = requested && rank(requested) < rank(FILE_LEVEL_AT_LEAST) ? requested : FILE_LEVEL_AT_LEAST;
  if (mode === 'json') return { file, console: { level: requested ?? file, format: 'json' } };
  return { file, console: { level: requested ?? DEFAULT_CONSOLE_LEVEL, format: 'pretty' } };
}
