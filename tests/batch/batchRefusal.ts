/**
 * What the contract tests read of a refused Batch request through the real @azure/batch SDK: the status, Batch's
 * error code and the PropertyName detail (undefined fields when the request was accepted).
 */
import type { RestError } from '@azure/ms-rest-js';

/** Emulator timing for contract tests: nodes allocate and boot at once. */
export const FAST_TIMING = { allocateMs: 20, bootMs: 20, leaveMs: 20, rebootMs: 20, startTaskPollMs: 50 };

export async function refusal(p: Promise<unknown>): Promise<{ status?: number; code?: string; property?: string }> {
  try {
    await p;
  } catch (e) {
    const err = e as RestError & { body?: { values?: { key: string; value: string }[] } };
    return { status: err.statusCode, code: err.code, property: err.body?.values?.find((v: { key: string; value: string }) => v.key === 'PropertyName')?.value };
  }
  return {};
}
