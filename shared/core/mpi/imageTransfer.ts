/**
 * The node side of image distribution (shared/core/planning/imageTree.ts): a seed pulls from the registry, every other
 * node copies the images from a peer over the cluster network, and both report the digest of every image they hold.
 *
 * Every node keeps the job's image state in `<node shared dir>/mpijob/images/<job>/`: `digests` (one line per
 * image, written atomically once the node holds and verified every image: the "ready" marker its peers wait for),
 * `failed` (its last attempt failed: peers waiting on it give up at once) and `serve.lock` (one copy served at a
 * time: the fan-out bound of the tree, taken on the serving node).
 *
 * A copy runs on the receiving node: `ssh <source>` waits there until the source is ready (or failed, or a deadline
 * passed), prints the source's digests, then streams the images under the source's serve lock — docker: `docker
 * save <ref> | docker load`, singularity: the SIF file — and the receiving node checks that what it now holds has
 * the digests the source recorded (and the job's pinned ones when known). A source that failed, cannot be reached or
 * timed out ends the task with exit code 75 (EX_TEMPFAIL) so the planner moves the node to another source; a wrong
 * digest or a broken stream is a failure of this copy (exit 1, with the message).
 *
 * On Azure the ssh runs between nodes of one pool with inter-node communication (same virtual network), as the
 * pool's admin user whose key pair Batch installs on every node (`userAccounts[].linuxUserConfiguration.
 * sshPrivateKey`): see docs/pipeline.md. `$AZ_BATCH_NODE_SHARED_DIR` is the same path on every Azure node; an ssh
 * session does not carry it, so the remote side falls back to this node's value.
 */
import { PlanningError } from '../planning/errors';
import { shellQuote } from './shellQuote';
import { sifPathExpr } from './singularity';

/** Exit code of a copy whose source failed, was unreachable or never got the image (EX_TEMPFAIL). */
export const SOURCE_LOST_EXIT = 75;
/** The stdout line a node task prints per image it holds: `mpijob-image-digest <index> <digest>`. */
export const DIGEST_LINE = 'mpijob-image-digest';
/** How long a copy waits for its source to hold the images (a seed may be throttled by the registry meanwhile). */
export const SOURCE_WAIT_SECONDS = 900;

const KEY = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const IP = /^[0-9A-Fa-f.:]{2,45}$/;
const DIGEST = /^sha256:[a-f0-9]{64}$/;

/** The images of a job as the node tools see them: docker references, or the job's SIF files by index. */
export type TransferImages = { runtime: 'docker'; refs: string[] } | { runtime: 'singularity'; count: number };

function checkKey(jobKey: string): void {
  if (!KEY.test(jobKey)) throw new PlanningError(`invalid image state key ${JSON.stringify(jobKey)}`, { jobKey });
}

/** The job's image state directory on this node (a shell word). */
export function imageStateDir(jobKey: string): string {
  checkKey(jobKey);
  return `"$AZ_BATCH_NODE_SHARED_DIR"/mpijob/images/${jobKey}`;
}

function imageCount(images: TransferImages): number {
  return images.runtime === 'docker' ? images.refs.length : images.count;
}

function checkExpected(images: TransferImages, expected: readonly string[] | undefined): void {
  if (expected === undefined) return;
  if (expected.length !== imageCount(images) || expected.some((d) => !DIGEST.test(d))) {
    throw new PlanningError('expected digests must be one sha256 digest per image', { expected });
  }
}

/** Lines that set `mpijob_g<i>` to the digest of image i as this node holds it. */
function digestLines(images: TransferImages, jobKey: string): string[] {
  if (images.runtime === 'docker') return images.refs.map((ref, i) => `mpijob_g${i}=$(docker image inspect --format '{{.Id}}' ${shellQuote(ref)})`);
  return Array.from({ length: images.count }, (_, i) => `mpijob_g${i}=sha256:$(sha256sum ${sifPathExpr(jobKey, i)} | cut -d' ' -f1)`);
}

function label(images: TransferImages, i: number): string {
  return images.runtime === 'docker' ? images.refs[i] : `SIF ${i}`;
}

/** Fails the task when image i does not have the pinned digest. */
function pinnedChecks(images: TransferImages, expected: readonly string[] | undefined, from: string): string[] {
  return (expected ?? []).map(
    (d, i) =>
      `if [ "$mpijob_g${i}" != ${d} ]; then echo ${shellQuote(`[mpijob] image ${label(images, i)}: digest mismatch after getting it from ${from}: expected ${d}, got`)} "$mpijob_g${i}" >&2; exit 1; fi`,
  );
}

/** Records the digests (the ready marker) and prints them for the orchestrator. */
function recordLines(images: TransferImages): string[] {
  const n = imageCount(images);
  const values = Array.from({ length: n }, (_, i) => `"$mpijob_g${i}"`).join(' ');
  return [
    `printf '%s\\n' ${values} > "$mpijob_d/digests.tmp.$$"`,
    'mv -f "$mpijob_d/digests.tmp.$$" "$mpijob_d/digests"',
    ...Array.from({ length: n }, (_, i) => `echo ${DIGEST_LINE} ${i} "$mpijob_g${i}"`),
  ];
}

