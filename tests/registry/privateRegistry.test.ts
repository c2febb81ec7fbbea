/**
 * The local registry as a private one (ACR's token service, local/registry/auth.ts), with the node tools doing what
 * docker and singularity do against ACR, and the pull task's own sign-in lines (shared/core/mpi/registryLogin.ts) run for
 * real in bash on an emulated node:
 *  - by the pool identity: the node's instance metadata service (the local identity service) → /oauth2/exchange →
 *    docker login / SINGULARITY_DOCKER_* → challenge → token → pull;
 *  - by a registry credential arriving in the task environment;
 *  - refused: anonymous pulls, a wrong password, wrong/expired/forged access and refresh tokens, an Entra token of
 *    an identity without AcrPull (its pull is denied), an Entra token for another audience.
 * Real processes, a real registry and identity service on loopback; nothing mocked.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { startRegistry, type RegistryHandle } from '../../local/registry';
import { startIdentityService, type IdentityService } from '../../local/identity';
import { localIdentityWiring, type LocalIdentityWiring } from '../../local/supervisor/identityWiring';
import { buildDemoImage } from '../../examples/images/buildDemoImage';
import { registryLoginLines, registryLogoutLines, REGISTRY_SECRET_ENV, type RegistryLoginPlan } from '../../shared/core/mpi/registryLogin';
import { sifPullLines } from '../../shared/core/mpi/singularity';
import { cleanupNodes, makeBaseDir, makeNode, runTool, type TestNode } from './nodeHarness';

let registry: RegistryHandle;
let identity: IdentityService;
let wiring: LocalIdentityWiring;
let credential: { username: string; password: string };
let base: string;
let poolImds: { endpoint: string; close(): void };
let appImds: { endpoint: string; close(): void };
let ref: string;
let repo: string;

beforeAll(async () => {
  base = await makeBaseDir('private-registry-');
  identity = await startIdentityService();
  wiring = localIdentityWiring(identity);
  credential = wiring.registryCredential();
  registry = await startRegistry({ images: [await buildDemoImage({ fillerBytes: 16 * 1024 })], auth: wiring.registryAuth(credential) });
  ref = `${registry.host}/hpc/mpi-demo:1.0`;
  repo = 'hpc/mpi-demo';
  // A node of a pool carrying id-pool-local (AcrPull), and a host carrying only id-app-local (no AcrPull on the registry).
  poolImds = identity.openImds([wiring.pool.resourceId]);
  appImds = identity.openImds([wiring.app.resourceId]);
}, 120_000);

afterAll(async () => {
  poolImds?.close();
  appImds?.close();
  await registry?.stop();
  await identity?.stop();
  if (base) await cleanupNodes(base);
});

/** Runs `lines` as the pull task would (bash, strict), with the node's environment plus `env`. */
function bash(node: TestNode, lines: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('/bin/bash', ['-c', ['set -euo pipefail', ...lines].join('; ')], { env: { ...node.env, ...env }, cwd: node.taskDir }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, stdout, stderr });
    });
  });
}

