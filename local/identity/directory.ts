/**
 * Who exists in the local tenant: the API's app registration (its app id URI, client id and delegated scope),
 * the client applications (the CLI as a public client, an automation client with a secret and an app role) and
 * a few users with app role assignments. Object ids are stable GUIDs derived from the names, so a job owned by
 * `dev` is still dev's after a restart. Tests add users on the fly through the local token endpoint.
 */
import { createHash } from 'node:crypto';

export interface LocalUser {
  username: string;
  name: string;
  oid: string;
  /** App role values assigned to the user on the API (Jobs.Read, Jobs.Submit, Jobs.Admin). */
  roles: string[];
}

export interface LocalClient {
  clientId: string;
  name: string;
  /** Service principal object id (the `oid` of its app-only tokens). */
  oid: string;
  /** Confidential clients authenticate with this secret; public clients have none. */
  secret?: string;
  /** App roles granted to the client as application permissions (app-only tokens). */
  appRoles: string[];
}

export interface Directory {
  tenantId: string;
  api: { clientId: string; appIdUri: string; scope: string };
  users: LocalUser[];
  clients: LocalClient[];
  /** The user the device-code page and the dashboard sign in by default. */
  defaultUser: string;
}

/** A GUID (version-4 layout) derived from a name: stable across restarts, distinct per name. */
export function stableGuid(seed: string): string {
  const h = createHash('sha256').update(seed, 'utf8').digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export const LOCAL_TENANT_ID = stableGuid('local-tenant');
export const API_APP_ID_URI = 'api://hpc-jobs';
export const CLI_CLIENT_ID = stableGuid('client:hpcjob-cli');
export const AUTOMATION_CLIENT_ID = stableGuid('client:automation');
/** The automation client's secret: a development value, like Azurite's account keys. */
export const AUTOMATION_CLIENT_SECRET = 'local-automation-secret-not-for-production';

export function localUser(username: string, roles: string[], name?: string): LocalUser {
  return { username, name: name ?? username, oid: stableGuid(`user:${username}`), roles };
}

export function defaultDirectory(): Directory {
  return {
    tenantId: LOCAL_TENANT_ID,
    api: { clientId: stableGuid('client:hpc-jobs-api'), appIdUri: API_APP_ID_URI, scope: 'user_impersonation' },
    users: [
      localUser('dev', ['Jobs.Submit'], 'Local Developer'),
      localUser('reader', ['Jobs.Read'], 'Local Reader'),
      localUser('admin', ['Jobs.Admin'], 'Local Admin'),
    ],
    clients: [
      { clientId: CLI_CLIENT_ID, name: 'hpcjob CLI', oid: stableGuid('sp:hpcjob-cli'), appRoles: [] },
      { clientId: AUTOMATION_CLIENT_ID, name: 'automation', oid: stableGuid('sp:automation'), secret: AUTOMATION_CLIENT_SECRET, appRoles: ['Jobs.Submit'] },
    ],
    defaultUser: 'dev',
  };
}
