/**
 * `files`: what every node of the job gets before the MPI task starts, in the MPI task's working directory (the
 * ranks' working directory). Delivered by Batch as the multi-instance task's commonResourceFiles, which every node
 * downloads, the master and each subtask. Sources: one blob, every blob under a prefix (both through a short-lived
 * read-only SAS the pipeline mints, under the data-access policy), or a public https URL.
 */
import { z } from 'zod';
import {
  DATA_LIMITS,
  FILE_MODE_RE,
  RELATIVE_PATH_RE,
  SHELL_SAFE,
  blobContainer,
  blobName,
  blobPrefix,
  httpsUrlProblem,
  pattern,
  storageAccount,
  typeError,
} from './storageFields';

export const NodeFileSchema = z
  .strictObject({
    url: z
      .string({ error: typeError('must be a string: an https URL') })
      .superRefine((v, ctx) => {
        const problem = httpsUrlProblem(v);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .optional()
      .meta({
        description:
          "A public https URL (no user info, no query string, no fragment: a SAS or token never goes into a spec). Not an internal host (loopback, private, link-local, the metadata service, in any spelling) unless the deployment lists it in ALLOWED_INTERNAL_HOSTS, and never the app's own storage.",
      }),
    account: storageAccount().optional().meta({ description: 'Data account of a blob source (with blob or prefix).' }),
    container: blobContainer().optional().meta({ description: 'Container of a blob source.' }),
    blob: blobName().optional().meta({ description: 'One blob.' }),
    prefix: blobPrefix()
      .optional()
      .meta({ description: 'Every blob whose name starts with this prefix ("" = the whole container); each keeps its full blob name below path.' }),
    path: pattern(RELATIVE_PATH_RE, `a relative path in the working directory (no leading "/", no "." or ".." segments; ${SHELL_SAFE})`).optional().meta({
      description:
        "Where the file lands, relative to the MPI task's working directory. Required with url and blob; with prefix the directory the blobs land under (default: the working directory itself).",
    }),
    mode: pattern(FILE_MODE_RE, 'an octal file mode such as "0755" or "0644" (quote it in YAML)')
      .optional()
      .meta({ description: "File mode on the nodes (Batch fileMode). Default: Batch's 0770." }),
  })
  .meta({ description: 'One file (or blob prefix) delivered to every node: exactly one of url, blob, prefix.' });

export const FilesSchema = z
  .array(NodeFileSchema, { error: 'must be a list of { url | account, container, blob | account, container, prefix; path; mode }' })
  .max(DATA_LIMITS.maxFiles, { error: `must list at most ${DATA_LIMITS.maxFiles} entries` })
  .optional()
  .meta({
    description:
      "Files for every node, downloaded by Batch on each node before the MPI task (multi-instance commonResourceFiles) into the task's working directory.",
  });