async function token(path_: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${registry.url}${path_}`, init);
}

const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

test("without a token every /v2 route is 401 with ACR's Bearer challenge; anonymous tokens grant nothing", async () => {
  const ping = await token('/v2/');
  expect(ping.status).toBe(401);
  expect(ping.headers.get('www-authenticate')).toBe(`Bearer realm="http://${registry.host}/oauth2/token",service="${registry.host}"`);
  const manifest = await token(`/v2/${repo}/manifests/1.0`);
  expect(manifest.status).toBe(401);
  expect(manifest.headers.get('www-authenticate')).toBe(
    `Bearer realm="http://${registry.host}/oauth2/token",service="${registry.host}",scope="repository:${repo}:pull"`,
  );
  expect(((await manifest.json()) as { errors: { code: string }[] }).errors[0].code).toBe('UNAUTHORIZED');
  // No credentials at the realm: refused, as ACR with anonymous pull disabled.
  expect((await token(`/oauth2/token?service=${registry.host}&scope=repository:${repo}:pull`)).status).toBe(401);
});

test('the credential gets a pull token at the realm; a wrong password, a forged token or an Entra token is refused', async () => {
  const ok = await token(`/oauth2/token?service=${registry.host}&scope=repository:${repo}:pull`, {
    headers: { Authorization: basic(credential.username, credential.password) },
  });
  expect(ok.status).toBe(200);
  const access = ((await ok.json()) as { access_token: string }).access_token;
  expect((await token(`/v2/${repo}/tags/list`, { headers: { Authorization: `Bearer ${access}` } })).status).toBe(200);
  // The token is for this repository only.
  expect((await token('/v2/other/tags/list', { headers: { Authorization: `Bearer ${access}` } })).status).toBe(403);

  const wrong = await token(`/oauth2/token?service=${registry.host}&scope=repository:${repo}:pull`, {
    headers: { Authorization: basic(credential.username, `${credential.password}x`) },
  });
  expect(wrong.status).toBe(401);
  // A token with its signature altered.
  const [h, p, s] = access.split('.');
  const forged = `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), sub: 'someone-else' })).toString('base64url')}.${s}`;
  expect((await token(`/v2/${repo}/tags/list`, { headers: { Authorization: `Bearer ${forged}` } })).status).toBe(401);
  // An Entra token is not a registry access token.
  const aad = await identity.resourceToken('https://containerregistry.azure.net', { identity: wiring.pool });
  expect((await token(`/v2/${repo}/tags/list`, { headers: { Authorization: `Bearer ${aad}` } })).status).toBe(401);
});

test('/oauth2/exchange trades a pool identity token for a refresh token; expired, foreign-audience and unsigned Entra tokens are refused', async () => {
  const exchange = (accessToken: string) =>
    token('/oauth2/exchange', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'access_token', service: registry.host, access_token: accessToken }),
    });
  const good = await exchange(await identity.resourceToken('https://containerregistry.azure.net', { identity: wiring.pool }));
  expect(good.status).toBe(200);
  const refresh = ((await good.json()) as { refresh_token: string }).refresh_token;
  // The refresh token buys an access token (POST, as docker does with an identity token) …
  const access = await token('/oauth2/token', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', service: registry.host, scope: `repository:${repo}:pull`, refresh_token: refresh }),
  });
  expect(access.status).toBe(200);
  // … and works as the password of ACR's null-GUID user.
  expect(
    (
      await token(`/oauth2/token?service=${registry.host}&scope=repository:${repo}:pull`, {
        headers: { Authorization: basic('00000000-0000-0000-0000-000000000000', refresh) },
      })
    ).status,
  ).toBe(200);

  expect(
    (await exchange(await identity.resourceToken('https://containerregistry.azure.net', { identity: wiring.pool }, { lifetimeSeconds: -600 }))).status,
  ).toBe(401);
  expect((await exchange(await identity.resourceToken('https://storage.azure.com/', { identity: wiring.pool }))).status).toBe(401);
  const valid = await identity.resourceToken('https://containerregistry.azure.net', { identity: wiring.pool });
  const [h, p] = valid.split('.');
  expect((await exchange(`${h}.${p}.`)).status).toBe(401);
  const tampered = await token('/oauth2/token', {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      service: registry.host,
      scope: `repository:${repo}:pull`,
      refresh_token: `${refresh.slice(0, -4)}AAAA`,
    }),
  });
  expect(tampered.status).toBe(401);
});

test('an access token or refresh token past its lifetime is refused', async () => {
  // Lifetimes of 4 s: each token is used right after it is issued (accepted), then again once it has expired.
  const shortLived = await startRegistry({
    images: [await buildDemoImage({ fillerBytes: 16 * 1024 })],
    auth: { ...wiring.registryAuth(credential), accessTokenSeconds: 4, refreshTokenSeconds: 4 },
  });
  try {
    const at = (p: string, init: RequestInit = {}) => fetch(`${shortLived.url}${p}`, init);
    const aad = await identity.resourceToken('https://containerregistry.azure.net', { identity: wiring.pool });
    const refresh = (
      (await (
        await at('/oauth2/exchange', { method: 'POST', body: new URLSearchParams({ grant_type: 'access_token', service: shortLived.host, access_token: aad }) })
      ).json()) as { refresh_token: string }
    ).refresh_token;
    const viaRefresh = () =>
      at(`/oauth2/token?service=${shortLived.host}&scope=repository:${repo}:pull`, {
        headers: { Authorization: basic('00000000-0000-0000-0000-000000000000', refresh) },
      });
    const issued = await viaRefresh();
    expect(issued.status).toBe(200);
    const access = ((await issued.json()) as { access_token: string }).access_token;
    expect((await at(`/v2/${repo}/tags/list`, { headers: { Authorization: `Bearer ${access}` } })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 5200));
    const late = await at(`/v2/${repo}/tags/list`, { headers: { Authorization: `Bearer ${access}` } });
    expect(late.status).toBe(401);
    expect(((await late.json()) as { errors: { message: string }[] }).errors[0].message).toMatch(/expired/);
    expect((await viaRefresh()).status).toBe(401);
  } finally {
    await shortLived.stop();
  }
});

describe("the pull task's sign-in on an emulated node", () => {
  let node: TestNode;
  beforeAll(async () => {
    node = await makeNode(base, 'node-1');
  });

  const identityLogin = (): RegistryLoginPlan => ({ kind: 'identity', server: registry.host, clientId: wiring.pool.clientId });

  test('docker: the pool identity signs in through IMDS and /oauth2/exchange, pulls, and signs out; no token in any argument', async () => {
    const lines = [...registryLoginLines('docker', identityLogin()), `docker pull ${ref}`, ...registryLogoutLines('docker', identityLogin())];
    // Nothing secret is written into the script: only the identity's client id and the registry.
    expect(lines.join('\n')).not.toMatch(/eyJ|Bearer /);
    const run = await bash(node, lines, { AZURE_POD_IDENTITY_AUTHORITY_HOST: poolImds.endpoint });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Login Succeeded');
    expect(run.stdout).toContain(`Status: Downloaded newer image for ${ref}`);
    expect((await runTool(node, 'docker', ['images', '--format', '{{.Repository}}:{{.Tag}}'])).stdout).toContain(ref);
    // Signed out: the node keeps no registry credential (docker login wrote the file, docker logout emptied it).
    expect(JSON.parse(await readFile(path.join(node.root, 'docker', 'config.json'), 'utf8'))).toEqual({ auths: {} });
  });

  test('docker: an identity without AcrPull signs in but is denied the pull', async () => {
    const other = await makeNode(base, 'node-app');
    const login: RegistryLoginPlan = { kind: 'identity', server: registry.host, clientId: wiring.app.clientId };
    const run = await bash(other, [...registryLoginLines('docker', login), `docker pull ${ref}`], { AZURE_POD_IDENTITY_AUTHORITY_HOST: appImds.endpoint });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/pull access denied .*denied: requested access to the resource is denied/);
  });

  test('docker: a node whose pool does not carry the identity gets no token', async () => {
    const other = await makeNode(base, 'node-noid');
    const run = await bash(other, registryLoginLines('docker', identityLogin()), { AZURE_POD_IDENTITY_AUTHORITY_HOST: appImds.endpoint });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/error: 400|returned error: 400/);
  });

  test('docker: without signing in the pull is refused', async () => {
    const other = await makeNode(base, 'node-anon');
    const run = await runTool(other, 'docker', ['pull', ref]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/unauthorized: authentication required/);
  });

  test('docker: the credential from the task environment signs in; a wrong one is refused by docker login', async () => {
    const other = await makeNode(base, 'node-secret');
    const login: RegistryLoginPlan = { kind: 'secret', server: registry.host, username: credential.username, passwordEnvVar: REGISTRY_SECRET_ENV };
    const lines = [...registryLoginLines('docker', login), `docker pull ${ref}`, ...registryLogoutLines('docker', login)];
    expect(lines.join('\n')).not.toContain(credential.password);
    const ok = await bash(other, lines, { [REGISTRY_SECRET_ENV]: credential.password });
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    const bad = await bash(other, lines, { [REGISTRY_SECRET_ENV]: 'not-the-password' });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/unauthorized: incorrect username or password/);
  });

  test('singularity: the pool identity and the credential both pull through the challenge; nothing without them', async () => {
    const sing = await makeNode(base, 'node-sing');
    const cacheKey = 'job-a';
    const pull = sifPullLines(cacheKey, 0, { uri: `docker://${ref}` });
    const byIdentity = await bash(
      sing,
      [...registryLoginLines('singularity', identityLogin()), ...pull, ...registryLogoutLines('singularity', identityLogin())],
      {
        AZURE_POD_IDENTITY_AUTHORITY_HOST: poolImds.endpoint,
        AZ_BATCH_NODE_SHARED_DIR: path.join(sing.root, 'shared'),
      },
    );
    expect(byIdentity.stderr).not.toMatch(/FATAL/);
    expect(byIdentity.code).toBe(0);
    expect(byIdentity.stdout).toContain('image 0 ready');

    const login: RegistryLoginPlan = { kind: 'secret', server: registry.host, username: credential.username, passwordEnvVar: REGISTRY_SECRET_ENV };
    const bySecret = await bash(sing, [...registryLoginLines('singularity', login), ...sifPullLines('job-b', 0, { uri: `docker://${ref}` })], {
      [REGISTRY_SECRET_ENV]: credential.password,
      AZ_BATCH_NODE_SHARED_DIR: path.join(sing.root, 'shared'),
    });
    expect(bySecret.code).toBe(0);

    const anonymous = await bash(sing, sifPullLines('job-c', 0, { uri: `docker://${ref}` }), { AZ_BATCH_NODE_SHARED_DIR: path.join(sing.root, 'shared') });
    expect(anonymous.code).not.toBe(0);
    expect(anonymous.stderr).toMatch(/FATAL: +While making image from oci registry: .*unauthorized/);
  });
});
