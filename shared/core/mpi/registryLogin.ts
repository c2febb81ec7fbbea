/**
 * How a node signs in to a private registry before the staggered pulls, with no secret in any command line:
 *
 * - `identity`: as `az acr login --identity` does it. The node asks its instance metadata service (IMDS) for an
 *   Entra token of the pool's user-assigned identity (by client id) for the registry audience, exchanges it at the
 *   registry's `/oauth2/exchange` for an ACR refresh token, and hands that to `docker login` on stdin (user
 *   00000000-0000-0000-0000-000000000000, ACR's name for a refresh-token login) or to singularity through
 *   SINGULARITY_DOCKER_USERNAME/PASSWORD. Tokens live in shell variables and pipes only (`printf` is a builtin,
 *   so they never appear in a process's arguments).
 * - `secret`: the password or token arrives in a task environment variable (filled from an app setting by the
 *   activity that adds the task, never by the orchestration, whose history is stored); the same two hand-overs.
 *
 * The IMDS address is Azure's 169.254.169.254 unless AZURE_POD_IDENTITY_AUTHORITY_HOST names another one (the
 * variable MSAL and @azure/identity honour for the same purpose; the local emulator sets it on nodes of pools that
 * have an identity). Docker treats loopback registries as plain-http ("insecure") by default, and so does the
 * exchange call here; every other registry is reached over https.
 */
import { PlanningError } from '../planning/errors';
import { shellQuote } from './shellQuote';

/** The user name ACR expects with a refresh token as the password. */
export const ACR_REFRESH_TOKEN_USER = '00000000-0000-0000-0000-000000000000';
/** The Entra audience of Azure Container Registry tokens. */
export const ACR_AUDIENCE = 'https://containerregistry.azure.net';
/** The task environment variable a referenced registry secret arrives in. */
export const REGISTRY_SECRET_ENV = 'MPIJOB_REGISTRY_PASSWORD';

export type RegistryLoginPlan =
  { kind: 'identity'; server: string; clientId: string } | { kind: 'secret'; server: string; username: string; passwordEnvVar: string };

const SERVER = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?(:\d{1,5})?$/;
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const USERNAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;

function check(login: RegistryLoginPlan): void {
  if (!SERVER.test(login.server)) throw new PlanningError('registry server must be a lowercase host name with an optional port', { server: login.server });
  if (login.kind === 'identity' && !GUID.test(login.clientId))
    throw new PlanningError("the pool identity's client id must be a lowercase GUID", { clientId: login.clientId });
  if (login.kind === 'secret') {
    if (!ENV_NAME.test(login.passwordEnvVar))
      throw new PlanningError('passwordEnvVar must be an environment variable name', { passwordEnvVar: login.passwordEnvVar });
    if (!USERNAME.test(login.username)) throw new PlanningError('registry user name has characters a registry does not accept', { username: login.username });
  }
}

/** `http` for loopback registries (Docker's default insecure registries), `https` otherwise. */
export function registryScheme(server: string): 'http' | 'https' {
  const host = server.replace(/:\d+$/, '');
  return host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host) ? 'http' : 'https';
}

/** A `sed` that prints the JSON string field `field` of a one-line JSON answer (tokens have no quotes or escapes). */
const jsonField = (field: string) => `sed -n 's/.*"${field}" *: *"\\([^"]*\\)".*/\\1/p'`;

/** Lines (for a strict script) that leave the registry password in $mpijob_registry_password. */
function passwordLines(login: RegistryLoginPlan): string[] {
  if (login.kind === 'secret') return [`mpijob_registry_password="$${login.passwordEnvVar}"`];
  const server = shellQuote(login.server);
  const resource = encodeURIComponent(ACR_AUDIENCE);
  return [
    'mpijob_imds="${AZURE_POD_IDENTITY_AUTHORITY_HOST:-http://169.254.169.254}"',
    `mpijob_aad=$(curl -sS --fail --retry 3 -H Metadata:true "$mpijob_imds/metadata/identity/oauth2/token?api-version=2018-02-01&resource=${resource}&client_id=${login.clientId}" | ${jsonField('access_token')})`,
    `if [ -z "$mpijob_aad" ]; then echo "no token for the pool identity ${login.clientId} from the instance metadata service" >&2; exit 1; fi`,
    `mpijob_registry_password=$(printf 'grant_type=access_token&service=%s&access_token=%s' ${server} "$mpijob_aad" | curl -sS --fail --retry 3 -H 'Content-Type: application/x-www-form-urlencoded' --data-binary @- ${shellQuote(`${registryScheme(login.server)}://${login.server}/oauth2/exchange`)} | ${jsonField('refresh_token')})`,
    'unset mpijob_aad',
    `if [ -z "$mpijob_registry_password" ]; then echo "registry ${login.server} gave no refresh token for the pool identity" >&2; exit 1; fi`,
  ];
}

/** Sign-in before the pulls of a task. */
export function registryLoginLines(runtime: 'docker' | 'singularity', login: RegistryLoginPlan): string[] {
  check(login);
  const username = login.kind === 'identity' ? ACR_REFRESH_TOKEN_USER : login.username;
  const lines = passwordLines(login);
  if (runtime === 'docker') {
    lines.push(`printf '%s' "$mpijob_registry_password" | docker login --username ${shellQuote(username)} --password-stdin ${shellQuote(login.server)}`);
    lines.push('unset mpijob_registry_password');
  } else {
    lines.push(`export SINGULARITY_DOCKER_USERNAME=${shellQuote(username)}`);
    lines.push('export SINGULARITY_DOCKER_PASSWORD="$mpijob_registry_password"');
  }
  return lines;
}

/** Sign-out after the pulls: the node keeps no registry credential once its images are in. */
export function registryLogoutLines(runtime: 'docker' | 'singularity', login: RegistryLoginPlan): string[] {
  check(login);
  return runtime === 'docker'
    ? [`docker logout ${shellQuote(login.server)} >/dev/null`]
    : ['unset SINGULARITY_DOCKER_USERNAME SINGULARITY_DOCKER_PASSWORD mpijob_registry_password'];
}
