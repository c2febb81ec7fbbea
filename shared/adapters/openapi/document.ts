/**
 * The OpenAPI 3.1 document of the job API, generated from the same zod schemas that validate requests
 * and shape answers (z.toJSONSchema), so it cannot drift from the code. Served at GET /api/openapi.json.
 */
import { z } from 'zod';
import { JobSpecSchema } from '../../core/spec/schema';
import { ForbiddenRequestResponseSchema, ValidationErrorResponseSchema } from '../../core/spec/errorSchemas';
import {
  CancelJobResponseSchema,
  JobFinishingResponseSchema,
  HealthResponseSchema,
  JobConflictResponseSchema,
  JobListResponseSchema,
  JobViewSchema,
  ProblemResponseSchema,
  QueuesResponseSchema,
  SubmitJobResponseSchema,
} from '../../core/state/view';
import { APP_ROLES } from '../auth/roles';
import { JobOutputsResponseSchema } from '../../core/contract/outputs';
import { ExplainDocumentSchema } from '../../core/contract/explain';
import { UploadRequestSchema, UploadResponseSchema } from '../../core/contract/uploads';
import { ROUTES, securityOf } from './routes';

export interface OpenApiOptions {
  /** Server URL, e.g. "https://myapp.azurewebsites.net" or "http://127.0.0.1:7071". Default: relative ("/"). */
  baseUrl?: string;
  /** API version shown in info.version (default "1.0.0"). */
  version?: string;
}

type JsonObject = Record<string, unknown>;

/** JSON Schema (2020-12, which OpenAPI 3.1 uses) of a zod schema, without the top-level $schema key. */
function schemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonObject {
  const json = z.toJSONSchema(schema, { io, target: 'draft-2020-12', unrepresentable: 'any' }) as JsonObject;
  delete json.$schema;
  return json;
}

/** `paths` from the route table: every documented route under the Functions /api prefix. */
function pathsOf(): JsonObject {
  const paths: Record<string, JsonObject> = {};
  for (const r of ROUTES) {
    if (r.operationId === null) continue;
    const operation = 'operation' in r ? r.operation : {};
    (paths[`/api/${r.route}`] ??= {})[r.method.toLowerCase()] = { operationId: r.operationId, summary: r.summary, ...operation, security: securityOf(r.auth) };
  }
  return paths;
}

export function buildOpenApiDocument(options: OpenApiOptions = {}): JsonObject {
  return {
    openapi: '3.1.0',
    info: {
      title: 'HPC MPI job control plane',
      version: options.version ?? '1.0.0',
      description:
        'Submit MPI jobs (JSON or YAML job specs), follow their state and cancel them. ' +
        'The same spec can also be sent as a message on the "job-submissions" Storage queue. ' +
        'Field reference: docs/job-spec.md.',
    },
    servers: [{ url: options.baseUrl ? options.baseUrl.replace(/\/+$/, '') : '/' }],
    paths: pathsOf(),
    components: {
      schemas: {
        JobSpec: schemaOf(JobSpecSchema, 'input'),
        JobView: schemaOf(JobViewSchema, 'output'),
        SubmitJobResponse: schemaOf(SubmitJobResponseSchema, 'output'),
        JobListResponse: schemaOf(JobListResponseSchema, 'output'),
        CancelJobResponse: schemaOf(CancelJobResponseSchema, 'output'),
        ValidationErrorResponse: schemaOf(ValidationErrorResponseSchema, 'output'),
        ForbiddenRequestResponse: schemaOf(ForbiddenRequestResponseSchema, 'output'),
        JobConflictResponse: schemaOf(JobConflictResponseSchema, 'output'),
        JobFinishingResponse: schemaOf(JobFinishingResponseSchema, 'output'),
        ProblemResponse: schemaOf(ProblemResponseSchema, 'output'),
        HealthResponse: schemaOf(HealthResponseSchema, 'output'),
        JobOutputsResponse: schemaOf(JobOutputsResponseSchema, 'output'),
        UploadRequest: schemaOf(UploadRequestSchema, 'input'),
        UploadResponse: schemaOf(UploadResponseSchema, 'output'),
        QueuesResponse: schemaOf(QueuesResponseSchema, 'output'),
        ExplainDocument: schemaOf(ExplainDocumentSchema, 'output'),
      },
      securitySchemes: {
        entraId: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'A Microsoft Entra ID access token for this API (audience: its application id URI or client id; RS256; ' +
            `issuer: the tenant's v2.0 issuer). The token's \`roles\` claim grants: ${Object.entries(APP_ROLES)
              .map(([v, r]) => `${v} → ${r}`)
              .join(', ')}. ` +
            'Readers see their own jobs, submitters also submit and cancel their own, admins see and cancel every job. See docs/security.md.',
        },
        operatorKey: {
          type: 'apiKey',
          in: 'header',
          name: 'x-functions-key',
          description: 'An operator key (OPERATOR_API_KEYS): the caller is the admin principal "operator".',
        },
        operatorKeyQuery: { type: 'apiKey', in: 'query', name: 'code', description: 'The same operator key as a query parameter.' },
      },
    },
  };
}
