/**
 * Node user accounts (ComputeNode_AddUser, _UpdateUser, _DeleteUser) and the remote login settings that go with
 * them (ComputeNode_GetRemoteLoginSettings). No operating-system account is made: the node keeps a table of its
 * users (NodeRecord.users, dropped by a reimage, as the OS disk they lived on), and Batch's rules are applied at
 * the door: only on an idle or running node (409 otherwise), a name of 1-20 characters that both Linux and Windows
 * take, a password on a Windows node, no SSH key on one, an OpenSSH base64 key, 409 NodeUserExists on a repeated
 * name, 404 NodeUserNotFound for an unknown one. UpdateUser replaces every updatable property ("if the expiryTime
 * element is not specified, the current value is replaced with the default value"). No SSH server listens: the
 * remote login settings name the node's address and port 22, which a test can read but not log in to.
 */
import type { NodeRecord, NodeUser, PoolRecord } from '../model/types';
import { BatchHttpError, errors } from './errors';
import { jsonBody, type Handler } from './http';
import { nodeOr404 } from './pools';

/** "If omitted, the default is 1 day from the current time." */
const DEFAULT_EXPIRY_MS = 24 * 3600_000;
/** Account names both node OSes take: at most 20 characters (the Windows limit Batch applies to user accounts), letters, digits, "_", "." and "-", not starting with "." or "-". */
const USER_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,19}$/;
const SSH_KEY =
  /^(ssh-rsa|ssh-ed25519|ssh-dss|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,2}( [^\n]*)?$/;
const READY = new Set(['idle', 'running']);

const isWindows = (pool: PoolRecord) =>
  /^batch\.node\.windows/i.test(String((pool.spec.virtualMachineConfiguration as { nodeAgentSKUId?: unknown } | undefined)?.nodeAgentSKUId ?? ''));

function requireReady(node: NodeRecord, what: string): void {
  if (!READY.has(node.state)) {
    throw errors.conflict('NodeNotReady', `A user account can be ${what} only while the node is idle or running; the node is ${node.state}.`);
  }
}

function optionalString(b: Record<string, unknown>, prop: string): string | undefined {
  const v = b[prop];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw errors.invalid(prop, v, 'must be a string');
  return v;
}

/** The credentials and expiry of an add or update, checked against the node's OS. */
function credentials(pool: PoolRecord, b: Record<string, unknown>): Pick<NodeUser, 'password' | 'sshPublicKey' | 'expiryTime'> {
  const password = optionalString(b, 'password');
  const sshPublicKey = optionalString(b, 'sshPublicKey');
  if (isWindows(pool)) {
    if (sshPublicKey !== undefined) throw errors.invalid('sshPublicKey', sshPublicKey, 'an SSH public key can be given only for Linux compute nodes');
    if (!password) throw errors.missing('password');
  } else {
    if (sshPublicKey !== undefined && !SSH_KEY.test(sshPublicKey.trim()))
      throw errors.invalid('sshPublicKey', sshPublicKey, 'the key must be in OpenSSH format: <type> <base64 key> [comment]');
    if (!password && !sshPublicKey) throw errors.missing('password');
  }
  if (password !== undefined && password.length === 0) throw errors.invalid('password', '', 'the password must not be empty');
  const expiry = optionalString(b, 'expiryTime');
  const expiryTime = expiry === undefined ? new Date(Date.now() + DEFAULT_EXPIRY_MS) : new Date(expiry);
  if (Number.isNaN(expiryTime.getTime()) || (expiry !== undefined && !/^\d{4}-\d\d-\d\dT/.test(expiry)))
    throw errors.invalid('expiryTime', expiry, 'not an ISO 8601 date-time');
  return { password, sshPublicKey, expiryTime };
}

const addUser: Handler = (ctx, p, s) => {
  const { pool, node } = nodeOr404(s, p.poolId, p.nodeId);
  const b = jsonBody(ctx);
  const name = b.name;
  if (name === undefined || name === null || name === '') throw errors.missing('name');
  if (typeof name !== 'string' || !USER_NAME.test(name))
    throw errors.invalid('name', name, 'a user name is 1-20 letters, digits, underscores, dots and hyphens, not starting with a dot or hyphen');
  if (b.isAdmin !== undefined && typeof b.isAdmin !== 'boolean') throw errors.invalid('isAdmin', b.isAdmin, 'must be true or false');
  const creds = credentials(pool, b);
  requireReady(node, 'added');
  node.users ??= new Map();
  if (node.users.has(name.toLowerCase())) throw errors.conflict('NodeUserExists', `The specified node user ${name} already exists.`);
  node.users.set(name.toLowerCase(), { name, isAdmin: b.isAdmin === true, ...creds });
  const url = `${ctx.baseUrl}/pools/${pool.id}/nodes/${node.id}/users/${name}`;
  return { status: 201, headers: { DataServiceId: url, Location: url } };
};

function userOr404(node: NodeRecord, name: string): NodeUser {
  const user = node.users?.get(name.toLowerCase());
  if (!user) throw new BatchHttpError(404, 'NodeUserNotFound', `The specified node user ${name} does not exist.`);
  return user;
}

const updateUser: Handler = (ctx, p, s) => {
  const { pool, node } = nodeOr404(s, p.poolId, p.nodeId);
  const user = userOr404(node, p.userName);
  const creds = credentials(pool, jsonBody(ctx));
  requireReady(node, 'updated');
  // Every updatable property is replaced: an omitted password or key is removed.
  Object.assign(user, { password: undefined, sshPublicKey: undefined }, creds);
  return { status: 200, headers: { DataServiceId: `${ctx.baseUrl}/pools/${pool.id}/nodes/${node.id}/users/${user.name}` } };
};

const deleteUser: Handler = (ctx, p, s) => {
  const { node } = nodeOr404(s, p.poolId, p.nodeId);
  userOr404(node, p.userName);
  requireReady(node, 'deleted');
  node.users?.delete(p.userName.toLowerCase());
  return { status: 200 };
};

const remoteLoginSettings: Handler = (_ctx, p, s) => {
  const { node } = nodeOr404(s, p.poolId, p.nodeId);
  return { status: 200, body: { remoteLoginIPAddress: node.ipAddress, remoteLoginPort: 22 } };
};

export const nodeUserRoutes: [string, string, Handler][] = [
  ['POST', 'pools/{poolId}/nodes/{nodeId}/users', addUser],
  ['PUT', 'pools/{poolId}/nodes/{nodeId}/users/{userName}', updateUser],
  ['DELETE', 'pools/{poolId}/nodes/{nodeId}/users/{userName}', deleteUser],
  ['GET', 'pools/{poolId}/nodes/{nodeId}/remoteloginsettings', remoteLoginSettings],
];
