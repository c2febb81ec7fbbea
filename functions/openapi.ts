/** GET /api/openapi.json: the API description, generated from the same zod schemas that validate requests. */
import { app, type HttpRequest, type HttpResponseInit } from '@azure/functions';
import { buildOpenApiDocument } from '../shared/openapi';

let cached: { baseUrl: string; body: unknown } | undefined;

export function openApi(request: HttpRequest): HttpResponseInit {
  const baseUrl = new URL(request.url).origin;
  if (cached?.baseUrl !== baseUrl) cached = { baseUrl, body: buildOpenApiDocument({ baseUrl }) };
  return { status: 200, jsonBody: cached.body };
}

app.http('openApi', { route: 'openapi.json', methods: ['GET'], authLevel: 'anonymous', handler: openApi });
