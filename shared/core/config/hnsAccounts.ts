/**
 * DATA_ACCOUNTS_HNS: the data accounts that have a hierarchical namespace (ADLS Gen2), comma-separated names, each
 * also in DATA_ACCOUNTS. For those the SAS a node gets for its outputs is a directory SAS on exactly the job's outputs
 * prefix (shared/adapters/storage/sas.ts directorySasUrl); Azure signs a directory SAS (`sr=d`) only on such accounts, so the
 * setting states a fact about the account, which the app cannot look up without a management-plane role.
 */
export function parseHnsAccounts(text: string | undefined, dataAccounts: readonly string[], problems: string[]): string[] {
  const out: string[] = [];
  (text ?? '').split(',').forEach((raw, index) => {
    const name = raw.trim();
    if (!name) return;
    const bad = (why: string) => problems.push(`DATA_ACCOUNTS_HNS: entry ${index + 1} ("${name}"): ${why}`);
    if (!/^[a-z0-9]{3,24}$/.test(name)) return bad('must be a storage account name (3-24 lowercase letters or digits)');
    if (!dataAccounts.includes(name)) return bad(`account "${name}" is not in DATA_ACCOUNTS`);
    if (out.includes(name)) return bad('is listed twice');
    out.push(name);
  });
  return out;
}
