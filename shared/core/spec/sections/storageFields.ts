/**
 * Field helpers and character rules of the data sections (files, mounts, scratch, outputs). Kept apart from
 * schema.ts, which imports the sections: importing back from it would be circular. The rules follow the same
 * principle as patterns.ts: a value that passes can be put into a Batch request, a storage URL or a shell line
 * without quoting surprises.
 */
import { z } from 'zod';

export const DATA_LIMITS = {
  maxFiles: 100,
  maxMounts: 8,
  maxOutputPatterns: 32,
  maxUrlLength: 2048,
} as const;

// The schema-level error only words the type mismatch; range checks keep their own messages.
export const typeError = (text: string) => (iss: { code: string }) => (iss.code === 'invalid_type' ? text : undefined);

export function pattern(re: RegExp, what: string) {
  return z.string({ error: typeError(`must be a string: ${what}`) }).regex(re, { error: `must be ${what}` });
}

export const SHELL_SAFE = 'no spaces, quotes, ";", "$", backticks or other shell characters';

/** A path below a directory: no leading "/", no "." or ".." segments, no empty segments. */
export const RELATIVE_PATH_RE = /^(?!\/)(?!.*(?:^|\/)\.\.?(?:\/|$))(?!.*\/\/)[A-Za-z0-9._=+@,/-]{1,1024}$/;
/** An octal file mode such as "0755" or "644" (what Batch's fileMode takes). */
export const FILE_MODE_RE = /^0?[0-7]{3}$/;
/** A glob below a directory: `*`, `**`, `?`, `[...]`, `[!...]`; no leading "/", no "." or ".." segments, no "$". */
export const GLOB_RE = /^(?!\/)(?!.*(?:^|\/)\.\.?(?:\/|$))(?!.*\/\/)[A-Za-z0-9._=+@,/*?[\]!-]{1,512}$/;
/** A mount's name: the directory under $AZ_BATCH_NODE_MOUNTS_DIR (Batch's relativeMountPath), one segment. */
export const MOUNT_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** An NFS export: `host:/path` (host a DNS name or an IPv4 address). */
export const NFS_SOURCE_RE = /^[a-z0-9](?:[a-z0-9-]{0,62})(?:\.[a-z0-9](?:[a-z0-9-]{0,62}))*:\/(?!\/)[A-Za-z0-9._/-]{0,1023}$/;
/** An IPv4 address (Azure NetApp Files volumes and Lustre MGS are reached by private address). */
export const IPV4_RE = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;
/** An NFS export path on a server: absolute, segments of letters, digits, "._-". */
export const EXPORT_PATH_RE = /^\/[A-Za-z0-9._-]{1,255}(?:\/[A-Za-z0-9._-]{1,255}){0,15}$/;
/** A Lustre file system name (Lustre's rule: up to 8 letters, digits, "_" and "-"). */
export const LUSTRE_FSNAME_RE = /^[A-Za-z0-9_-]{1,8}$/;
/**
 * A fixed path on every node (`/apps`, `/data`, `/scratch`, `/home/<user>`): absolute, normalised (no ".", "..", "//",
 * trailing "/"), segments of letters, digits, "._-", at most 4 deep. Where it may not be is FIXED_PATH_DENIED.
 */
export const FIXED_PATH_RE = /^(?:\/(?!\.\.?(?:\/|$))[A-Za-z0-9._-]{1,64}){1,4}$/;
/**
 * System paths a fixed-path mount may not be at or below: the OS (a bind mount over them would hide the node's own
 * programs or configuration), and Batch's own directories (its agent, task and mount directories live under /mnt
 * on Azure's Linux images, /mnt/resource/batch on some).
 */
export const FIXED_PATH_DENIED = [
  '/bin',
  '/boot',
  '/dev',
  '/etc',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/lost+found',
  '/media',
  '/mnt',
  '/opt',
  '/proc',
  '/root',
  '/run',
  '/sbin',
  '/snap',
  '/srv',
  '/sys',
  '/tmp',
  '/usr',
  '/var',
] as const;
/** Paths only refused themselves (their subdirectories are fine): the root, and /home (/home/<user> is a shared home). */
export const FIXED_PATH_DENIED_EXACT = ['/', '/home'] as const;

/** Why a fixed path is refused, or undefined. */
export function fixedPathProblem(p: string): string | undefined {
  if ((FIXED_PATH_DENIED_EXACT as readonly string[]).includes(p))
    return `must not be ${p} itself (a subdirectory such as ${p === '/' ? '/apps' : '/home/<user>'} is fine)`;
  const denied = FIXED_PATH_DENIED.find((d) => p === d || p.startsWith(`${d}/`) || (d.startsWith('/lib') && p.startsWith('/lib')));
  if (denied)
    return `must not be at or below ${denied}: a system or Batch directory (${FIXED_PATH_DENIED.join(', ')}, ${FIXED_PATH_DENIED_EXACT.join(', ')} are refused)`;
  return undefined;
}

/**
 * A fixed-path field (mounts[].path, scratch.path): the shape, then the deny-list, one message each. Only a
 * well-formed path is judged against the deny-list (the pattern's message already covers the rest).
 */
export function fixedPath() {
  return pattern(FIXED_PATH_RE, 'an absolute path such as /apps, /data or /home/alice (segments of letters, digits, "._-"; at most 4)').superRefine(
    (p, ctx) => {
      const problem = FIXED_PATH_RE.test(p) ? fixedPathProblem(p) : undefined;
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    },
  );
}

/** A CIFS/SMB share: `//host/share[/path]`. */
export const CIFS_SOURCE_RE = /^\/\/[a-z0-9](?:[a-z0-9-]{0,62})(?:\.[a-z0-9](?:[a-z0-9-]{0,62}))*\/[A-Za-z0-9._-]{1,80}(?:\/[A-Za-z0-9._-]{1,255})*$/;
/** Mount options handed to mount(8) or blobfuse: words of option characters separated by single spaces. */
export const MOUNT_OPTIONS_RE = /^[A-Za-z0-9,=._/:+-]+(?: [A-Za-z0-9,=._/:+-]+)*$/;
/** Azure file share name (Azure's rule: 3–63 lowercase letters, digits, single hyphens). */
export const FILE_SHARE_RE = /^(?=.{3,63}$)[a-z0-9](?:[a-z0-9]|-(?!-))*[a-z0-9]$/;
/** Name of a mount secret: the app setting MOUNT_SECRET_<name> holds the value (a Key Vault reference in Azure). */
export const SECRET_REF_RE = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
/** The app setting a mount secret reference names. */
export const MOUNT_SECRET_SETTING_PREFIX = 'MOUNT_SECRET_';
/** CIFS user: letters, digits and "._@-". */
export const CIFS_USER_RE = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;

/** An https URL's host and path, as far as a job spec may write them: no user info, no query, no fragment. */
const HTTPS_URL_RE = /^https:\/\/[a-z0-9](?:[a-z0-9-]{0,62})(?:\.[a-z0-9](?:[a-z0-9-]{0,62}))*(?::[0-9]{1,5})?\/[A-Za-z0-9._~%/+=,@:-]*$/;

/**
 * Why a URL of `files` is refused, or undefined. Only plain https: no credentials in the URL, and no query string
 * at all, because a query is where a SAS (or any other token) travels, and a spec is stored in Table Storage and
 * shown in job views. Blobs of the deployment's data accounts are named by account/container/blob instead, so the
 * data-access policy applies and the pipeline mints a short-lived read-only SAS itself.
 */
export function httpsUrlProblem(url: string): string | undefined {
  if (url.length > DATA_LIMITS.maxUrlLength) return `must be at most ${DATA_LIMITS.maxUrlLength} characters`;
  if (!/^https:\/\//i.test(url)) return 'must be an https:// URL (plain http is refused: the download would not be authenticated)';
  if (url.includes('?'))
    return 'must not carry a query string: a SAS or other token does not belong in a job spec (name a blob with account, container and blob instead; the pipeline mints a short-lived read-only SAS)';
  if (url.includes('#')) return 'must not carry a fragment (#…)';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be a valid URL';
  }
  if (parsed.username || parsed.password || url.slice(8).split('/')[0].includes('@')) return 'must not carry a user name or password';
  if (!HTTPS_URL_RE.test(url)) {
    return 'must be https://<host>[:port]/<path> with a lowercase DNS name or IPv4 address and a path of letters, digits and "._~%/+=,@:-"';
  }
  if (parsed.pathname === '/') return 'must name a file (the path is empty)';
  return undefined;
}

export const storageAccount = () => pattern(/^[a-z0-9]{3,24}$/, 'a storage account name (3–24 lowercase letters and digits)');
export const blobContainer = () =>
  pattern(/^(?=.{3,63}$)[a-z0-9](?:[a-z0-9]|-(?!-))*[a-z0-9]$/, 'a blob container name (3–63 lowercase letters, digits and single hyphens)');
export const blobName = () =>
  pattern(/^(?!.*(?:^|\/)\.\.(?:\/|$))(?!\/)[A-Za-z0-9._/=+@,-]{1,1024}$/, `a blob name (letters, digits, "._/=+@,-", no "..", no leading "/"; ${SHELL_SAFE})`);
export const blobPrefix = () =>
  pattern(
    /^(?!.*(?:^|\/)\.\.(?:\/|$))(?!\/)[A-Za-z0-9._/=+@,-]{0,1024}$/,
    `a blob name prefix (letters, digits, "._/=+@,-", no "..", no leading "/"; ${SHELL_SAFE})`,
  );
