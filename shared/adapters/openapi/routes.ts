/**
 * The HTTP routes of the app, declared once: what functions/ registers (name, method, route) and what the OpenAPI
 * document says of them (operationId, summary, who may call it, parameters, bodies and answers naming the zod
 * schemas of components.schemas). functions/lib/route.ts registers from this table and document.ts writes `paths`
 * from it, so a route cannot be served undocumented or documented unserved (tests/unit/openapiRoutes.test.ts).
 */
import { ACTIONS, appRolesFor, type Action } from '../auth/permissions';
import { JOB_STATES } from '../../core/state/states';
import { CANCEL_REASON_MAX_CHARS } from '../../core/intake/cancelReason';
import { OUTPUTS_PAGE_DEFAULT, OUTPUTS_PAGE_MAX } from '../../core/contract/outputs';
import { UPLOAD_FILES_MAX } from '../../core/contract/uploads';

type JsonObject = Record<string, unknown>;

export const HTTP_METHODS = ['GET', 'POST', 'DELETE'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

export interface RouteDeclaration {
  /** The Functions function name (host logs, the local host's registry). */
  name: string;
  method: HttpMethod;
  /** The Functions route, under the /api prefix. */
  route: string;
  /** The permission the handler checks (functions/lib/auth.ts), or anonymous. */
  auth: Action | 'anonymous';
  /** null: served but not part of the job API (the dashboard's HTML page), so not in the OpenAPI document. */
  operationId: string | null;
  summary: string;
  /** The rest of the OpenAPI operation object: description, parameters, requestBody, responses. */
  operation?: JsonObject;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const jsonContent = (name: string) => ({ 'application/json': { schema: ref(name) } });
const problem = (description: string) => ({ description, content: jsonContent('ProblemResponse') });
const authResponses = {
  401: problem('No valid credentials: a missing, expired or foreign token, or a wrong operator key (WWW-Authenticate: Bearer).'),
  403: problem('Authenticated, but no app role grants this operation.'),
  503: problem('A dependency (storage, Durable, the token issuer) is temporarily unavailable; retry.'),
};
const idParam = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'Job id.',
  schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{0,63}$' },
};

/**
 * Who may call an operation: an Entra ID bearer token holding one of the app roles that grant `action` (OpenAPI
 * 3.1 lets a non-OAuth scheme list role names), or an operator key in the header or the query.
 */
export function securityOf(auth: Action | 'anonymous'): unknown[] {
  return auth === 'anonymous' ? [] : [{ entraId: appRolesFor(auth) }, { operatorKey: [] }, { operatorKeyQuery: [] }];
}

export const ROUTES = [
  {
    name: 'submitJob',
    method: 'POST',
    route: 'jobs',
    auth: 'job:submit',
    operationId: 'submitJob',
    summary: 'Submit a job',
    operation: {
      description:
        'Validates the spec, derives the job id (spec.id, else the Idempotency-Key header, else the content hash), ' +
        'records the job and starts its orchestration. Repeating a submission returns the existing job (200); ' +
        'the same id with a different spec is a conflict (409) listing the differing paths.',
      parameters: [
        {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description: 'Client retry key used to derive the job id when the spec has no id.',
          schema: { type: 'string', maxLength: 256 },
        },
        {
          name: 'dryRun',
          in: 'query',
          required: false,
          description:
            'true: run the same checks (spec, data-access and container policies, role) and look up every blob and prefix the job ' +
            'reads (data.inputs, files, start-task files, SIF blobs: 400 with the field path for a missing one), then answer 200 with the ExplainDocument ' +
            'of what the pipeline would send to Batch (docs/explain.md). Nothing is created: no job row, no orchestration, no Batch call.',
          schema: { type: 'string', enum: ['true', 'false'], default: 'false' },
        },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': { schema: ref('JobSpec') },
          'application/yaml': { schema: ref('JobSpec') },
        },
      },
      responses: {
        202: {
          description: 'Accepted: a new job was recorded and its orchestration started.',
          headers: { Location: { description: 'Status URL of the job.', schema: { type: 'string' } } },
          content: jsonContent('SubmitJobResponse'),
        },
        200: {
          description:
            'An identical submission of an existing job (idempotent repeat, SubmitJobResponse); with dryRun=true, what would be sent to Batch (ExplainDocument).',
          content: { 'application/json': { schema: { oneOf: [ref('SubmitJobResponse'), ref('ExplainDocument')] } } },
        },
        400: {
          description: "The spec is invalid or refused by this deployment's policies (also with dryRun=true): every problem with its JSON path.",
          content: jsonContent('ValidationErrorResponse'),
        },
        ...authResponses,
        403: {
          description:
            'Authenticated, but no app role grants this operation (ProblemResponse); or the spec names something the caller may not use ' +
            '(ForbiddenRequestResponse, the field paths in errors; also with dryRun=true; nothing is recorded): error PoolForbidden when ' +
            "pool.poolId is a pool that is neither the caller's own nor shared with it, error DataAreaForbidden when the spec names data " +
            "outside the caller's data area and every shared area it may use.",
          content: { 'application/json': { schema: { oneOf: [ref('ProblemResponse'), ref('ForbiddenRequestResponse')] } } },
        },
        409: {
          description:
            "A job with this id exists with a different spec (JobConflictResponse), or the id belongs to another owner's job (ProblemResponse, error JobIdTaken).",
          content: { 'application/json': { schema: { oneOf: [ref('JobConflictResponse'), ref('ProblemResponse')] } } },
        },
        413: problem('The body is too large.'),
        415: problem('Unsupported content type (use application/json or application/yaml).'),
      },
    },
  },
  {
    name: 'listJobs',
    method: 'GET',
    route: 'jobs',
    auth: 'job:read',
    operationId: 'listJobs',
    summary: 'List jobs',
    operation: {
      description:
        "Filtered, paged listing of the caller's own jobs (admins: every job). Pages may hold fewer than `top` jobs; continue while a continuationToken is returned.",
      parameters: [
        {
          name: 'state',
          in: 'query',
          required: false,
          description: 'One state or a comma-separated list.',
          schema: { type: 'string', examples: [JOB_STATES.join(',')] },
        },
        { name: 'tag', in: 'query', required: false, description: '"key" (tag present) or "key=value".', schema: { type: 'string' } },
        {
          name: 'createdFrom',
          in: 'query',
          required: false,
          description: 'Inclusive lower bound of createdAt.',
          schema: { type: 'string', format: 'date-time' },
        },
        {
          name: 'createdTo',
          in: 'query',
          required: false,
          description: 'Exclusive upper bound of createdAt.',
          schema: { type: 'string', format: 'date-time' },
        },
        { name: 'top', in: 'query', required: false, description: 'Page size.', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
        { name: 'continuationToken', in: 'query', required: false, description: 'From the previous page.', schema: { type: 'string' } },
      ],
      responses: {
        200: { description: 'A page of jobs.', content: jsonContent('JobListResponse') },
        400: problem('A bad filter or continuation token.'),
        ...authResponses,
      },
    },
  },
  {
    name: 'getJob',
    method: 'GET',
    route: 'jobs/{id}',
    auth: 'job:read',
    operationId: 'getJob',
    summary: 'Job status',
    operation: {
      description: "The job with its live progress and timeline. Another owner's job is answered 404, like a missing one (admins see every job).",
      parameters: [idParam],
      responses: {
        200: { description: 'The job, with its normalized spec.', content: jsonContent('JobView') },
        400: { description: 'An id that can never name a job (path "id").', content: jsonContent('ValidationErrorResponse') },
        ...authResponses,
        404: problem('No such job (or not yours).'),
      },
    },
  },
  {
    name: 'cancelJob',
    method: 'DELETE',
    route: 'jobs/{id}',
    auth: 'job:cancel',
    operationId: 'cancelJob',
    summary: 'Cancel a job',
    operation: {
      description: 'Requests cancellation; the orchestration cleans up (job, pool, staged data) and ends in Cancelled.',
      parameters: [
        idParam,
        {
          name: 'reason',
          in: 'query',
          required: false,
          description:
            'Why (kept in the timeline and sent in events): one line of at most 256 characters, no control, line-separator or bidirectional characters. Default "cancelled by user".',
          schema: { type: 'string', minLength: 1, maxLength: CANCEL_REASON_MAX_CHARS },
        },
      ],
      responses: {
        202: { description: 'Cancellation requested.', content: jsonContent('CancelJobResponse') },
        200: { description: 'The job had already finished; nothing to cancel.', content: jsonContent('CancelJobResponse') },
        400: {
          description: 'An id that can never name a job (path "id") or a reason outside the text rules (path "reason").',
          content: jsonContent('ValidationErrorResponse'),
        },
        409: {
          description: 'JobFinishing: the job is cleaning up after a run whose end is decided; too late to cancel (nothing is recorded).',
          content: jsonContent('JobFinishingResponse'),
        },
        ...authResponses,
        404: problem('No such job (or not yours).'),
      },
    },
  },
  {
    name: 'rerunJob',
    method: 'POST',
    route: 'jobs/{id}/rerun',
    auth: 'job:submit',
    operationId: 'rerunJob',
    summary: 'Rerun a finished job',
    operation: {
      description:
        'Starts a NEW job from the recorded spec of a finished job (Succeeded, Failed or Cancelled), through the same checks as a submission ' +
        'with the caller\'s rights. The new id is "<id, cut to 53>-r<8 hex>", derived from the old id, the caller and the Idempotency-Key header, ' +
        'so a retried request answers the same job (200). The new job records rerunOf; the old job\'s timeline notes "rerun as <new id>". ' +
        "A defaulted outputs prefix (users/<key>/jobs/<old id>) becomes the new job's own; an explicit prefix stays. Another owner's job is 404.",
      parameters: [
        idParam,
        {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description: "Each key gives another rerun of the job; without one, repeats answer the caller's first rerun.",
          schema: { type: 'string', maxLength: 256 },
        },
      ],
      responses: {
        202: {
          description: 'Accepted: the new job was recorded and started.',
          headers: { Location: { description: 'Status URL of the new job.', schema: { type: 'string' } } },
          content: jsonContent('SubmitJobResponse'),
        },
        200: { description: 'A repeat of this rerun request: the job it started.', content: jsonContent('SubmitJobResponse') },
        400: {
          description: 'An id that can never name a job (path "id"), or the spec is refused by this deployment\'s policies now.',
          content: jsonContent('ValidationErrorResponse'),
        },
        ...authResponses,
        403: {
          description:
            'No app role grants submitting (ProblemResponse), or the spec names something the CALLER may not use (ForbiddenRequestResponse: PoolForbidden, DataAreaForbidden).',
          content: { 'application/json': { schema: { oneOf: [ref('ProblemResponse'), ref('ForbiddenRequestResponse')] } } },
        },
        404: problem('No such job (or not yours).'),
        409: problem('The job has not finished (error JobNotFinished), has no valid recorded spec (JobHasNoSpec), or the derived id is taken (JobIdTaken).'),
      },
    },
  },
  {
    name: 'jobLogs',
    method: 'GET',
    route: 'jobs/{id}/logs',
    auth: 'job:read',
    operationId: 'getJobLogs',
    summary: 'MPI output of a job',
    operation: {
      description:
        'stdout or stderr of the MPI master (default) or of the subtask on `node`, read live from Batch while the pool exists, ' +
        'else the tail recorded in the job result. `since` returns only the bytes after that offset (for following a running job).',
      parameters: [
        idParam,
        { name: 'node', in: 'query', required: false, schema: { type: 'string' }, description: 'Batch node id; default the master.' },
        { name: 'stream', in: 'query', required: false, schema: { type: 'string', enum: ['stdout', 'stderr'] } },
        { name: 'since', in: 'query', required: false, schema: { type: 'integer', minimum: 0 }, description: 'Byte offset already read.' },
      ],
      responses: {
        200: {
          description: 'The requested bytes.',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['jobId', 'node', 'stream', 'source', 'size', 'start', 'content', 'nodes'],
                properties: {
                  jobId: { type: 'string' },
                  node: { type: 'string' },
                  stream: { type: 'string', enum: ['stdout', 'stderr'] },
                  source: { type: 'string', enum: ['live', 'recorded', 'none'] },
                  size: { type: 'integer' },
                  start: { type: 'integer' },
                  content: { type: 'string' },
                  nodes: { type: 'array', items: { type: 'string' } },
                  message: { type: 'string' },
                },
              },
            },
          },
        },
        400: problem('A bad parameter.'),
        ...authResponses,
        404: problem('No such job (or not yours) or node.'),
      },
    },
  },
  {
    name: 'jobOutputs',
    method: 'GET',
    route: 'jobs/{id}/outputs',
    auth: 'job:read',
    operationId: 'getJobOutputs',
    summary: 'The outputs of a job, with download URLs',
    operation: {
      description:
        'What the job uploaded (spec `outputs`: its container and prefix) with a read-only SAS URL per file, minted for this ' +
        'call and valid until `expiresAt` (an hour at most). Pages of at most `top` files; `continuationToken` gets the next page. ' +
        '`hpcjob download` uses it.',
      parameters: [
        idParam,
        { name: 'top', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: OUTPUTS_PAGE_MAX, default: OUTPUTS_PAGE_DEFAULT } },
        { name: 'continuationToken', in: 'query', required: false, schema: { type: 'string' } },
      ],
      responses: {
        200: { description: 'One page of outputs.', content: jsonContent('JobOutputsResponse') },
        400: problem('A bad parameter.'),
        ...authResponses,
        404: problem('No such job, or not yours (JobNotFound); or the job has no outputs section (NoOutputs).'),
        409: problem("The deployment no longer lets jobs use the outputs' container (OutputsNotAccessible)."),
      },
    },
  },
  {
    name: 'uploads',
    method: 'POST',
    route: 'uploads',
    auth: 'job:submit',
    operationId: 'createUpload',
    summary: 'Upload URLs for your own data',
    operation: {
      description:
        `Per file named (at most ${UPLOAD_FILES_MAX}), the blob's URL with a SAS for exactly that blob (read, create, write), ` +
        'valid until `expiresAt` (an hour at most), under `prefix`: by default your own data area (users/<ownerKey>/, GET /api/me), ' +
        'or a prefix there or in a shared area your roles let you write. On an account with a hierarchical namespace, also a directory ' +
        'SAS (cw) on exactly the prefix. The container is created if it does not exist. `hpcjob upload` uses it.',
      requestBody: { required: true, content: jsonContent('UploadRequest') },
      responses: {
        200: { description: 'The upload URLs.', content: jsonContent('UploadResponse') },
        400: {
          description: 'A malformed body, an account that is no data account, or a container the deployment refuses: the field paths.',
          content: jsonContent('ValidationErrorResponse'),
        },
        ...authResponses,
        403: {
          description:
            'No app role grants uploads, or the prefix lies outside your data area and every shared area you may write (DataAreaForbidden, with the field path).',
          content: jsonContent('ForbiddenRequestResponse'),
        },
        415: problem('The body is not application/json.'),
      },
    },
  },
  {
    name: 'getQueues',
    method: 'GET',
    route: 'queues',
    auth: 'job:read',
    operationId: 'getQueues',
    summary: 'Admission queues',
    operation: {
      description:
        'Per queue: jobs waiting (depth), jobs holding a reservation, reserved nodes and cores per VM family; the totals and the limits admission keeps (docs/scheduling.md).',
      responses: {
        200: { description: 'The queues.', content: jsonContent('QueuesResponse') },
        ...authResponses,
      },
    },
  },
  {
    name: 'usage',
    method: 'GET',
    route: 'usage',
    auth: 'usage:read',
    operationId: 'getUsage',
    summary: 'Node-hours and estimated cost per day and per tag',
    operation: {
      description: "Over the caller's own finished jobs (admins: every job).",
      parameters: [
        { name: 'from', in: 'query', required: false, schema: { type: 'string', format: 'date' }, description: 'First day (YYYY-MM-DD, day of pool release).' },
        { name: 'to', in: 'query', required: false, schema: { type: 'string', format: 'date' }, description: 'Last day (YYYY-MM-DD).' },
        { name: 'tag', in: 'query', required: false, schema: { type: 'string' }, description: '`key` or `key=value`.' },
      ],
      responses: {
        200: { description: 'Usage report (see docs/operations.md).', content: { 'application/json': { schema: { type: 'object' } } } },
        400: problem('A bad parameter.'),
        ...authResponses,
      },
    },
  },
  {
    name: 'whoAmI',
    method: 'GET',
    route: 'me',
    auth: 'job:read',
    operationId: 'whoAmI',
    summary: 'The caller as the API sees it',
    operation: {
      description: 'The principal id (the owner recorded on its jobs), display name, kind, roles and permissions.',
      responses: {
        200: {
          description: 'The caller.',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['id', 'name', 'kind', 'roles', 'permissions', 'seesAllJobs'],
                properties: {
                  id: { type: 'string', description: '"<tenant id>/<object id>", "operator" or "anonymous".' },
                  name: { type: 'string' },
                  kind: { type: 'string', enum: ['user', 'application', 'operator', 'anonymous'] },
                  roles: { type: 'array', items: { type: 'string', enum: ['reader', 'submitter', 'admin'] } },
                  tenantId: { type: 'string' },
                  objectId: { type: 'string' },
                  permissions: { type: 'array', items: { type: 'string', enum: [...ACTIONS] } },
                  seesAllJobs: { type: 'boolean' },
                  dataArea: {
                    type: 'string',
                    description:
                      'The caller\'s own area in the data accounts: the blob prefix "users/<ownerKey>/" in any container jobs may use (docs/security.md, "Data areas").',
                  },
                  sharedAreas: {
                    type: 'array',
                    description: "The shared areas (SHARED_DATA_AREAS) the caller's roles open.",
                    items: {
                      type: 'object',
                      required: ['account', 'container', 'prefix', 'access'],
                      properties: {
                        account: { type: 'string' },
                        container: { type: 'string' },
                        prefix: { type: 'string' },
                        access: { type: 'string', enum: ['read', 'write'] },
                      },
                    },
                  },
                },
              },
            },
          },
        },
        ...authResponses,
      },
    },
  },
  {
    name: 'health',
    method: 'GET',
    route: 'health',
    auth: 'anonymous',
    operationId: 'health',
    summary: 'Liveness and dependency checks',
    operation: {
      responses: {
        200: { description: 'Healthy (or degraded but serving).', content: jsonContent('HealthResponse') },
        503: { description: 'Unhealthy.', content: jsonContent('HealthResponse') },
      },
    },
  },
  {
    name: 'openApi',
    method: 'GET',
    route: 'openapi.json',
    auth: 'anonymous',
    operationId: 'openApiDocument',
    summary: 'This document',
    operation: {
      responses: { 200: { description: 'The OpenAPI 3.1 document.', content: { 'application/json': { schema: { type: 'object' } } } } },
    },
  },
  {
    name: 'dashboard',
    method: 'GET',
    route: 'dashboard',
    auth: 'anonymous',
    operationId: null,
    summary: "The dashboard page (HTML; it calls the API with the user's token)",
  },
] as const satisfies readonly RouteDeclaration[];

export type RouteName = (typeof ROUTES)[number]['name'];

export function routeNamed(name: RouteName): RouteDeclaration {
  const found = ROUTES.find((r) => r.name === name);
  if (!found) throw new Error(`no route named ${name}`);
  return found;
}
