/**
 * Outputs by default on an imported spec. Shipyard's tasks left their whole task directory (stdout.txt, stderr.txt,
 * the working directory's results) on the node, readable until the pool went away; a job of ours deletes its pool,
 * and without an outputs section only the last lines of stdout survive (mpiBench prints 43). So a spec whose job has
 * no output_data gets one: the working directory's files and every rank's full logs, uploaded always.
 *
 * The destination: the one the user gives (`--outputs account/container`), else Shipyard's own storage account (the
 * config.yaml alias, taken as the account name when no credentials.yaml names it) with the container
 * DEFAULT_OUTPUTS_CONTAINER; either must be one the deployment's data policy allows (DATA_ACCOUNTS, DATA_CONTAINERS),
 * which the header says. With no account at all the spec keeps its full logs in the deployment's default outputs
 * location (cleanup.keepLogs) and the header says how to keep the results. Pure.
 */
import * as P from '../../../shared/core/spec/patterns';
import { addComment, isObj, type SpecDraft } from './context';

export const DEFAULT_OUTPUTS_CONTAINER = 'shipyard-outputs';

export interface OutputsDestination {
  account: string;
  container: string;
  /** Given by the user (true) or assumed from Shipyard's storage alias (false). */
  given: boolean;
}

/** "account/container" → a destination, or an error in words. */
export function parseOutputsOption(text: string): OutputsDestination | { error: string } {
  const [account, container, ...rest] = text.split('/');
  if (rest.length || !account || !container) return { error: `must be "account/container", got ${JSON.stringify(text)}` };
  if (!P.STORAGE_ACCOUNT_RE.test(account)) return { error: `account ${JSON.stringify(account)}: 3–24 lowercase letters and digits` };
  if (!P.BLOB_CONTAINER_RE.test(container)) return { error: `container ${JSON.stringify(container)}: 3–63 lowercase letters, digits and single hyphens` };
  return { account, container, given: true };
}

/** Adds the outputs section (or keepLogs) to a draft without one; returns the header lines. */
export function applyDefaultOutputs(d: SpecDraft, dest: OutputsDestination | undefined): string[] {
  if (isObj(d.spec.outputs)) return [];
  if (!dest) {
    const cleanup = isObj(d.spec.cleanup) ? d.spec.cleanup : (d.spec.cleanup = {});
    cleanup.keepLogs = true;
    addComment(
      d,
      'cleanup.keepLogs',
      "added by the import: every task's full stdout/stderr is kept in the deployment's default outputs location (DEFAULT_OUTPUTS)",
    );
    return [
      "TODO: the working directory's results are not kept (no storage account is known): add an outputs section, or import with --outputs account/container; the full logs are kept where the deployment sets DEFAULT_OUTPUTS (cleanup.keepLogs)",
    ];
  }
  d.spec.outputs = { account: dest.account, container: dest.container, when: 'always', files: [{ pattern: '**/*', from: 'workdir' }], logs: true };
  addComment(
    d,
    'outputs',
    `added by the import (Shipyard left the task directory on the node until the pool went away): the working directory's files and every rank's full stdout/stderr, uploaded whether the job succeeds or fails${dest.given ? '' : `; ${dest.account} is Shipyard's storage account alias and ${dest.container} a default container name`}`,
  );
  return [
    dest.given
      ? `CHANGED: outputs added: the working directory's files and the full logs go to ${dest.account}/${dest.container}`
      : `CHANGED: outputs added: the working directory's files and the full logs go to ${dest.account}/${dest.container} (Shipyard's storage account alias and a default container: both must be ones the deployment allows, DATA_ACCOUNTS and DATA_CONTAINERS; change them here or import with --outputs account/container)`,
  ];
}
