/**
 * `checks`: how the control plane treats what it can check before paying for nodes but the user may know better.
 * `image`: the node image checks (shared/core/images/imageChecks.ts): module names, host paths and the container runtime
 * against the image catalog. "refuse" (the default) answers 400 with the field and the catalog's suggestion; "warn"
 * accepts the spec and lists the findings in explain / the dry run.
 */
import { z } from 'zod';

export const ChecksSchema = z
  .strictObject({
    image: z.enum(['refuse', 'warn'], { error: 'must be "refuse" or "warn"' }).optional().meta({
      description:
        'What a node image check finding does: "refuse" (default) refuses the spec with the field path and the catalog\'s nearest name; "warn" accepts it and lists the findings in explain (docs/images.md).',
    }),
  })
  .meta({ description: 'How checks that need no node treat their findings.' });
