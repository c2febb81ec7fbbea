/**
 * OpenID discovery as Entra ID serves it for a tenant: `GET /{tenant}/v2.0/.well-known/openid-configuration`
 * (issuer, jwks_uri, token, device code and authorize endpoints) and `GET /{tenant}/discovery/v2.0/keys`.
 * `origin` is the listener the request came in on (https for MSAL, loopback http for the app), the issuer is
 * always the https one.
 */
import type { ServerResponse } from 'node:http';
import type { IdentityState } from '../state';
import { oauthError, sendJson } from './http';

export function openIdConfiguration(res: ServerResponse, state: IdentityState, origin: string): void {
  const t = `${origin}/${state.iss.directory.tenantId}`;
  sendJson(res, 200, {
    issuer: state.iss.issuer,
    authorization_endpoint: `${t}/oauth2/v2.0/authorize`,
    token_endpoint: `${t}/oauth2/v2.0/token`,
    device_authorization_endpoint: `${t}/oauth2/v2.0/devicecode`,
    end_session_endpoint: `${t}/oauth2/v2.0/logout`,
    jwks_uri: `${t}/discovery/v2.0/keys`,
    response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
    response_modes_supported: ['query', 'fragment', 'form_post'],
    subject_types_supported: ['pairwise'],
    id_token_signing_alg_values_supported: ['RS256'],
    token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
    grant_types_supported: ['client_credentials', 'urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
    scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
    claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'nbf', 'name', 'preferred_username', 'oid', 'tid', 'roles', 'scp', 'ver'],
    tenant_region_scope: 'local',
    cloud_instance_name: 'local',
  });
}

export function keys(res: ServerResponse, state: IdentityState): void {
  sendJson(res, 200, { keys: [state.iss.key.publicJwk] }, { 'Cache-Control': 'max-age=300' });
}

/** Entra's answer for a tenant it does not know. */
export function unknownTenant(res: ServerResponse, tenant: string): void {
  oauthError(res, 400, 'invalid_tenant', 90002, `Tenant '${tenant}' not found. Check to make sure you have the correct tenant ID.`);
}
