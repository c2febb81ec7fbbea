/**
 * How user code runs on a node: as on the login shell of an Azure HPC image. Batch starts command lines without a
 * shell and without the node's profile, so `module` is missing and a vendor script that reads unset variables
 * (Intel's mpivars.sh, mklvars.sh, OpenFOAM's etc/bashrc) dies under the `set -euo pipefail` our own glue uses.
 * User code therefore runs in bash with strict mode off and the node's profile sourced, and its exit status is
 * checked explicitly by the glue around it.
 *
 * The profile is every readable `/etc/profile.d/*.sh`, in order (what `/etc/profile` sources, and where Azure's HPC
 * images and Debian's environment-modules put `module`'s initialisation), but not `/etc/profile` itself: Debian's
 * resets PATH, which would drop the PATH Batch gives the task.
 */
import { bashCommandLine, shellQuote } from './shellQuote';

export const NODE_PROFILE = 'for mpijob_f in /etc/profile.d/*.sh; do if [ -r "$mpijob_f" ]; then . "$mpijob_f"; fi; done; unset mpijob_f';

/** Strict mode for our own glue; user code runs with it off. */
export const GLUE_STRICT = 'set -euo pipefail';
export const USER_MODE = 'set +euo pipefail';

/**
 * Shell lines that run `command` (data, evaluated as one script) as user code inside a glue script, and stop the
 * script with the command's own exit status when it fails, naming `what` on stderr. Strict mode is back on after it.
 */
export function userStep(what: string, command: string): string[] {
  return [
    USER_MODE,
    `eval ${shellQuote(command)}`,
    'mpijob_rc=$?',
    `if [ "$mpijob_rc" -ne 0 ]; then echo ${shellQuote(`[mpijob] ${what} exited with status`)} "$mpijob_rc" >&2; exit "$mpijob_rc"; fi`,
    GLUE_STRICT,
  ];
}

/** A whole command line of user code (start task): bash, the node's profile, no strict mode, its own exit status. */
export function userCommandLine(command: string): string {
  return bashCommandLine(`${NODE_PROFILE}; eval ${shellQuote(command)}`);
}
