/**
 * Where an upload (POST /api/uploads) may write, decided before any SAS is signed: the account must be a data account,
 * the data-access policy must allow its container, and the prefix must lie in the caller's own area `users/<ownerKey>/`
 * or in a shared area its roles open for writing (the rule every job path follows, dataAreas.ts). Pure.
 */
import type { SharedDataArea } from '../config';
import { ownerDataArea, type DataCaller } from '../auth/dataArea';
import type { SpecError } from '../../core/spec';
import { UploadRequestSchema, type UploadRequest } from '../../core/contract/uploads';
import { areaRefusal, DATA_AREA_FORBIDDEN } from './dataAreas';

export interface UploadPlan {
  account: string;
  container: string;
  /** "" or ends in "/". */
  prefix: string;
  /** Request file name → full blob name, in the request's order. */
  files: { name: string; blob: string }[];
}

export type UploadDecision =
  { ok: true; plan: UploadPlan } | { ok: false; status: 400; errors: SpecError[] } | { ok: false; status: 403; code: string; errors: SpecError[] };

export interface UploadPolicy {
  dataAccounts: readonly string[];
  sharedAreas: readonly SharedDataArea[];
  /** Why the deployment refuses jobs this account/container (shared/core/intake/dataAccess.ts), or undefined. */
  containerRefusal: (account: string, container: string) => string | undefined;
}

/** The request body, validated: field-path errors for anything malformed, unknown fields included. */
export function parseUploadRequest(body: unknown): { ok: true; request: UploadRequest } | { ok: false; errors: SpecError[] } {
  const parsed = UploadRequestSchema.safeParse(body);
  if (parsed.success) return { ok: true, request: parsed.data };
  return {
    ok: false,
    errors: parsed.error.issues.map((i) => ({
      path:
        i.path
          .map(String)
          .join('.')
          .replace(/\.(\d+)(?=\.|$)/g, '[$1]') || '(body)',
      message: i.message,
    })),
  };
}

export function planUpload(request: UploadRequest, caller: DataCaller, policy: UploadPolicy): UploadDecision {
  const account = request.account ?? policy.dataAccounts[0];
  if (account === undefined)
    return {
      ok: false,
      status: 400,
      errors: [{ path: 'account', message: 'this deployment has no data accounts (DATA_ACCOUNTS): there is nowhere to upload' }],
    };
  if (!policy.dataAccounts.includes(account)) {
    return {
      ok: false,
      status: 400,
      errors: [{ path: 'account', message: `"${account}" is not a data account of this deployment; one of ${policy.dataAccounts.join(', ')}` }],
    };
  }
  const refused = policy.containerRefusal(account, request.container);
  if (refused) return { ok: false, status: 400, errors: [{ path: 'container', message: refused }] };
  const own = ownerDataArea(caller.owner);
  const prefix = request.prefix ?? own;
  if (prefix === undefined) {
    return {
      ok: false,
      status: 403,
      code: DATA_AREA_FORBIDDEN,
      errors: [{ path: 'prefix', message: 'you have no data area of your own: name a prefix in a shared area you may write' }],
    };
  }
  const outside = areaRefusal(caller, policy.sharedAreas, { account, container: request.container, name: prefix, access: 'write' });
  if (outside) return { ok: false, status: 403, code: DATA_AREA_FORBIDDEN, errors: [{ path: 'prefix', message: outside }] };
  const seen = new Set<string>();
  const errors: SpecError[] = [];
  request.files.forEach((f, i) => {
    if (seen.has(f.name)) errors.push({ path: `files[${i}].name`, message: `"${f.name}" is named twice` });
    seen.add(f.name);
    if (prefix.length + f.name.length > 1024)
      errors.push({ path: `files[${i}].name`, message: 'prefix and name together are longer than a blob name may be (1024 characters)' });
  });
  if (errors.length) return { ok: false, status: 400, errors };
  return { ok: true, plan: { account, container: request.container, prefix, files: request.files.map((f) => ({ name: f.name, blob: `${prefix}${f.name}` })) } };
}
