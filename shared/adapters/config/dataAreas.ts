/**
 * SHARED_DATA_AREAS: the areas of the data accounts a deployment opens to more than one owner (reference data,
 * software, a team's results), beside every owner's own area `users/<ownerKey>/` (shared/adapters/auth/dataArea.ts).
 *
 *   SHARED_DATA_AREAS = entry[,entry…]
 *   entry             = <account>/<container>/<prefix>[|read|write][|<app role>[+<app role>…] | *]
 *
 * - `<prefix>` is "" (the whole container) or ends in "/"; it may not lie under `users/` (owners' areas are never
 *   shared by configuration) and the account must be in DATA_ACCOUNTS.
 * - mode: `read` (the default) or `write` (read and write: jobs may upload their outputs there).
 * - who: the app role values (Jobs.Read, Jobs.Submit, Jobs.Admin) whose holders may use it, joined by "+", or "*"
 *   (the default) for every caller. The project does not read the token's `groups` claim: grant groups an app role.
 */
import type { Role } from '../../core/config/auth';
import { APP_ROLES as APP_ROLES_BY_VALUE } from '../auth/roles';

export interface SharedDataArea {
  account: string;
  container: string;
  /** "" or a prefix ending in "/". */
  prefix: string;
  /** Whether jobs may write there (outputs); reading is always allowed to those who may use it. */
  write: boolean;
  /** Roles whose holders may use it; "*" for every caller. */
  roles: readonly Role[] | '*';
}

const ENTRY = /^([a-z0-9]{3,24})\/([a-z0-9](?:[a-z0-9]|-(?!-)){1,61}[a-z0-9])\/([A-Za-z0-9._/=+@,-]{0,1024})$/;

export function parseSharedDataAreas(text: string | undefined, dataAccounts: readonly string[], problems: string[]): SharedDataArea[] {
  const out: SharedDataArea[] = [];
  (text ?? '').split(',').forEach((raw, index) => {
    const entry = raw.trim();
    if (!entry) return;
    const bad = (why: string) => problems.push(`SHARED_DATA_AREAS: entry ${index + 1} ("${entry}"): ${why}`);
    const [where, mode = 'read', who = '*', ...extra] = entry.split('|').map((s) => s.trim());
    if (extra.length) return bad('has more than three "|"-separated fields (account/container/prefix|mode|roles)');
    const m = ENTRY.exec(where);
    if (!m)
      return bad('must start with "<account>/<container>/<prefix>" (a storage account name, a container name, a blob prefix that is empty or ends in "/")');
    const [, account, container, prefix] = m;
    if (prefix !== '' && !prefix.endsWith('/')) return bad(`the prefix "${prefix}" must be empty (the whole container) or end in "/"`);
    if (/(?:^|\/)\.\.?(?:\/|$)/.test(prefix) || prefix.startsWith('/') || prefix.includes('//'))
      return bad(`the prefix "${prefix}" must not have empty, "." or ".." segments`);
    if (prefix.startsWith('users/')) return bad('a shared area may not lie under "users/": that is where every owner\'s own area is');
    if (!dataAccounts.includes(account)) return bad(`account "${account}" is not in DATA_ACCOUNTS`);
    if (mode !== 'read' && mode !== 'write') return bad(`the mode must be "read" or "write", got "${mode}"`);
    let roles: Role[] | '*' = '*';
    if (who !== '*') {
      roles = [];
      for (const value of who.split('+').map((s) => s.trim())) {
        const role = Object.prototype.hasOwnProperty.call(APP_ROLES_BY_VALUE, value) ? APP_ROLES_BY_VALUE[value] : undefined;
        if (!role) return bad(`"${value}" is not an app role of the API (${Object.keys(APP_ROLES_BY_VALUE).join(', ')}) or "*"`);
        if (!roles.includes(role)) roles.push(role);
      }
    }
    if (out.some((a) => a.account === account && a.container === container && a.prefix === prefix)) return bad('names an area listed before');
    out.push({ account, container, prefix, write: mode === 'write', roles });
  });
  return out;
}
