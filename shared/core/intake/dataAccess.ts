/**
 * Which storage a job may name: the least-privilege rule behind every input, start-task file and (later) output.
 * The app's managed identity can read its own host storage and every job's staged shards; a job spec must never be
 * able to point it there (a confused deputy). Checked at the door (intake answers 400 with the field path) and again
 * by the activities that touch the data, since an orchestration can be started by anyone holding the system key.
 */
import type { AppConfig, SharedDataArea } from '../../adapters/config';
import type { JobSpec, SpecError } from '../spec';
import { checkWorkloadDataAccess } from './workloadDataAccess';

export interface DataAccessPolicy {
  /** Accounts jobs may name for their data. */
  accounts: readonly string[];
  /** When set, only these containers ("name", or "prefix*"). */
  containers?: readonly { account: string; container: string }[];
  /** The deployment's staging accounts: the only ones `data.stagingAccounts` may list. */
  stagingAccounts: readonly string[];
  /** The app's own accounts (host storage and staging): never reachable through a job, not even by URL. */
  ownAccounts?: readonly string[];
  /** File servers jobs may mount (DATA_MOUNT_SOURCES), exact or "prefix*". */
  mountSources?: readonly string[];
  /** The mount secrets the deployment publishes (MOUNT_SECRET_<name>), by name; unset: not checked at intake. */
  mountSecretNames?: readonly string[];
  /** Internal hosts jobs may name anyway (ALLOWED_INTERNAL_HOSTS; shared/core/intake/addressPolicy.ts). */
  allowedInternalHosts?: readonly string[];
  /** Areas open to more than one owner (SHARED_DATA_AREAS); unset: none, only each owner's own (dataAreas.ts). */
  sharedAreas?: readonly SharedDataArea[];
  /** Data accounts with a hierarchical namespace (DATA_ACCOUNTS_HNS): a node's outputs SAS there is a directory SAS. */
  hnsAccounts?: readonly string[];
  /** Whether outputs must go to one of hnsAccounts (OUTPUTS_REQUIRE_SCOPED_SAS). */
  outputsRequireScopedSas?: boolean;
  /** The wall clock intake gives a job without limits.maxWallClock (minutes); unset: none is added. */
  defaultMaxWallClockMinutes?: number;
  /** Where a job without outputs keeps its full logs (DEFAULT_OUTPUTS); unset: nowhere. */
  defaultOutputs?: { account: string; container: string };
}

/** Containers the pipeline stages shards into (shared/core/planning/jobPlan.ts stagingContainerFor): never a job's to name. */
const STAGING_CONTAINER_PREFIX = 'stg-';

export function dataAccessPolicy(config: AppConfig): DataAccessPolicy {
  return {
    accounts: config.dataAccess.accounts.map((a) => a.accountName),
    containers: config.dataAccess.containers,
    stagingAccounts: config.stagingAccounts.map((a) => a.accountName),
    ownAccounts: [config.hostStorage.accountName, ...config.stagingAccounts.map((a) => a.accountName)],
    mountSources: config.dataAccess.mountSources,
    mountSecretNames: Object.keys(config.mountSecrets),
    allowedInternalHosts: config.dataAccess.allowedInternalHosts ?? [],
    sharedAreas: config.dataAccess.sharedAreas,
    hnsAccounts: config.dataAccess.hnsAccounts ?? [],
    outputsRequireScopedSas: config.dataAccess.outputsRequireScopedSas ?? false,
    defaultMaxWallClockMinutes: config.pipeline.defaultMaxWallClockMinutes,
    ...(config.dataAccess.defaultOutputs ? { defaultOutputs: config.dataAccess.defaultOutputs } : {}),
  };
}

/** Why a job may not use this container, or undefined when it may. */
export function dataAccessRefusal(policy: DataAccessPolicy, account: string, container: string): string | undefined {
  if (!policy.accounts.includes(account)) {
    return policy.accounts.length
      ? `account "${account}" is not one jobs may use on this deployment (allowed: ${policy.accounts.join(', ')})`
      : `account "${account}" is not allowed: this deployment lets jobs use no storage account for their data (DATA_ACCOUNTS is empty)`;
  }
  if (container.startsWith(STAGING_CONTAINER_PREFIX)) return `container "${container}" is a staging container of the pipeline; jobs cannot name it`;
  if (policy.containers && !policy.containers.some((c) => c.account === account && matches(c.container, container))) {
    const allowed = policy.containers.filter((c) => c.account === account).map((c) => c.container);
    return `container "${container}" of account "${account}" is not one jobs may use (allowed: ${allowed.join(', ') || 'none'})`;
  }
  return undefined;
}

/**
 * The SAS a node gets for outputs to `account`: a directory SAS on the job's outputs prefix on an HNS account, a
 * container SAS on a flat one (the only SAS Azure signs there that lets Batch upload names not known in advance),
 * or a refusal when the deployment requires the narrow one (OUTPUTS_REQUIRE_SCOPED_SAS) and the account is flat.
 */
export function outputsSasScope(policy: DataAccessPolicy, account: string): { scope: 'directory' | 'container' } | { refusal: string } {
  if ((policy.hnsAccounts ?? []).includes(account)) return { scope: 'directory' };
  if (!policy.outputsRequireScopedSas) return { scope: 'container' };
  const hns = policy.hnsAccounts ?? [];
  return {
    refusal:
      `account "${account}" has no hierarchical namespace, so a node could only be given a SAS for its whole container, ` +
      `and this deployment requires outputs to be written through a SAS for the job's own prefix (OUTPUTS_REQUIRE_SCOPED_SAS); ` +
      `use ${hns.length ? `an account with one (${hns.join(', ')})` : 'an account with one (none is configured: DATA_ACCOUNTS_HNS)'}`,
  };
}

function matches(pattern: string, container: string): boolean {
  return pattern.endsWith('*') ? container.startsWith(pattern.slice(0, -1)) : container === pattern;
}

/** Every place the spec names storage, checked against the policy, each refusal with its field path. */
export function checkDataAccess(spec: JobSpec, policy: DataAccessPolicy): SpecError[] {
  const errors: SpecError[] = [];
  const check = (path: string, account: string, container: string) => {
    const why = dataAccessRefusal(policy, account, container);
    if (why) errors.push({ path: policy.accounts.includes(account) ? `${path}.container` : `${path}.account`, message: why });
  };
  spec.data.inputs.forEach((input, i) => check(`data.inputs[${i}]`, input.account, input.container));
  spec.pool.startTask?.resourceFiles.forEach((f, i) => check(`pool.startTask.resourceFiles[${i}]`, f.account, f.container));
  spec.data.stagingAccounts.forEach((account, i) => {
    if (!policy.stagingAccounts.includes(account)) {
      errors.push({
        path: `data.stagingAccounts[${i}]`,
        message: `"${account}" is not a staging account of this deployment (configured: ${policy.stagingAccounts.join(', ')})`,
      });
    }
  });
  errors.push(...checkWorkloadDataAccess(spec, policy, (account, container) => dataAccessRefusal(policy, account, container)));
  if (spec.outputs && policy.accounts.includes(spec.outputs.account)) {
    const sas = outputsSasScope(policy, spec.outputs.account);
    if ('refusal' in sas) errors.push({ path: 'outputs.account', message: sas.refusal });
  }
  return errors;
}
