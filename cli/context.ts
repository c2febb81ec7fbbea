/** What every command gets: output channels, the --json switch and a lazily built API client. */
import { ApiClient } from './apiClient';
import { resolveConnection, type ConnectionFlags } from './connection';

export interface CommandContext {
  json: boolean;
  /** Standard output (results). */
  out: (text: string) => void;
  /** Standard error (notes, progress on pipes, errors). */
  err: (text: string) => void;
  /** Built on first use, so offline commands (validate) need no endpoint. */
  api: () => ApiClient;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
}

export function createContext(flags: ConnectionFlags & { json?: boolean }): CommandContext {
  let client: ApiClient | undefined;
  return {
    json: Boolean(flags.json),
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    api: () => (client ??= new ApiClient(resolveConnection(flags))),
    stdout: process.stdout,
    stderr: process.stderr,
  };
}

export function printJson(ctx: CommandContext, value: unknown): void {
  ctx.out(`${JSON.stringify(value, null, 2)}\n`);
}
