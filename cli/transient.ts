/**
 * Long-running commands (watch, logs --follow) poll for minutes: a Function App restart or a 503 from a busy
 * dependency must not end them. API/network errors are retried up to `maxErrors` times in a row; a 404, a 400
 * and a refusal of the caller (401 not signed in, 403 no role: AccessRefused) are final at once.
 */
import { AccessRefused, CliError, ExitCode } from './errors';

export class TransientRetry {
  private errors = 0;

  constructor(
    private readonly intervalMs: number,
    private readonly note: (text: string) => void,
    private readonly maxErrors = 10,
  ) {}

  async call<T>(fn: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        const value = await fn();
        this.errors = 0;
        return value;
      } catch (err) {
        if (!(err instanceof CliError) || err instanceof AccessRefused || err.exitCode !== ExitCode.Api || ++this.errors >= this.maxErrors) throw err;
        this.note(`(retrying after: ${err.message})\n`);
        await new Promise((r) => setTimeout(r, this.intervalMs));
      }
    }
  }
}
