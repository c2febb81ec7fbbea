/** What the identity service keeps while it runs: the issuer (directory + key), pending device codes, refresh tokens. */
import { randomBytes } from 'node:crypto';
import type { Issuer } from './tokens';
import type { LocalUser } from './directory';
import { localUser } from './directory';
import { FUNCTION_APP_IDENTITIES, ManagedIdentities, type LocalManagedIdentity } from './managedIdentities';

export interface DeviceCode {
  deviceCode: string;
  userCode: string;
  clientId: string;
  scope: string;
  expiresAt: number;
  /** Set when a user approved it on the verification page. */
  approvedBy?: string;
}

export interface RefreshGrant {
  username: string;
  clientId: string;
  scope: string;
}

export const DEVICE_CODE_SECONDS = 900;

export class IdentityState {
  readonly deviceCodes = new Map<string, DeviceCode>();
  readonly refreshTokens = new Map<string, RefreshGrant>();
  /**
   * The App Service managed identity endpoint of the local Function App (handlers/appServiceIdentity.ts): the secret
   * App Service hands the app as IDENTITY_HEADER (new at every start), and the identities assigned to the app.
   */
  readonly appService: { header: string; identities: readonly LocalManagedIdentity[] } = {
    header: randomBytes(24).toString('base64url'),
    identities: FUNCTION_APP_IDENTITIES,
  };
  /** The subscription's user-assigned identities and the emulated pools carrying them (managedIdentities.ts, handlers/imds.ts). */
  readonly managed = new ManagedIdentities();

  constructor(readonly iss: Issuer) {}

  user(username: string): LocalUser | undefined {
    return this.iss.directory.users.find((u) => u.username === username);
  }

  /** The user, added to the directory with these roles when new (the local token endpoint's test users). */
  ensureUser(username: string, roles: string[] | undefined, name?: string): LocalUser {
    const found = this.user(username);
    if (found) {
      if (roles) found.roles = roles;
      if (name) found.name = name;
      return found;
    }
    const user = localUser(username, roles ?? [], name);
    this.iss.directory.users.push(user);
    return user;
  }

  client(clientId: string) {
    return this.iss.directory.clients.find((c) => c.clientId === clientId);
  }

  newDeviceCode(clientId: string, scope: string): DeviceCode {
    const alphabet = 'BCDFGHJKLMNPQRSTVWXZ23456789';
    const bytes = randomBytes(9);
    const userCode = Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('');
    const code: DeviceCode = {
      deviceCode: randomBytes(32).toString('base64url'),
      userCode,
      clientId,
      scope,
      expiresAt: Date.now() + DEVICE_CODE_SECONDS * 1000,
    };
    this.deviceCodes.set(code.deviceCode, code);
    return code;
  }

  byUserCode(userCode: string): DeviceCode | undefined {
    const wanted = userCode.replace(/[\s-]/g, '').toUpperCase();
    return [...this.deviceCodes.values()].find((c) => c.userCode === wanted && c.expiresAt > Date.now());
  }

  newRefreshToken(grant: RefreshGrant): string {
    const token = randomBytes(48).toString('base64url');
    this.refreshTokens.set(token, grant);
    return token;
  }
}