/** The state directory, a clean start, and the failed marker written when the task fails. */
function preamble(jobKey: string): string[] {
  return [
    `mpijob_d=${imageStateDir(jobKey)}`,
    'mkdir -p "$mpijob_d"',
    'rm -f "$mpijob_d/failed"',
    // Held while this node gets the images: peers waiting on it block on the lock instead of polling.
    'exec 9>"$mpijob_d/pulling.lock"',
    'flock -w 60 9 || true',
    `trap 'mpijob_rc=$?; if [ "$mpijob_rc" -ne 0 ]; then : > "$mpijob_d/failed"; fi' EXIT`,
  ];
}

/**
 * A seed: the registry pull (`pullLines`, the existing per-image pull lines), then the digests of what the node
 * holds, checked against the pinned ones when known, recorded and printed.
 */
export function seedScriptLines(jobKey: string, images: TransferImages, pullLines: readonly string[], expected?: readonly string[]): string[] {
  checkExpected(images, expected);
  return [...preamble(jobKey), ...pullLines, ...digestLines(images, jobKey), ...pinnedChecks(images, expected, 'the registry'), ...recordLines(images)];
}

export interface PeerCopyInput {
  jobKey: string;
  images: TransferImages;
  source: { nodeId: string; ipAddress: string };
  expected?: readonly string[];
  waitSeconds?: number;
  /** Copies the source serves before this one (imageTree's TransferWork.turn); default 0. */
  turn?: number;
}

/** How long a copy waits for its turn on the source before it takes the lock anyway (an earlier copy never came). */
export const TURN_WAIT_SECONDS = 30;

/**
 * Remote shell code that serves `what` (a command writing the image to stdout) in turn: it waits until the source
 * served `turn` copies of image `index` (or TURN_WAIT_SECONDS passed), then runs it under the serve lock and counts it.
 */
function turnWait(index: number, turn: number): string {
  return `t=${turn}; n=0; while [ "$(cat "$d/served.${index}" 2>/dev/null || echo 0)" -lt "$t" ] && [ "$n" -lt ${TURN_WAIT_SECONDS * 5} ]; do n=$((n+1)); sleep 0.2; done`;
}

function serveLocked(index: number, wait: number, what: string): string {
  return `flock -w ${wait} "$d/serve.lock" sh -c ${shellQuote(`${what}; rc=$?; echo $(( $(cat "$1/served.${index}" 2>/dev/null || echo 0) + 1 )) > "$1/served.${index}"; exit $rc`)} sh "$d" "$s"`;
}

/**
 * A copy from a peer, run on the receiving node. The remote side (the source) waits for its `digests` file, then
 * serves one image at a time under its serve lock.
 */
