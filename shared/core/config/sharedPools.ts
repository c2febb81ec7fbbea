/**
 * SHARED_POOLS: the Batch pools this deployment declares shared, and who may run jobs on them (pool.poolId).
 * Any other pool a job names must be the submitter's own (shared/core/intake/poolAccess.ts). Pure.
 *
 *   SHARED_POOLS=<pool id>[=<who>[|<who>…]][,…]
 *
 * `<who>` is `submitter` (callers with Jobs.Submit) or `queue` (messages on the job-submissions queue); without
 * `=<who>` both may. Admins may use any pool and need no entry. A pool id is exact: no wildcards, so a declaration
 * never covers pools created later by someone else (`hpc-<job id>`).
 */
import { POOL_ID_RE } from '../spec/patterns';

/** Who a shared pool may serve: HTTP callers with the submitter role, and the job-submissions queue. */
export const SHARED_POOL_USERS = ['submitter', 'queue'] as const;
export type SharedPoolUser = (typeof SHARED_POOL_USERS)[number];

export interface SharedPool {
  poolId: string;
  users: readonly SharedPoolUser[];
}

const isUser = (v: string): v is SharedPoolUser => (SHARED_POOL_USERS as readonly string[]).includes(v);

/** Parses SHARED_POOLS; each problem names the variable and the entry. */
export function parseSharedPools(text: string | undefined, problems: string[]): SharedPool[] {
  const out: SharedPool[] = [];
  if (!text?.trim()) return out;
  text.split(',').forEach((raw, index) => {
    const entry = raw.trim();
    const where = `SHARED_POOLS: entry ${index + 1}`;
    if (!entry) return void problems.push(`${where} is empty`);
    const [id, who, ...extra] = entry.split('=');
    const poolId = id.trim();
    if (extra.length) return void problems.push(`${where} ("${entry}") has more than one "="; write <pool id>=<who>|<who>`);
    if (!POOL_ID_RE.test(poolId)) return void problems.push(`${where}: "${poolId}" is not a Batch pool id (letters, digits, "_", "-", up to 64)`);
    if (out.some((p) => p.poolId.toLowerCase() === poolId.toLowerCase())) return void problems.push(`${where}: pool "${poolId}" is listed twice`);
    if (who === undefined) return void out.push({ poolId, users: [...SHARED_POOL_USERS] });
    const users = who.split('|').map((u) => u.trim());
    const bad = users.filter((u) => !isUser(u));
    if (bad.length)
      return void problems.push(`${where}: "${bad.join('", "')}" is not one of ${SHARED_POOL_USERS.join(', ')} (admins may use any pool and need no entry)`);
    out.push({ poolId, users: [...new Set(users as SharedPoolUser[])] });
  });
  return out;
}
