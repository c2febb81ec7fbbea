/**
 * A queued job's place as the job API answers it (GET /api/jobs/{id}) and the CLI and the dashboard show it. Its own
 * module, with nothing but zod, so the dashboard can take its type without the rest of the app.
 */
import { z } from 'zod';

export const JobQueueSchema = z
  .object({
    name: z.string().meta({ description: 'The admission queue the job waits in.' }),
    state: z.enum(['waiting', 'granted', 'refused', 'notQueued']).meta({
      description:
        'waiting: in the queue; granted: admitted (about to provision); refused: can never fit; notQueued: not asking admission yet (waiting for its dependencies) or no longer.',
    }),
    position: z.number().int().optional().meta({ description: '1-based place in its queue, in the order admission considers jobs.' }),
    positionOverall: z.number().int().optional().meta({ description: '1-based place among all waiting jobs.' }),
    waitingInQueue: z.number().int().optional(),
    reason: z.string().optional().meta({ description: 'Why it waits (the limit that keeps it out), as its last admission pass said, or why it was refused.' }),
    grant: z.number().int().optional().meta({ description: 'The grant number, once admitted.' }),
    pending: z.array(z.string()).optional().meta({ description: 'Dependencies not yet at their condition.' }),
  })
  .meta({ title: 'JobQueuePosition' });
export type JobQueueView = z.infer<typeof JobQueueSchema>;
