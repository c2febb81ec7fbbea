/**
 * A background step of the emulator that failed (its node's files removed under it by a pool deletion or the
 * emulator's own stop): said on stderr, never an uncaught rejection that takes the host process down.
 */
export function backgroundFailure(what: string): (e: unknown) => void {
  return (e) => console.warn(`[batch emulator] ${what}: ${(e as Error).message}`);
}
