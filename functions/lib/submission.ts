/**
 * What every HTTP submission path (POST /api/jobs, the rerun route) hands intake about the caller: its identity, the
 * deployment's data, container and scheduling policies, and the pool gate for its rights. Declared once so a new
 * rule reaches every door that submits.
 */
import type { Principal } from '../../shared/adapters/auth';
import { dataCallerOf } from '../../shared/adapters/auth';
import { dataAccessPolicy } from '../../shared/core/intake/dataAccess';
import { containerPolicy } from '../../shared/core/intake/containerPolicy';
import { poolCallerOf } from '../../shared/core/intake/poolAccess';
import { appConfig, poolGate, schedulingPolicy, submissionFacts } from '../../shared/services';

export async function callerSubmission(principal: Principal) {
  return {
    dataAccess: dataAccessPolicy(appConfig()),
    owner: principal.id,
    ownerName: principal.name,
    idScope: principal.id,
    caller: dataCallerOf(principal),
    containers: containerPolicy(appConfig()),
    scheduling: await schedulingPolicy(),
    pools: poolGate(poolCallerOf(principal)),
    facts: submissionFacts(),
  };
}
