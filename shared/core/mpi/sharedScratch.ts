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
 * beeond (Batch Shipyard's per_job_auto_scratch): a BeeGFS on demand striped over the local disks of all the job's
 * nodes. The master writes the job's node file (one host per line, from AZ_BATCH_HOST_LIST) and runs
 * `beeond start -n <nodefile> -d <local data dir> -c <mount point>`: BeeOND itself starts the storage and metadata
 * services on every listed node over ssh and mounts the file system at the same mount point on each; the other nodes
 * wait until it is mounted. The job release task on the master runs `beeond stop` (unmounts everywhere, deletes the
 * data). The BeeOND packages are checked or installed by the pool's start task (nodeFilesystems.ts).
 *
 * path (optional, e.g. /scratch): after the scratch is ready, every node bind-mounts it at that fixed path (as the
 * start task does for mounts[].path) and $MPIJOB_SCRATCH names the fixed path; the release task unmounts it first.
 *
 * Every value embedded is checked here (job ids and mount names are single safe words), so the code needs no
 * quoting beyond what it writes.
 */
import { PlanningError } from '../planning/errors';
import { FIXED_PATH_RE, fixedPathProblem } from '../spec/sections/storageFields';

export type ScratchKind = 'masterNfs' | 'mount' | 'beeond';
export const SCRATCH_KINDS: readonly ScratchKind[] = ['masterNfs', 'mount', 'beeond'];

export interface ScratchSpec {
  kind: ScratchKind;
  /** The control-plane job id: names the directory. */
  jobId: string;
  /** kind "mount": the pool mount holding the directory (its relativeMountPath). */
  mount?: string;
  /** A fixed path (validated by the spec: FIXED_PATH_RE and its deny-list) where every node also sees the scratch. */
  path?: string;
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
  if (s.path !== undefined && (!FIXED_PATH_RE.test(s.path) || fixedPathProblem(s.path))) {
    throw new PlanningError(`invalid fixed path for the scratch: ${JSON.stringify(s.path)}`, { path: s.path });
  }
  if (!SCRATCH_KINDS.includes(s.kind)) throw new PlanningError(`unknown scratch kind ${JSON.stringify(s.kind)}`, { kind: s.kind });
  const wait = s.waitSeconds ?? 300;
  if (!Number.isSafeInteger(wait) || wait < 1) throw new PlanningError(`waitSeconds must be a positive whole number, got ${wait}`, { waitSeconds: wait });
}

/** The scratch directory as a shell expression, without quotes (node variables expand on the node that runs it). */
export function scratchDirExpression(s: ScratchSpec): string {
  check(s);
  return s.kind === 'mount' ? `$AZ_BATCH_NODE_MOUNTS_DIR/${s.mount}/scratch/${s.jobId}` : `$AZ_BATCH_NODE_SHARED_DIR/scratch/${s.jobId}`;
}

/**
 * `export MPIJOB_SCRATCH="…"`: prepended to the ranks' command and the pre-execution command. A rank that a launcher
 * started over ssh on another Azure node has no AZ_BATCH_* variables (they exist only in the task's own context), but
 * it works in the master's working directory, whose path is the same on every node of the pool
 * (`<node root>/workitems/<job>/job-1/<task>/wd`): the node root is taken from there when the variable is missing.
 */
export function scratchExport(s: ScratchSpec): string {
  check(s);
  // A fixed path is the same on every node and needs no node variable.
  if (s.path) return `export ${SCRATCH_ENV}=${s.path}`;
  return nodeScratchExport(s);
}

/** The export of the scratch's place under the node's directories (what the setup and release steps work on). */
function nodeScratchExport(s: ScratchSpec): string {
  const base = s.kind === 'mount' ? '${AZ_BATCH_NODE_MOUNTS_DIR:-${PWD%%/workitems/*}/fsmounts}' : '${AZ_BATCH_NODE_SHARED_DIR:-${PWD%%/workitems/*}/shared}';
  const rest = s.kind === 'mount' ? `${s.mount}/scratch/${s.jobId}` : `scratch/${s.jobId}`;
  return `export ${SCRATCH_ENV}="${base}/${rest}"`;
}

/** beeond: the job's node file (one host per line) and the BeeOND data directory on the node's local disk. */
function beeondFiles(s: ScratchSpec): { nodefile: string; data: string; status: string } {
  return {
    nodefile: `$AZ_BATCH_NODE_SHARED_DIR/scratch/${s.jobId}.nodes`,
    data: `$AZ_BATCH_NODE_SHARED_DIR/beeond/${s.jobId}`,
    status: `$AZ_BATCH_NODE_SHARED_DIR/scratch/${s.jobId}.beeond`,
  };
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
  } else if (s.kind === 'beeond') {
    const f = beeondFiles(s);
    // beeond start as Batch Shipyard ran it: services on every node of the node file (over ssh), the file system
    // mounted at the same mount point on each (beeond creates it where missing).
    onMaster.splice(
      0,
      onMaster.length,
      'mkdir -p "$AZ_BATCH_NODE_SHARED_DIR/scratch"',
      `printf '%s\\n' \${AZ_BATCH_HOST_LIST//,/ } > "${f.nodefile}"`,
      'mkdir -p "$MPIJOB_SCRATCH"',
      `mkdir -p "${f.data}"`,
      // Idempotent: the preflight check and a retried task run this step again on the same nodes while BeeOND runs
      // (beeond refuses a second start over a running instance).
      `if [ -f "${f.status}" ] && mountpoint -q "$MPIJOB_SCRATCH"; then echo "shared scratch (beeond): already running" >&2; ` +
        `else beeond start -n "${f.nodefile}" -d "${f.data}" -c "$MPIJOB_SCRATCH" -i "${f.status}" >&2 || { echo "shared scratch (beeond): beeond start over $AZ_BATCH_HOST_LIST failed" >&2; exit 1; }; fi`,
      'chmod 1777 "$MPIJOB_SCRATCH"',
      `: > "${marker}"`,
    );
    onOthers = [
      'mkdir -p "$MPIJOB_SCRATCH"',
      `mpijob_until=$((SECONDS + ${wait}))`,
      'until mountpoint -q "$MPIJOB_SCRATCH"; do ' +
        `if [ "$SECONDS" -ge "$mpijob_until" ]; then echo "shared scratch (beeond): the master's beeond start did not mount $MPIJOB_SCRATCH on this node within ${wait} s" >&2; exit 1; fi; ` +
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
  // A fixed path: a bind mount of this job's scratch (whatever an earlier job or attempt left there is unmounted
  // first: a bind to another job's scratch must not survive), then the variable names it.
  const fixed = s.path
    ? [`mkdir -p ${s.path}`, `if mountpoint -q ${s.path}; then umount -l ${s.path}; fi`, `mount --bind "$MPIJOB_SCRATCH" ${s.path}`, scratchExport(s)]
    : [];
  return [
    nodeScratchExport(s),
    'mpijob_master_ip="${AZ_BATCH_MASTER_NODE%%:*}"',
    `if [ "\${AZ_BATCH_IS_CURRENT_NODE_MASTER:-true}" = true ]; then ${onMaster.join('; ')}; else ${onOthers.join('; ')}; fi`,
    ...fixed,
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
  if (s.path) lines.push(`if mountpoint -q ${s.path} 2>/dev/null; then umount -l ${s.path} || echo "shared scratch: umount ${s.path} failed" >&2; fi`);
  if (s.kind === 'beeond') {
    const f = beeondFiles(s);
    // Only the master (the owner) stops BeeOND: beeond stop unmounts on every node of the node file and deletes the
    // data (-d) and logs (-L). Another node's release task may run first and finds the file system still mounted: fine.
    lines.push(
      `if [ -f "${marker}" ]; then beeond stop -n "${f.nodefile}" -L -d -i "${f.status}" >&2 || echo "shared scratch (beeond): beeond stop failed" >&2; ` +
        `rm -rf -- "${f.data}"; rm -f -- "${marker}" "${f.nodefile}" "${f.status}"; rmdir -- "$mpijob_scratch" 2>/dev/null || true; echo "shared scratch (beeond) stopped"; fi`,
    );
  } else if (s.kind === 'masterNfs') {
    lines.push(
      'if mountpoint -q "$mpijob_scratch" 2>/dev/null; then umount -l "$mpijob_scratch" || echo "shared scratch: umount $mpijob_scratch failed" >&2; fi',
      `if [ -f "${marker}" ]; then while read -r mpijob_h; do if [ -n "$mpijob_h" ]; then exportfs -u "$mpijob_h:$mpijob_scratch" || true; fi; done < "${marker}"; rm -rf -- "$mpijob_scratch"; rm -f -- "${marker}"; echo "shared scratch removed"; elif [ -d "$mpijob_scratch" ] && ! mountpoint -q "$mpijob_scratch" 2>/dev/null; then rmdir -- "$mpijob_scratch" 2>/dev/null || true; fi`,
    );
  } else {
    lines.push(`if [ -f "${marker}" ]; then rm -rf -- "$mpijob_scratch"; rm -f -- "${marker}"; echo "shared scratch removed"; fi`);
  }
  return `{ ${lines.join('; ')}; } || true`;
}
