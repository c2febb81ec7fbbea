/**
 * Whether this deployment can honour a job's secret references and licence servers, checked at the door with field
 * paths: a secret is read on the node with the pool's managed identity, so a deployment without a pool identity
 * (POOL_IDENTITY_RESOURCE_ID and the settings that go with it) refuses every secretRef; and LM_LICENSE_FILE is the
 * pipeline's once the job declares licence servers.
 */
import type { JobSpec, SpecError } from '../spec';
import { isSecretEnvValue, parseLicenseServer } from '../spec/sections/secrets';
import { classifyHost, internalHostAllowed } from '../spec/address';

const NO_IDENTITY =
  'this deployment has no pool identity (POOL_IDENTITY_RESOURCE_ID and the settings that go with it), so nodes cannot read Key Vault; a secret cannot be taken any other way (never as a plain value)';

export function checkSecretPolicy(spec: JobSpec, policy: { poolIdentity?: boolean }, allowedInternalHosts: readonly string[] = []): SpecError[] {
  const errors: SpecError[] = [];
  spec.licenses.forEach((l, i) => {
    const server = parseLicenseServer(l.server);
    if (!server) return;
    const verdict = classifyHost(server.host);
    if (verdict.internal && /loopback/.test(verdict.why) && !internalHostAllowed(allowedInternalHosts, server.host, String(server.port))) {
      errors.push({
        path: `licenses[${i}].server`,
        message: `names ${verdict.why}; a licence server must be another host (private addresses are fine), unless the deployment lists it in ALLOWED_INTERNAL_HOSTS`,
      });
    }
  });
  if (!policy.poolIdentity) {
    for (const [name, value] of Object.entries(spec.mpi.env)) {
      if (isSecretEnvValue(value)) errors.push({ path: `mpi.env.${name}.secretRef`, message: NO_IDENTITY });
    }
    spec.licenses.forEach((l, i) => {
      if (l.secretRef) errors.push({ path: `licenses[${i}].secretRef`, message: NO_IDENTITY });
    });
  }
  if (spec.licenses.length && 'LM_LICENSE_FILE' in spec.mpi.env) {
    errors.push({
      path: 'mpi.env.LM_LICENSE_FILE',
      message: 'is set by the pipeline from licenses (port@host of each server); declare the servers there, not both',
    });
  }
  return errors;
}
