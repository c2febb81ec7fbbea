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
