/**
 * The multi-instance task (the MPI run, the preflight check). Planning builds its request (shared/core/contract/
 * batchTasks.ts MpiTaskRequest, the one shape the activity map carries); this module turns that request into Batch's
 * TaskAddParameter in one function, adding what only the activity knows (the Key Vault access) there.
 */
import type { BatchServiceModels } from '@azure/batch';
import type { MpiTaskRequest } from '../../core/contract/batchTasks';
import { keyVaultTaskEnvironment, type KeyVaultAccess } from '../../core/planning/secretEnv';
import type { BatchContext } from './client';
import { secondsToDuration, stripUndefined, toEnvironmentSettings, toOutputFiles, toResourceFiles } from './common';
import { BatchError } from './errors';
import { addTask, type AddTaskResult } from './tasks';

/**
 * The TaskAddParameter for a multi-instance task. Pure; exported for tests, the dry run and review. `keyVault` is the
 * deployment's Key Vault access, added to the environment of a task that reads secrets (`keyVault: true`).
 */
export function buildMpiTaskParameter(task: MpiTaskRequest, keyVault: KeyVaultAccess = {}): BatchServiceModels.TaskAddParameter {
  // Every field is named here: a field added to MpiTaskRequest and not carried to the request is a compile error
  // (`unmapped` would not be empty), and tests/unit/taskShape.test.ts checks each field changes the request.
  const {
    batchJobId: _path,
    taskId,
    numberOfInstances,
    coordinationCommandLine,
    applicationCommandLine,
    environment,
    commonResourceFiles,
    outputFiles,
    maxWallClockSeconds,
    maxTaskRetryCount,
    keyVault: readsSecrets,
    ...unmapped
  } = task;
  const nothingLeft: Record<string, never> = unmapped;
  void nothingLeft;
  if (!Number.isInteger(numberOfInstances) || numberOfInstances < 1) {
    throw new BatchError({
      code: 'InvalidMpiTaskSpec',
      operation: 'mpiTask.add',
      resource: `task ${taskId}`,
      message: `numberOfInstances must be a positive integer, got ${numberOfInstances}`,
    });
  }
  return stripUndefined({
    id: taskId,
    commandLine: applicationCommandLine,
    multiInstanceSettings: stripUndefined({
      numberOfInstances,
      coordinationCommandLine,
      commonResourceFiles: toResourceFiles(commonResourceFiles),
    }),
    outputFiles: toOutputFiles(outputFiles),
    environmentSettings: toEnvironmentSettings(readsSecrets ? [...environment, ...keyVaultTaskEnvironment(keyVault)] : environment),
    constraints: stripUndefined({ maxWallClockTime: secondsToDuration(maxWallClockSeconds), maxTaskRetryCount: maxTaskRetryCount ?? 0 }),
    // Multi-instance tasks must take exactly one slot.
    requiredSlots: 1,
    // The coordination command starts a daemon (sshd, the container), which needs admin.
    userIdentity: { autoUser: { scope: 'pool' as const, elevationLevel: 'admin' as const } },
  });
}

/** Adds the task to its Batch job; a repeated add of the same task is a success (created: false). */
export function addMpiTask(ctx: BatchContext, task: MpiTaskRequest, keyVault: KeyVaultAccess = {}): Promise<AddTaskResult> {
  return addTask(ctx, task.batchJobId, buildMpiTaskParameter(task, keyVault), 'mpiTask.add');
}
