/** Resource Manager's error answers: `{ error: { code, message, target?, details? } }` with the ARM status. */

export class ArmHttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly target?: string,
    /** Batch's detail entries (Reason, PropertyName, PropertyPath) as Resource Manager relays them. */
    readonly details: { code: string; message: string }[] = [],
  ) {
    super(message);
  }
}

export function armErrorBody(err: ArmHttpError): Record<string, unknown> {
  return {
    error: { code: err.code, message: err.message, ...(err.target ? { target: err.target } : {}), ...(err.details.length ? { details: err.details } : {}) },
  };
}

export const armErrors = {
  subscriptionNotFound: (id: string) => new ArmHttpError(404, 'SubscriptionNotFound', `The subscription '${id}' could not be found.`),
  resourceGroupNotFound: (rg: string) => new ArmHttpError(404, 'ResourceGroupNotFound', `Resource group '${rg}' could not be found.`),
  accountNotFound: (account: string, rg: string) =>
    new ArmHttpError(
      404,
      'ResourceNotFound',
      `The Resource 'Microsoft.Batch/batchAccounts/${account}' under resource group '${rg}' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix`,
    ),
  poolNotFound: (pool: string) => new ArmHttpError(404, 'PoolNotFound', `The specified pool '${pool}' does not exist.`),
  invalidContent: (message: string, target?: string) => new ArmHttpError(400, 'InvalidRequestContent', message, {}, target),
};
