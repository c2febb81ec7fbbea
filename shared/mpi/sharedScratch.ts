/**
 * The job's shared scratch directory on Azure nodes: shell code for the multi-instance coordination command (every
 * node, elevated, before any rank starts and before a container is started, so the container's bind mount of the
 * node root carries it) and for the job release task (every node, when the Batch job ends: after the MPI task and
 * the output uploads).
 *
 * masterNfs (Batch Shipyard's auto_scratch, with one NFS server instead of a BeeOND over all nodes): the scratch is
 * `$AZ_BATCH_NODE_SHARED_DIR/scratch/<jobId>`, on the node's local (temporary) disk where Batch keeps its root. The
 * master exports it to every other node of the task (kernel NFS server, installed if the image lacks it); the other
 * nodes mount it at the same path, which is the same on every node of a pool. One server serves every rank: fine
 * for decomposed cases, setup files and moderate I/O; a large job that hammers scratch wants a parallel file
 * system on a mount instead (kind "mount").
 *
 * mount: the scratch is `$AZ_BATCH_NODE_MOUNTS_DIR/<mount>/scratch/<jobId>` on one of the pool's mounts; the master
 * creates it, the others wait until they see it.
 *
 * Every value embedded is checked here (job ids and mount names are single safe words), so the code needs no
 * quoting beyond what it writes.
 */
import { PlanningError } from '../planning/errors';

export type ScratchKind = 'masterNfs' | 'mount';

export interface ScratchSpec {
  kind: ScratchKind;
  /** The control-plane job id: names the directory. */
  jobId: string;
  /** kind "mount": the pool mount holding the directory (its relativeMountPath). */
  mount?: string;
  /** How long a node waits for the master's export or directory (default 300 s). */
  waitSeconds?: number;
}

/** Environment variable holding the scratch path on every rank, in the pre-execution command and in the coordination command. */
export const SCRATCH_ENV = 'MPIJOB_SCRATCH';

const SAFE_WORD = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** NFS export options: rw for every rank, no root squashing (tasks run elevated), async (scratch, not archive). */
export const SCRATCH_EXPORT_OPTIONS = 'rw,async,no_root_squash,no_subtree_check';
/** Client options: hard (never hand a rank an I/O error on a hiccup), noatime. */
export const SCRATCH_MOUNT_OPTIONS = 'rw,hard,noatime';

function check(s: ScratchSpec): void {
  if (!SAFE_WORD.test(s.jobId)) throw new PlanningError(`invalid job id for a scratch directory: ${JSON.stringify(s.jobId)}`, { jobId: s.jobId });
  if (s.kind === 'mount' && (!s.mount || !SAFE_WORD.test(s.mount))) {
    throw new PlanningError(`scratch kind "mount" needs a mount name (one path segment), got ${JSON.stringify(s.mount)}`, { mount: s.mount });
  }
  if (s.kind !== 'masterNfs' && s.kind !== 'mount') throw new PlanningError(`unknown scratch kind ${JSON.stringify(s.kind)}`, { kind: s.kind });
  const wait = s.waitSeconds ?? 300;
  if (!Number.isSafeInteger(wait) || wait < 1) throw new PlanningError(`waitSeconds must be a positive whole number, got ${wait}`, { waitSeconds: wait });
}

/** The scratch directory as a shell expression, without quotes (node variables expand on the node that runs it). */
export function scratchDirExpression(s: ScratchSpec): string {
  check(s);
  return s.kind === 'masterNfs' ? `$AZ_BATCH_NODE_SHARED_DIR/scratch/${s.jobId}` : `$AZ_BATCH_NODE_MOUNTS_DIR/${s.mount}/scratch/${s.jobId}`;
}

/**
 * `export MPIJOB_SCRATCH="…"`: prepended to the ranks' command and the pre-execution command. A rank that a launcher
 * started over ssh on another Azure node has no AZ_BATCH_* variables (they exist only in the task's own context), but
 * it works in the master's working directory, whose path is the same on every node of the pool
 * (`<node root>/workitems/<job>/job-1/<task>/wd`): the node root is taken from there when the variable is missing.
 */
export function scratchExport(s: ScratchSpec): string {
  check(s);
  const base = s.kind === 'masterNfs' ? '${AZ_BATCH_NODE_SHARED_DIR:-${PWD%%/workitems/*}/shared}' : '${AZ_BATCH_NODE_MOUNTS_DIR:-${PWD%%/workitems/*}/fsmounts}';
  const rest = s.kind === 'masterNfs' ? `scratch/${s.jobId}` : `${s.mount}/scratch/${s.jobId}`;
  return `export ${SCRATCH_ENV}="${base}/${rest}"`;
}

/** Marker beside the scratch on the node that owns it: the exporting master (masterNfs) or the creator (mount). */
function ownerMarker(s: ScratchSpec): string {
  return `$AZ_BATCH_NODE_SHARED_DIR/scratch/${s.jobId}.owner`;
}

/**
 * Coordination step (every node, elevated; bash with `set -euo pipefail`): ends with the scratch usable at
 * $MPIJOB_SCRATCH on this node, or exits non-zero with the reason on stderr (the subtask fails, and so the task).
 */
