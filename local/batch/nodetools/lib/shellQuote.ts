/**
 * One word for a POSIX shell, always single-quoted: the node-side files the emulator and the node tools write for a
 * shell to source (the node's environment file, a container's ssh.sh). No dependencies:
 * the node tools bundle it, and the emulator may not use the product's quoting (shared/core/mpi/shellQuote.ts).
 */
export function shellQuote(v: string): string {
  return `'${v.replace(/'/g, `'\\''`)}'`;
}
