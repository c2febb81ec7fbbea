/** The job specification: schema, parsing, defaults, identity. Pure: no I/O. */
export {
  JobSpecSchema,
  PoolSchema,
  ContainerSchema,
  DataSchema,
  MpiSchema,
  LimitsSchema,
  CleanupSchema,
  RegistrySchema,
  MarketplaceImageSchema,
  LIMITS,
  DEFAULT_IMAGE,
  DEFAULT_NODE_AGENT_SKU,
  DEFAULT_SHARD_SIZE_MB,
} from './schema';
export type { JobSpec, JobSpecInput, MpiRuntime, ContainerRuntime, Fabric } from './schema';
export { parseJobSpec, validateJobSpec, MAX_SPEC_TEXT_CHARS } from './parse';
export type { SpecError, ParseJobSpecResult } from './parse';
export { specHash, deriveJobId, diffSpecs } from './identity';
export { canonicalJson } from './canonical';
export { normalizeSpec, isPoolReuse, resolveDestination } from './normalize';
export { parseIsoDuration, formatIsoDuration } from './duration';
export { formatPath } from './path';
export { SpecErrorSchema, ValidationErrorResponseSchema } from './errorSchemas';
