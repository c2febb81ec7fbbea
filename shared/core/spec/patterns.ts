/**
 * The character rules for every value that may end up in a Batch id, a shell line on a node, an OCI
 * reference or a storage URL. They are deliberately narrower than what each service accepts: a value
 * that passes here can be embedded anywhere without quoting surprises (no quotes, `;`, `$`, backticks,
 * whitespace, newlines, globs or leading `-`).
 */

/** Job id / idempotency key: lowercase letters, digits, hyphens; 1–64; must not start with "-" (it would read as an option). */
export const JOB_ID_RE = /^[a-z0-9][a-z0-9-]{0,63}$/;
/** Display name: letters, digits, ".", "_", "-"; 1–128; starts with a letter or digit. */
export const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** Tag key: 1–64, starts with a letter or digit, then letters, digits, ".", "_", "-". */
export const TAG_KEY_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** Tag value: 0–256 characters without whitespace, quotes or shell metacharacters. */
export const TAG_VALUE_RE = /^[A-Za-z0-9._:/@+=,-]{0,256}$/;
/** Batch pool id: letters, digits, "_" and "-", 1–64 (Batch's own rule), starting with a letter or digit. */
export const POOL_ID_RE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** Azure VM size, e.g. Standard_HB120rs_v3. */
export const VM_SIZE_RE = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
/** Marketplace image publisher / offer / sku / version segments. */
export const IMAGE_SEGMENT_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** ARM id of a managed image or Shared Image Gallery image (version). */
export const CUSTOM_IMAGE_ID_RE = /^\/subscriptions\/[A-Za-z0-9-]+\/resourceGroups\/[A-Za-z0-9._()-]+\/providers\/Microsoft\.Compute\/[A-Za-z0-9._/-]+$/;
/** Batch node agent SKU, e.g. "batch.node.ubuntu 22.04" (the single space is part of Batch's naming). */
export const NODE_AGENT_SKU_RE = /^batch\.node\.[a-z0-9.]{1,40} [a-z0-9.]{1,20}$/;

const DOMAIN_COMPONENT = '[a-z0-9](?:[a-z0-9-]*[a-z0-9])?';
const DOMAIN = `${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*(?::[0-9]{1,5})?`;
const PATH_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
/**
 * OCI image reference: [registry[:port]/]path[:tag][@digest], following the distribution reference
 * grammar (lowercase repository path, tag up to 128 characters, sha256/sha512 digest).
 */
export const OCI_REFERENCE_RE = new RegExp(
  `^(?:${DOMAIN}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@(?:sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128}))?$`,
);
/** Registry server: host name (lowercase) with an optional port. */
export const REGISTRY_SERVER_RE = new RegExp(`^${DOMAIN}$`);
/** Key Vault secret URI (optionally with a version) in any Azure cloud. */
export const KEY_VAULT_SECRET_URI_RE =
  /^https:\/\/[A-Za-z0-9-]{3,24}\.vault\.(?:azure\.net|azure\.cn|usgovcloudapi\.net|microsoftazure\.de)\/secrets\/[A-Za-z0-9-]{1,127}(?:\/[a-f0-9]{32})?$/;
/** Name of an app setting (environment variable) of the Function App holding a secret. */
export const APP_SETTING_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** Registry user name (ACR token name, service principal id, …). */
export const REGISTRY_USERNAME_RE = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;
/** Storage account name (Azure's rule). */
export const STORAGE_ACCOUNT_RE = /^[a-z0-9]{3,24}$/;
/** Blob container name (Azure's rule: 3–63, lowercase, digits, single hyphens, no leading/trailing hyphen). */
export const BLOB_CONTAINER_RE = /^(?=.{3,63}$)[a-z0-9](?:[a-z0-9]|-(?!-))*[a-z0-9]$/;
/** Blob name prefix: up to 1024 characters of a safe subset, no "..", no leading "/". */
export const BLOB_PREFIX_RE = /^(?!.*(?:^|\/)\.\.(?:\/|$))(?!\/)[A-Za-z0-9._/=+@,-]{0,1024}$/;
/** Absolute POSIX path on a node, safe subset, no "." or ".." segments. */
export const ABSOLUTE_PATH_RE = /^(?!.*(?:^|\/)\.\.?(?:\/|$))\/[A-Za-z0-9._/-]{0,1023}$/;
/** Environment variable name; AZ_BATCH_* is reserved by Batch. */
export const ENV_KEY_RE = /^(?!AZ_BATCH_)[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** One launcher option token (e.g. "--bind-to", "core", "^openib", "-genv"). */
export const MPI_OPTION_RE = /^[A-Za-z0-9_.,:=+/@%^-]{1,256}$/;
/**
 * Free text that is passed as data (commands, env values): one line of printable text. Besides the C0 and C1
 * controls (NUL, line feed, NEL U+0085, …) this refuses the Unicode line and paragraph separators (U+2028,
 * U+2029: JavaScript and some JSON tooling treat them as line breaks) and the bidirectional controls (U+061C,
 * U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), which make a command read differently from what it runs
 * ("Trojan Source").
 */
// eslint-disable-next-line no-control-regex
export const SINGLE_LINE_TEXT_RE = /^[^\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]*$/;
/** Why SINGLE_LINE_TEXT_RE refused a value, for error messages. */
export const SINGLE_LINE_TEXT_RULE =
  'must be a single line without control characters, line or paragraph separators (U+2028, U+2029) or bidirectional controls';
