/**
 * The device code flow: `POST /{tenant}/oauth2/v2.0/devicecode` hands out a user code and a verification URL;
 * the user opens `/device` in a browser, enters the code and picks who signs in (the local tenant has no passwords:
 * it is a development issuer), and the client's polling of the token endpoint then gets that user's tokens.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DEVICE_CODE_SECONDS, type IdentityState } from '../state';
import { escapeHtml, oauthError, readForm, sendHtml, sendJson } from './http';

export async function deviceAuthorization(req: IncomingMessage, res: ServerResponse, state: IdentityState, origin: string): Promise<void> {
  const form = await readForm(req);
  const clientId = form.get('client_id') ?? '';
  if (!state.client(clientId))
    return oauthError(res, 400, 'unauthorized_client', 700016, `Application with identifier '${clientId}' was not found in the directory.`);
  const code = state.newDeviceCode(clientId, form.get('scope') ?? '');
  const verificationUri = `${origin}/device`;
  sendJson(res, 200, {
    user_code: code.userCode,
    device_code: code.deviceCode,
    verification_uri: verificationUri,
    expires_in: DEVICE_CODE_SECONDS,
    interval: 1,
    message: `To sign in, use a web browser to open the page ${verificationUri} and enter the code ${code.userCode} to authenticate.`,
  });
}

/** Approves the device code for `username`; false when the code is unknown/expired or the user does not exist. */
export function approveDeviceCode(state: IdentityState, userCode: string, username: string): boolean {
  const code = state.byUserCode(userCode);
  if (!code || !state.user(username)) return false;
  code.approvedBy = username;
  return true;
}

function page(state: IdentityState, message = '', code = ''): string {
  const users = state.iss.directory.users
    .map(
      (u) =>
        `<option value="${escapeHtml(u.username)}"${u.username === state.iss.directory.defaultUser ? ' selected' : ''}>${escapeHtml(u.name)} (${escapeHtml(u.username)}: ${escapeHtml(u.roles.join(', ') || 'no roles')})</option>`,
    )
    .join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in (local identity)</title></head><body style="font-family:sans-serif;max-width:32rem;margin:3rem auto">
<h1>Sign in to the local tenant</h1><p>${escapeHtml(message)}</p>
<form method="post" action="/device"><p><label>Code <input name="code" value="${escapeHtml(code)}" autofocus required></label></p>
<p><label>Sign in as <select name="user">${users}</select></label></p><p><button type="submit">Continue</button></p></form></body></html>`;
}

export async function devicePage(req: IncomingMessage, res: ServerResponse, state: IdentityState, url: URL): Promise<void> {
  if (req.method === 'GET') return sendHtml(res, 200, page(state, 'Enter the code shown by the application.', url.searchParams.get('code') ?? ''));
  const form = await readForm(req);
  const user = form.get('user') ?? state.iss.directory.defaultUser;
  if (!approveDeviceCode(state, form.get('code') ?? '', user)) return sendHtml(res, 400, page(state, 'That code is not valid or has expired. Try again.'));
  return sendHtml(
    res,
    200,
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Signed in</title></head><body style="font-family:sans-serif;max-width:32rem;margin:3rem auto"><h1>Signed in as ${escapeHtml(user)}</h1><p>You can close this window and return to the application.</p></body></html>`,
  );
}
