/**
 * The multi-instance MPI task. The command strings come from the MPI command builder; this module
 * only maps a prebuilt spec onto Batch's TaskAddParameter.
 */
import type { BatchServiceModels } from '@azure/batch';
import type { BatchContext } from './client';
import {
  secondsToDuration,
  stripUndefined,
  toContainerSettings,
  toEnvironmentSettings,
  toOutputFiles,
  toResourceFiles,
  type ContainerSettingsSpec,
  type NameValue,
  type OutputFileSpec,
  type ResourceFileSpec,
} from './common';
import { BatchError } from './errors';
import { addTask, type AddTaskResult } from './tasks';

export interface MpiTaskSpec {
  id: string;
  /** Nodes the task spans (primary + subtasks); the pool must have at least this many. */
  numberOfInstances: number;
  /** Runs on every node first (e.g. start sshd in the container) and must exit 0 on all of them. */
  coordinationCommandLine: string;
  /** Runs on the primary only once coordination succeeded everywhere (the mpirun line). */
  applicationCommandLine: string;
  /** Downloaded on every node into the task root directory. */
  commonResourceFiles?: ResourceFileSpec[];
  /** Downloaded on the primary only, into its working directory. */
  resourceFiles?: ResourceFileSpec[];
  /** Uploaded by Batch from the primary's node only, after the task ended and before it counts as completed. */
  outputFiles?: OutputFileSpec[];
  environment?: NameValue[];
  containerSettings?: ContainerSettingsSpec;
  /** ISO 8601 duration ("PT2H") or seconds; from task start. */
  maxWallClockTime?: string | number;
  /** The same limit in seconds (used when maxWallClockTime is absent). */
  maxWallClockSeconds?: number;
  /** Default 0: an MPI run is not blindly repeated. */
  maxTaskRetryCount?: number;
  /** Default true: the coordination command usually starts a daemon, which needs admin. */
  elevated?: boolean;
}

/** The TaskAddParameter for an MPI task. Pure; exported for tests and review. */
export function buildMpiTaskParameter(spec: MpiTaskSpec): BatchServiceModels.TaskAddParameter {
  if (!Number.isInteger(spec.numberOfInstances) || spec.numberOfInstances < 1) {
    throw new BatchError({
      code: 'InvalidMpiTaskSpec',
      operation: 'mpiTask.add',
      resource: `task ${spec.id}`,
      message: `numberOfInstances must be a positive integer, got ${spec.numberOfInstances}`,
    });
  }
  const limit = spec.maxWallClockTime ?? spec.maxWallClockSeconds;
  const wallClock = typeof limit === 'number' ? secondsToDuration(limit) : limit;
  return stripUndefined({
    id: spec.id,
    commandLine: spec.applicationCommandLine,
    multiInstanceSettings: stripUndefined({
      numberOfInstances: spec.numberOfInstances,
      coordinationCommandLine: spec.coordinationCommandLine,
      commonResourceFiles: toResourceFiles(spec.commonResourceFiles),
    }),
    resourceFiles: toResourceFiles(spec.resourceFiles),
    outputFiles: toOutputFiles(spec.outputFiles),
    environmentSettings: toEnvironmentSettings(spec.environment),
    containerSettings: toContainerSettings(spec.containerSettings),
    constraints: stripUndefined({ maxWallClockTime: wallClock, maxTaskRetryCount: spec.maxTaskRetryCount ?? 0 }),
    // Multi-instance tasks must take exactly one slot.
    requiredSlots: 1,
    userIdentity: spec.elevated === false ? undefined : { autoUser: { scope: 'pool' as const, elevationLevel: 'admin' as const } },
  });
}

/** Adds the MPI task; a repeated add of the same task is a success (created: false). */
export function addMpiTask(ctx: BatchContext, batchJobId: string, spec: MpiTaskSpec): Promise<AddTaskResult> {
  return addTask(ctx, batchJobId, buildMpiTaskParameter(spec), 'mpiTask.add');
}
