/** GET /api/openapi.json: the API description, generated from the same zod schemas that validate requests. */
import { type HttpRequest, type HttpResponseInit } from '@azure/functions';
import { buildOpenApiDocument } from '../shared/adapters/openapi';
import { registerRoute } from './lib/route';

let cached: { baseUrl: string; body: unknown } | undefined;

export function openApi(request: HttpRequest): HttpResponseInit {
  const baseUrl = new URL(request.url).origin;
  if (cached?.baseUrl !== baseUrl) cached = { baseUrl, body: buildOpenApiDocument({ baseUrl }) };
  return { status: 200, jsonBody: cached.body };
}

registerRoute('openApi', { handler: openApi });
