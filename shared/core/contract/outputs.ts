/**
 * GET /api/jobs/{id}/outputs: a job's outputs with a short-lived read-only SAS URL per file, minted for the caller
 * (the job result keeps plain URLs only). Declared once: the function answers it, the OpenAPI document describes it
 * and the CLI (`hpcjob download`) reads it.
 */
import { z } from 'zod';

export const DownloadableOutputSchema = z
  .object({
    name: z.string().meta({ description: 'Path relative to the prefix: workdir/…, scratch/…, nodes/<nodeId>/…, logs/….' }),
    size: z.number(),
    lastModified: z.string().optional(),
    url: z.string().meta({ description: 'Read-only SAS URL of the blob, valid until expiresAt.' }),
  })
  .meta({ title: 'DownloadableOutput' });

export const JobOutputsResponseSchema = z
  .object({
    jobId: z.string(),
    state: z.string().meta({ description: "The job's state: outputs appear once the MPI task has ended." }),
    container: z.string().meta({ description: 'URL of the container (no SAS).' }),
    prefix: z.string(),
    files: z.array(DownloadableOutputSchema),
    expiresAt: z.string().meta({ description: 'When the SAS URLs stop working.' }),
    continuationToken: z.string().optional().meta({ description: 'Pass back as continuationToken for the next page.' }),
    errors: z.array(z.string()).optional().meta({ description: 'Uploads that failed, as recorded in the job result.' }),
  })
  .meta({ title: 'JobOutputsResponse' });
export type JobOutputsResponse = z.infer<typeof JobOutputsResponseSchema>;

/** How many files one page lists at most (and by default). */
export const OUTPUTS_PAGE_MAX = 5000;
export const OUTPUTS_PAGE_DEFAULT = 1000;
/** How long the SAS URLs of one answer live (the deployment's cap is lower if it says so). */
export const OUTPUTS_SAS_MINUTES = 60;