export function scratchSetupScript(s: ScratchSpec): string {
  check(s);
  const wait = s.waitSeconds ?? 300;
  const marker = ownerMarker(s);
  const onMaster = ['mkdir -p "$MPIJOB_SCRATCH"', 'chmod 1777 "$MPIJOB_SCRATCH"', 'mkdir -p "$AZ_BATCH_NODE_SHARED_DIR/scratch"', `: > "${marker}"`];
  let onOthers: string[];
  if (s.kind === 'masterNfs') {
    const installServer =
      'if ! command -v exportfs >/dev/null 2>&1; then ' +
      'if command -v apt-get >/dev/null 2>&1; then { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nfs-kernel-server; } >&2; ' +
      'elif command -v dnf >/dev/null 2>&1; then dnf install -y -q nfs-utils >&2; ' +
      'else yum install -y -q nfs-utils >&2; fi; fi';
    const exportToOthers =
      'for mpijob_h in ${AZ_BATCH_HOST_LIST//,/ }; do if [ "$mpijob_h" != "$mpijob_master_ip" ]; then ' +
      `exportfs -o ${SCRATCH_EXPORT_OPTIONS} "$mpijob_h:$MPIJOB_SCRATCH"; echo "$mpijob_h" >> "${marker}"; fi; done`;
    // One node: nothing to share. Otherwise the kernel NFS server exports the directory to each other node.
    onMaster.push(
      `if [ "$AZ_BATCH_HOST_LIST" != "\${AZ_BATCH_HOST_LIST%%,*}" ]; then ${installServer}; ` +
        `if [ -d /run/systemd/system ]; then systemctl start nfs-server; fi; ${exportToOthers}; fi`,
    );
    // The master may not have exported yet (the coordination commands start together): retry until it has.
    onOthers = [
      'mkdir -p "$MPIJOB_SCRATCH"',
      `mpijob_until=$((SECONDS + ${wait}))`,
      'until mountpoint -q "$MPIJOB_SCRATCH"; do ' +
        `if mpijob_err=$(mount -t nfs -o ${SCRATCH_MOUNT_OPTIONS} "$mpijob_master_ip:$MPIJOB_SCRATCH" "$MPIJOB_SCRATCH" 2>&1); then break; fi; ` +
        `if [ "$SECONDS" -ge "$mpijob_until" ]; then echo "shared scratch: could not mount $mpijob_master_ip:$MPIJOB_SCRATCH within ${wait} s: $mpijob_err" >&2; exit 1; fi; ` +
        'sleep 2; done',
    ];
  } else {
    onOthers = [
      `mpijob_until=$((SECONDS + ${wait}))`,
      'until [ -d "$MPIJOB_SCRATCH" ]; do ' +
        `if [ "$SECONDS" -ge "$mpijob_until" ]; then echo "shared scratch: $MPIJOB_SCRATCH did not appear on mount ${s.mount} within ${wait} s" >&2; exit 1; fi; ` +
        'sleep 2; done',
    ];
  }
  return [
    scratchExport(s),
    'mpijob_master_ip="${AZ_BATCH_MASTER_NODE%%:*}"',
    `if [ "\${AZ_BATCH_IS_CURRENT_NODE_MASTER:-true}" = true ]; then ${onMaster.join('; ')}; else ${onOthers.join('; ')}; fi`,
    `echo "shared scratch (${s.kind}) ready at $MPIJOB_SCRATCH"`,
  ].join('; ');
}

/**
 * Job release step (every node, elevated): unmount, stop exporting and delete the job's scratch. Never fails (its
 * exit code is the container cleanup's), never deletes through a mount: only the owner node removes the data, and
 * only once its export is withdrawn.
 */
export function scratchTeardownScript(s: ScratchSpec): string {
  check(s);
  const marker = ownerMarker(s);
  const dir = scratchDirExpression(s);
  const lines = [`mpijob_scratch="${dir}"`];
  if (s.kind === 'masterNfs') {
    lines.push(
      'if mountpoint -q "$mpijob_scratch" 2>/dev/null; then umount -l "$mpijob_scratch" || echo "shared scratch: umount $mpijob_scratch failed" >&2; fi',
      `if [ -f "${marker}" ]; then while read -r mpijob_h; do if [ -n "$mpijob_h" ]; then exportfs -u "$mpijob_h:$mpijob_scratch" || true; fi; done < "${marker}"; rm -rf -- "$mpijob_scratch"; rm -f -- "${marker}"; echo "shared scratch removed"; elif [ -d "$mpijob_scratch" ] && ! mountpoint -q "$mpijob_scratch" 2>/dev/null; then rmdir -- "$mpijob_scratch" 2>/dev/null || true; fi`,
    );
  } else {
    lines.push(`if [ -f "${marker}" ]; then rm -rf -- "$mpijob_scratch"; rm -f -- "${marker}"; echo "shared scratch removed"; fi`);
  }
  return `{ ${lines.join('; ')}; } || true`;
}
