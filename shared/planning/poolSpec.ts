/**
 * The pool the provisioning activity asks Batch for, from the plan's pool request: the same definition on both
 * planes (data plane without identity, management plane with the pool identity). Pure: the activity resolves the
 * start task's file URLs (SAS, or plain URLs read with the identity) and passes them in; the contract tests build
 * the product's exact bodies with it.
 */
import type { JobPoolSpec, ResourceFileSpec } from '../batch';
import { userCommandLine } from '../mpi/userShell';
import { parseIsoDuration } from '../spec/duration';
import type { PoolCreateRequest } from './jobPlan';

export function jobPoolSpecFor(input: PoolCreateRequest, resourceFiles: ResourceFileSpec[] | undefined, identityResourceId?: string): JobPoolSpec {
  const registries = input.registry && identityResourceId && input.registry.identity === 'managed'
    ? [{ registryServer: input.registry.server, identityResourceId }]
    : undefined;
  return {
    poolId: input.poolId,
    jobId: input.jobId,
    vmSize: input.vmSize,
    targetDedicatedNodes: input.nodes,
    image: input.customImageId ? { virtualMachineImageId: input.customImageId } : { ...input.image },
    nodeAgentSkuId: input.nodeAgentSku,
    resizeTimeoutMinutes: Math.max(5, Math.round((parseIsoDuration(input.resizeTimeout) ?? 15 * 60_000) / 60_000)),
    startTask: input.startTask ? { commandLine: userCommandLine(input.startTask.command), resourceFiles, elevated: true, waitForSuccess: true } : undefined,
    ...(registries ? { containerRegistries: registries } : {}),
    displayName: `hpc-mpi job ${input.jobId}`,
  };
}
