import { randomUUID } from 'node:crypto';

/** An error answered with Batch's status, code and body shape. */
export class BatchHttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly values: { key: string; value: string }[] = [],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export function batchErrorBody(baseUrl: string, err: BatchHttpError, requestId: string = randomUUID()): Record<string, unknown> {
  const body: Record<string, unknown> = {
    'odata.metadata': `${baseUrl}/$metadata#Microsoft.Azure.Batch.Protocol.Entities.Container.errors/@Element`,
    code: err.code,
    message: { lang: 'en-US', value: `${err.message}\nRequestId:${requestId}\nTime:${new Date().toISOString()}` },
  };
  if (err.values.length) body.values = err.values;
  return body;
}

export const errors = {
  notFound: (code: string, what: string) => new BatchHttpError(404, code, `The specified ${what} does not exist.`),
  exists: (code: string, what: string) => new BatchHttpError(409, code, `The specified ${what} already exists.`),
  missing: (prop: string) =>
    new BatchHttpError(400, 'MissingRequiredProperty', 'A required property was not specified in the request body.', [{ key: 'PropertyName', value: prop }]),
  invalid: (prop: string, value: unknown, reason?: string) =>
    new BatchHttpError(400, 'InvalidPropertyValue', 'The value provided for one of the properties in the request body is invalid.', [
      { key: 'PropertyName', value: prop },
      { key: 'PropertyValue', value: String(typeof value === 'object' ? JSON.stringify(value) : value) },
      ...(reason ? [{ key: 'Reason', value: reason }] : []),
    ]),
  conflict: (code: string, message: string) => new BatchHttpError(409, code, message),
};
