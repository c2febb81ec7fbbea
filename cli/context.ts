/** What every command gets: output channels, the --json switch and a lazily built API client. */
import { ApiClient } from './apiClient';
import { resolveConnection, type Connection, type ConnectionFlags } from './connection';
import { tokenSource } from './auth';

export interface CommandContext {
  json: boolean;
  /** Standard output (results). */
  out: (text: string) => void;
  /** Standard error (notes, progress on pipes, errors). */
  err: (text: string) => void;
  /** Built on first use, so offline commands (validate) need no endpoint. */
  api: () => ApiClient;
  /** The resolved endpoint and sign-in settings (login, whoami). */
  connection: () => Connection;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
}

export function createContext(flags: ConnectionFlags & { json?: boolean }): CommandContext {
  let client: ApiClient | undefined;
  let connection: Connection | undefined;
  const conn = () => (connection ??= resolveConnection(flags));
  const interactive = Boolean(process.stdin.isTTY && process.stderr.isTTY);
  return {
    json: Boolean(flags.json),
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    connection: conn,
    api: () => (client ??= new ApiClient(conn(), fetch, tokenSource(conn(), { interactive, prompt: (m) => void process.stderr.write(`${m}\n`) }))),
    stdout: process.stdout,
    stderr: process.stderr,
  };
}

export function printJson(ctx: CommandContext, value: unknown): void {
  ctx.out(`${JSON.stringify(value, null, 2)}\n`);
}