export function peerCopyScriptLines(input: PeerCopyInput): string[] {
  const { jobKey, images, source } = input;
  checkKey(jobKey);
  checkExpected(images, input.expected);
  if (!IP.test(source.ipAddress)) throw new PlanningError('source node address is not an IP address', { ipAddress: source.ipAddress });
  const wait = input.waitSeconds ?? SOURCE_WAIT_SECONDS;
  const turn = input.turn ?? 0;
  if (!Number.isSafeInteger(turn) || turn < 0) throw new PlanningError('turn must be a whole number ≥ 0', { turn });
  if (!Number.isSafeInteger(wait) || wait < 1) throw new PlanningError('waitSeconds must be a positive whole number', { waitSeconds: wait });
  const from = `node ${source.nodeId} (${source.ipAddress})`;
  // Remote shell code: `s` (the node's shared dir) and `d` (its state dir for the job) are set by the prefix below.
  // While the source runs its own transfer it holds pulling.lock: block on it instead of polling; poll (0.5 s) only
  // before its task has started. Then wait for this copy's turn and print the digests the source recorded. Only then
  // does the image stream start (a second connection): the receiving side's `docker load` is not started while the
  // node waits, which on 100 nodes would be 90 processes started at once beside the seeds' pulls.
  const remoteWait =
    'n=0; while [ ! -s "$d/digests" ]; do ' +
    'if [ -e "$d/failed" ]; then echo "it failed to get the images" >&2; exit 3; fi; ' +
    `if [ -e "$d/pulling.lock" ] && ! flock -n -s "$d/pulling.lock" true; then flock -s -w ${wait} "$d/pulling.lock" true || { echo "it did not hold the images after ${wait} s" >&2; exit 3; }; continue; fi; ` +
    `n=$((n+1)); if [ "$n" -gt ${wait * 2} ]; then echo "it did not hold the images after ${wait} s" >&2; exit 3; fi; ` +
    `sleep 0.5; done; ${turnWait(0, turn)}; cat "$d/digests"`;
  const lines = [
    ...preamble(jobKey),
    // The remote prefix: the shared dir as the source's shell sees it (the same path on every Azure node).
    `mpijob_rs='s="${'$'}{AZ_BATCH_NODE_SHARED_DIR:-'"$AZ_BATCH_NODE_SHARED_DIR"'}"; d="$s/mpijob/images/${jobKey}"; '`,
    `mpijob_ssh() { ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o ConnectTimeout=20 ${shellQuote(source.ipAddress)} "$mpijob_rs$1" 2>>"$mpijob_err"; }`,
    `mpijob_lost() { cat "$mpijob_err" >&2; echo ${shellQuote(`[mpijob] source ${from}:`)} "$1" >&2; exit ${SOURCE_LOST_EXIT}; }`,
    // The source's side of the conversation (its errors), in the task's directory.
    'mpijob_err="$PWD/mpijob-copy-stderr.txt"; : > "$mpijob_err"',
    `mpijob_want=$(mpijob_ssh ${shellQuote(remoteWait)}) || mpijob_lost "has not got the images (failed, unreachable or timed out)"`,
  ];
  const n = imageCount(images);
  // How the copy of image i ends when the source's side failed: 3 is the remote wait's "no images there".
  const lostLine = (what: string, status: string) =>
    `if [ "${status}" -eq 3 ]; then mpijob_lost "has not got the images (failed, unreachable or timed out)"; fi; mpijob_lost ${shellQuote(`stopped serving ${what}`)}" (exit ${status})"`;
  for (let i = 0; i < n; i++) lines.push(`mpijob_w${i}=$(printf '%s\\n' "$mpijob_want" | sed -n ${i + 1}p)`);
  for (let i = 0; i < n; i++) {
    // Image 0's turn was waited for before the digests; the others wait for theirs on the source.
    const prefix = i === 0 ? '' : `${turnWait(i, turn)}; `;
    if (images.runtime === 'docker') {
      const ref = images.refs[i];
      const remote = shellQuote(prefix + serveLocked(i, wait, `docker save ${shellQuote(ref)}`));
      lines.push(
        `mpijob_ssh ${remote} | docker load -q >/dev/null || { mpijob_st=("${'$'}{PIPESTATUS[@]}"); ` +
          `if [ "${'$'}{mpijob_st[0]}" -ne 0 ]; then ${lostLine(ref, `${'$'}{mpijob_st[0]}`)}; fi; ` +
          `echo ${shellQuote(`[mpijob] image ${ref}: the copy from ${from} did not load:`)} "docker load exit ${'$'}{mpijob_st[1]}" >&2; exit 1; }`,
      );
    } else {
      const sif = sifPathExpr(jobKey, i);
      const remote = shellQuote(prefix + serveLocked(i, wait, `cat "$2/mpijob/sif/${jobKey}/${i}.sif"`));
      lines.push(
        `mkdir -p "$(dirname ${sif})"`,
        `mpijob_tmp=${sif}.tmp.$$`,
        `mpijob_ssh ${remote} > "$mpijob_tmp" || { mpijob_st=$?; rm -f "$mpijob_tmp"; ${lostLine(`SIF ${i}`, '$mpijob_st')}; }`,
        `mpijob_got=sha256:$(sha256sum "$mpijob_tmp" | cut -d' ' -f1)`,
        `if [ "$mpijob_got" != "$mpijob_w${i}" ]; then rm -f "$mpijob_tmp"; echo ${shellQuote(`[mpijob] image SIF ${i}: digest mismatch after the copy from ${from}: the source holds`)} "$mpijob_w${i}, got $mpijob_got" >&2; exit 1; fi`,
        'singularity inspect "$mpijob_tmp" >/dev/null',
        `mv -f "$mpijob_tmp" ${sif}`,
      );
    }
  }
  lines.push(...digestLines(images, jobKey));
  for (let i = 0; i < n; i++) {
    lines.push(
      `if [ "$mpijob_g${i}" != "$mpijob_w${i}" ]; then echo ${shellQuote(`[mpijob] image ${label(images, i)}: digest mismatch after the copy from ${from}: the source holds`)} "$mpijob_w${i}, got $mpijob_g${i}" >&2; exit 1; fi`,
    );
  }
  lines.push(...pinnedChecks(images, input.expected, from), ...recordLines(images));
  return lines;
}

/** Digests per image index from a node task's stdout (the DIGEST_LINE lines; the last one per index wins). */
export function parseDigestLines(stdout: string, count: number): string[] | undefined {
  const out: (string | undefined)[] = new Array<string | undefined>(count).fill(undefined);
  for (const line of stdout.split('\n')) {
    const m = /^mpijob-image-digest (\d+) (sha256:[a-f0-9]{64})\s*$/.exec(line);
    if (m && Number(m[1]) < count) out[Number(m[1])] = m[2];
  }
  return out.every((d): d is string => d !== undefined) ? out : undefined;
}
