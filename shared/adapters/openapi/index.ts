export { buildOpenApiDocument } from './document';
export type { OpenApiOptions } from './document';
