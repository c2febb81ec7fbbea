/** The 400 answer's body, as zod so the OpenAPI document is generated from it. */
import { z } from 'zod';

export const SpecErrorSchema = z
  .object({
    path: z.string().meta({ description: 'JSON path of the offending field, e.g. "pool.nodes" or "container.images[0]"; "" for the whole document.' }),
    message: z.string(),
    line: z.number().int().optional().meta({ description: '1-based line of a syntax error in the submitted text.' }),
    column: z.number().int().optional(),
  })
  .meta({ title: 'SpecError' });

export const ValidationErrorResponseSchema = z
  .object({ errors: z.array(SpecErrorSchema).min(1) })
  .meta({ title: 'ValidationErrorResponse', description: 'Every problem found in the submitted spec.' });

/** A 403 for an ownership rule (e.g. PoolForbidden): a code, one sentence, and the field paths as in a 400. */
export const ForbiddenRequestResponseSchema = z
  .object({
    error: z.string().meta({ description: 'Which rule refused, e.g. "PoolForbidden" (pool.poolId names a pool the caller may not use).' }),
    message: z.string(),
    errors: z.array(SpecErrorSchema).min(1),
  })
  .meta({ title: 'ForbiddenRequestResponse', description: 'The spec is valid but names something the caller may not use.' });
