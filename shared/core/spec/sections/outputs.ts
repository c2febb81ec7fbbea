/**
 * `outputs`: what outlives the pool. Glob patterns uploaded to a blob container of a data account under a prefix
 * (default: users/<ownerKey>/jobs/<job id>, the owner's data area) through Batch task output files, before any cleanup; every rank's stdout/stderr too.
 */
import { z } from 'zod';
import { DATA_LIMITS, GLOB_RE, MOUNT_NAME_RE, SHELL_SAFE, blobContainer, blobPrefix, pattern, storageAccount } from './storageFields';

export const OutputPatternSchema = z.strictObject({
  pattern: z
    .string({ error: 'must be a string: a glob such as "results/**/*.dat"' })
    .regex(GLOB_RE, { error: `must be a relative glob ("*", "**", "?", "[…]"; no leading "/", no "." or ".." segments; ${SHELL_SAFE})` })
    .meta({
      description: 'Glob relative to `from` (Batch filePattern rules: "**" spans directories; names starting with "." only when the pattern names them).',
    }),
  from: z.enum(['workdir', 'scratch', 'allNodes', 'mount'], { error: 'must be one of "workdir", "scratch", "allNodes", "mount"' }).default('workdir').meta({
    description:
      '"workdir": the master\'s working directory (blobs <prefix>/workdir/…); "scratch": the shared scratch, uploaded once (<prefix>/scratch/…); "allNodes": the working directory of every node (<prefix>/nodes/<nodeId>/…); "mount": one of the job\'s mounts, named by `mount`, read on the master and uploaded once (<prefix>/mounts/<mount>/…).',
  }),
  mount: pattern(MOUNT_NAME_RE, 'the name of one of mounts').optional().meta({
    description:
      'With from "mount": the mount the pattern is relative to (its fixed path and $AZ_BATCH_NODE_MOUNTS_DIR/<name> are the same files). The blobs still go under the job\'s prefix, in the submitter\'s data area.',
  }),
});

export const OutputsSchema = z
  .strictObject({
    account: storageAccount().meta({ description: 'Data account the outputs go to (the data-access policy applies).' }),
    container: blobContainer(),
    prefix: blobPrefix().optional().meta({
      description:
        'Blob name prefix of every output ("" is refused); it must lie in the submitter\'s data area users/<ownerKey>/ or a shared area it may write (docs/security.md, "Data areas"). Default: users/<ownerKey>/jobs/<job id>, written into the recorded spec at intake.',
    }),
    when: z
      .enum(['always', 'success', 'failure'], { error: 'must be one of "always", "success", "failure"' })
      .default('always')
      .meta({ description: 'Upload the files on success (MPI exit code 0), failure, or always. Logs are uploaded always.' }),
    files: z
      .array(OutputPatternSchema, { error: 'must be a list of { pattern, from }' })
      .max(DATA_LIMITS.maxOutputPatterns, { error: `must list at most ${DATA_LIMITS.maxOutputPatterns} patterns` })
      .default([])
      .meta({ description: 'What to upload.' }),
    logs: z.boolean({ error: 'must be true or false' }).default(true).meta({
      description:
        "Also keep the logs under <prefix>/logs/: the master's stdout/stderr (every rank's output as the launcher collects it), one file pair per rank, and every node's task stdout/stderr.",
    }),
    onUploadFailure: z.enum(['report', 'fail'], { error: 'must be "report" or "fail"' }).default('report').meta({
      description:
        '"report": the job\'s state follows the MPI exit code and the failed uploads are listed in result.outputs.errors; "fail": an upload failure fails the job.',
    }),
  })
  .meta({ description: 'Files uploaded to blob storage before the pool goes away, listed in the job result and fetched with `hpcjob download`.' });
