/**
 * POST /api/uploads: short-lived write access to exactly the blobs a caller uploads, in its own data area (or a shared
 * area its roles let it write). Declared once, as zod schemas, so the function validates with them, the OpenAPI
 * document describes them and the CLI (`hpcjob upload`) reads the answer typed.
 */
import { z } from 'zod';

/** Most files one request may name (the CLI asks in batches). */
export const UPLOAD_FILES_MAX = 500;
/** How long the upload URLs live, at most (the deployment's SAS cap may be shorter). */
export const UPLOAD_SAS_MINUTES = 60;
/** What an upload URL lets its holder do on its one blob: read (its size and MD5, to resume), create and write. */
export const UPLOAD_SAS_PERMISSIONS = 'rcw';

const BlobPath = z
  .string()
  .min(1)
  .max(1024)
  .refine(
    (s) => !s.startsWith('/') && !s.split('/').some((p) => p === '' || p === '.' || p === '..'),
    'must be a relative path of non-empty segments without "." or ".."',
  )
  .refine((s) => !s.includes('\\') && ![...s].some((c) => c.charCodeAt(0) < 0x20), 'must not contain backslashes or control characters');

export const UploadRequestSchema = z
  .strictObject({
    account: z.string().min(1).max(64).optional().meta({ description: 'A data account (DATA_ACCOUNTS); default: the first.' }),
    container: z
      .string()
      .regex(/^[a-z0-9](?:[a-z0-9]|-(?!-)){1,61}[a-z0-9]$/, 'must be a storage container name (3–63 lowercase letters, digits and single hyphens)'),
    prefix: z
      .string()
      .max(1024)
      .optional()
      .refine(
        (s) =>
          s === undefined ||
          s === '' ||
          (s.endsWith('/') &&
            !s.startsWith('/') &&
            !s
              .slice(0, -1)
              .split('/')
              .some((p) => p === '' || p === '.' || p === '..')),
        'must be empty or a blob prefix ending in "/" without empty, "." or ".." segments',
      )
      .meta({
        description:
          'Where the files go: a prefix in your own data area (users/<ownerKey>/…, GET /api/me) or in a shared area you may write; default: your own area.',
      }),
    files: z
      .array(
        z.strictObject({
          name: BlobPath.meta({ description: "The blob name below the prefix (the file's path relative to what you upload)." }),
        }),
      )
      .min(1)
      .max(UPLOAD_FILES_MAX),
  })
  .meta({ title: 'UploadRequest' });
export type UploadRequest = z.infer<typeof UploadRequestSchema>;

export const UploadResponseSchema = z
  .object({
    account: z.string(),
    container: z.string(),
    prefix: z.string(),
    expiresAt: z.string(),
    permissions: z.string().meta({ description: 'What each URL allows on its one blob: r (read its properties, to resume), c, w.' }),
    files: z.array(
      z.object({
        name: z.string(),
        blob: z.string().meta({ description: 'The full blob name (prefix + name): what a job spec names.' }),
        url: z.string().meta({ description: "The blob's URL with a SAS for exactly this blob, valid until expiresAt." }),
      }),
    ),
    directoryUrl: z.string().optional().meta({
      description: 'On an account with a hierarchical namespace (DATA_ACCOUNTS_HNS): the container URL with a directory SAS (cw) on exactly the prefix.',
    }),
  })
  .meta({ title: 'UploadResponse' });
export type UploadResponse = z.infer<typeof UploadResponseSchema>;
