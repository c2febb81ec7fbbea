/**
 * Shipyard's job scratch lived at $AZ_BATCH_TASK_DIR/auto_scratch (a BeeOND mount); the spec's scratch is at
 * $MPIJOB_SCRATCH (the same path on every node). The imported commands are pointed at the new place, and because the
 * recipes' setup scripts (downloaded files the importer never reads, e.g. OpenFOAM's set_up_sample.sh, which does
 * `cd $AZ_BATCH_TASK_DIR/auto_scratch`) use the old path, the pre-execution command first makes that path a link to
 * the scratch on the master. The link is enough for the other nodes too: the launcher starts remote ranks in the
 * master's physical working directory (getcwd resolves the link to $MPIJOB_SCRATCH/…), which every node mounts.
 * Pure.
 */
import type { SpecDraft } from './context';
import { isObj } from './context';

export const AUTO_SCRATCH_RE = /\$\{?AZ_BATCH_TASK_DIR\}?\/auto_scratch\b/g;

/** Runs only where the scratch is exported (a preflight without scratch leaves it alone). */
export const AUTO_SCRATCH_LINK = 'if [ -n "${MPIJOB_SCRATCH:-}" ]; then ln -sfn "$MPIJOB_SCRATCH" "$AZ_BATCH_TASK_DIR/auto_scratch"; fi';

const FIELDS = ['preExecutionCommand', 'command', 'coordinationCommand'] as const;

/** Rewrites the draft's commands in place; returns what changed, in words, for its header (empty: no scratch). */
export function wireScratch(d: SpecDraft): string[] {
  if (!isObj(d.spec.scratch)) return [];
  const mpi = isObj(d.spec.mpi) ? d.spec.mpi : (d.spec.mpi = {});
  const changed: string[] = [];
  for (const f of FIELDS) {
    const v = mpi[f];
    if (typeof v !== 'string') continue;
    const next = v.replace(AUTO_SCRATCH_RE, '$$MPIJOB_SCRATCH');
    if (next === v) continue;
    mpi[f] = next;
    changed.push(`mpi.${f}: $AZ_BATCH_TASK_DIR/auto_scratch → $MPIJOB_SCRATCH`);
  }
  const pre = typeof mpi.preExecutionCommand === 'string' && mpi.preExecutionCommand.trim() ? mpi.preExecutionCommand : undefined;
  mpi.preExecutionCommand = pre ? `${AUTO_SCRATCH_LINK}; ${pre}` : AUTO_SCRATCH_LINK;
  changed.push(
    "mpi.preExecutionCommand first links $AZ_BATCH_TASK_DIR/auto_scratch to $MPIJOB_SCRATCH on the master, for the setup scripts that use Shipyard's path",
  );
  return changed;
}
