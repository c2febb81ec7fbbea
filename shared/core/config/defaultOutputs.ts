/**
 * DEFAULT_OUTPUTS: where a job without an `outputs` section keeps the full stdout/stderr of every task (issue 27,
 * item 5), as `account/container`; intake puts the logs under the owner's area there (shared/adapters/intake/dataAreas.ts
 * withIntakeDefaults). Every deployment with a data account keeps them by default: unset, the place is derived from
 * what the deployment already lets jobs use, so nobody has to opt in to keeping their logs:
 *
 *   - the account: the first DATA_ACCOUNTS entry (the first of DATA_ACCOUNTS_HNS when OUTPUTS_REQUIRE_SCOPED_SAS,
 *     since outputs on a flat account are refused there);
 *   - the container: `results` (what the examples write their outputs to) when DATA_CONTAINERS allows it, else the
 *     first container DATA_CONTAINERS names for that account by its full name.
 *
 * `DEFAULT_OUTPUTS=none` turns it off for the deployment (a job keeps only the last lines in the job view); a spec
 * opts out with `cleanup.keepLogs: false`. A deployment without data accounts has nowhere to put them: nothing kept.
 * A narrowing DATA_CONTAINERS that allows no container by name is a configuration problem rather than a silent "no
 * logs": the operator names the place or says none.
 */

/** The container the derived default uses when the deployment allows it. */
export const DEFAULT_OUTPUTS_CONTAINER = 'results';

/** The value that turns default outputs off. */
export const DEFAULT_OUTPUTS_OFF = 'none';

export interface DefaultOutputsInput {
  /** DATA_ACCOUNTS' account names, in order. */
  accounts: readonly string[];
  /** DATA_CONTAINERS, when it narrows (container may end in `*`). */
  containers?: readonly { account: string; container: string }[];
  hnsAccounts?: readonly string[];
  outputsRequireScopedSas?: boolean;
}

const allows = (d: DefaultOutputsInput, account: string, container: string) =>
  !d.containers ||
  d.containers.some(
    (c) => c.account === account && (c.container === container || (c.container.endsWith('*') && container.startsWith(c.container.slice(0, -1)))),
  );

/** The DEFAULT_OUTPUTS place: as set, derived when unset, undefined when "none" or there is no data account. */
export function parseDefaultOutputs(text: string | undefined, d: DefaultOutputsInput, problems: string[]): { account: string; container: string } | undefined {
  if (text === DEFAULT_OUTPUTS_OFF) return undefined;
  if (!text) return deriveDefaultOutputs(d, problems);
  const m = /^([a-z0-9]{3,24})\/([a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62})$/.exec(text);
  if (!m) {
    problems.push(`DEFAULT_OUTPUTS: must be "account/container" or "${DEFAULT_OUTPUTS_OFF}", got "${text}"`);
    return undefined;
  }
  const [, account, container] = m;
  if (!d.accounts.includes(account)) problems.push(`DEFAULT_OUTPUTS: account "${account}" is not in DATA_ACCOUNTS`);
  else if (!allows(d, account, container)) problems.push(`DEFAULT_OUTPUTS: container "${account}/${container}" is not one DATA_CONTAINERS allows`);
  // Outputs on a flat account are refused at intake there: the logs of every job would be too.
  else if (d.outputsRequireScopedSas && !(d.hnsAccounts ?? []).includes(account))
    problems.push(
      `DEFAULT_OUTPUTS: account "${account}" is not in DATA_ACCOUNTS_HNS, and OUTPUTS_REQUIRE_SCOPED_SAS refuses outputs there; name an HNS account or DEFAULT_OUTPUTS=${DEFAULT_OUTPUTS_OFF}`,
    );
  else return { account, container };
  return undefined;
}

function deriveDefaultOutputs(d: DefaultOutputsInput, problems: string[]): { account: string; container: string } | undefined {
  const candidates = d.outputsRequireScopedSas ? d.accounts.filter((a) => (d.hnsAccounts ?? []).includes(a)) : d.accounts;
  const account = candidates[0];
  if (account === undefined) {
    // Scoped SAS required but no HNS account: any outputs are refused at intake, so there is no place to derive.
    if (d.accounts.length)
      problems.push(
        `DEFAULT_OUTPUTS: unset, and OUTPUTS_REQUIRE_SCOPED_SAS leaves no data account for jobs' logs (none is in DATA_ACCOUNTS_HNS); set DEFAULT_OUTPUTS=account/container or DEFAULT_OUTPUTS=${DEFAULT_OUTPUTS_OFF}`,
      );
    return undefined;
  }
  if (allows(d, account, DEFAULT_OUTPUTS_CONTAINER)) return { account, container: DEFAULT_OUTPUTS_CONTAINER };
  const named = (d.containers ?? []).find((c) => c.account === account && !c.container.endsWith('*'));
  if (named) return { account, container: named.container };
  problems.push(
    `DEFAULT_OUTPUTS: unset, and DATA_CONTAINERS allows no container of "${account}" by name to keep jobs' logs in; set DEFAULT_OUTPUTS=account/container or DEFAULT_OUTPUTS=${DEFAULT_OUTPUTS_OFF}`,
  );
  return undefined;
}
