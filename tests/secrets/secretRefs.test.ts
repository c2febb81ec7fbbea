/**
 * Secret references and licence servers in the spec, pure: validation at the door with field paths, the intake
 * policy (no pool identity, loopback licence servers), the MPI task that carries only references (no value in its
 * environment settings or command lines, names forwarded to every rank), LM_LICENSE_FILE, and the explain document.
 */
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { checkSecretPolicy } from '../../shared/core/intake/secretPolicy';
import { lmLicenseFile, parseLicenseServer, vaultNameOf } from '../../shared/core/spec/sections/secrets';
import { mpiTaskRequest } from '../../shared/core/planning/mpiTaskRequest';
import { buildMpiTaskParameter } from '../../shared/adapters/batch/mpiTask';
import { planJob } from '../../shared/core/planning/jobPlan';
import { explainJob } from '../../shared/adapters/intake/explain';
import { jobSecrets, plainEnv } from '../../shared/core/planning/secretEnv';
import { buildMpiTaskCommands, type MpiTaskInput } from '../../shared/core/mpi/commands';
import { BASE_INPUT } from '../helpers/nodeCommands';
import { evaluatePreflight, parsePreflightOutput, requiredNodePaths } from '../../shared/core/planning/preflight';
import { preflightMasterScript } from '../../shared/core/mpi/preflightScript';
import { SETTINGS } from '../orchestrations/jobReplay';
import type { ExplainSettings } from '../../shared/core/contract/explain';

const EXPLAIN_SETTINGS: ExplainSettings = { source: 'defaults', poolIdentity: null, ...(({ poll: _poll, ...rest }) => rest)(SETTINGS) };

const base = {
  name: 'lic',
  pool: { vmSize: 'Standard_HB120rs_v3', nodes: 2 },
  mpi: { runtime: 'openmpi', processesPerNode: 1, command: './app' },
};

function parse(patch: Record<string, unknown> = {}, mpiPatch: Record<string, unknown> = {}) {
  return parseJobSpec({ ...base, ...patch, mpi: { ...base.mpi, ...mpiPatch } });
}
function ok(patch: Record<string, unknown> = {}, mpiPatch: Record<string, unknown> = {}): JobSpec {
  const r = parse(patch, mpiPatch);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
}
const errorsOf = (patch: Record<string, unknown> = {}, mpiPatch: Record<string, unknown> = {}) => {
  const r = parse(patch, mpiPatch);
  return r.ok ? [] : r.errors;
};

const SECRET_ENV = { PODKEY: { secretRef: { vault: 'labvault', name: 'pod-key' } }, PLAIN: 'x' };
const LICENSES = [{ kind: 'flexlm', server: '10.1.0.4:27000', vendorPort: 27001, secretRef: { vault: 'https://LabVault.vault.azure.net/', name: 'lic-key' } }];

describe('validation at the door', () => {
  it('takes secret references and licence servers', () => {
    const spec = ok({ licenses: LICENSES }, { env: SECRET_ENV });
    expect(spec.mpi.env.PODKEY).toEqual({ secretRef: { vault: 'labvault', name: 'pod-key' } });
    expect(spec.licenses[0].server).toBe('10.1.0.4:27000');
  });

  it.each([
    [{ env: { K: { secretRef: { vault: 'ab', name: 'n' } } } }, 'mpi.env.K.secretRef.vault'],
    [{ env: { K: { secretRef: { vault: '1abc', name: 'n' } } } }, 'mpi.env.K.secretRef.vault'],
    [{ env: { K: { secretRef: { vault: 'ab--cd', name: 'n' } } } }, 'mpi.env.K.secretRef.vault'],
    [{ env: { K: { secretRef: { vault: 'https://evil.example.com/', name: 'n' } } } }, 'mpi.env.K.secretRef.vault'],
    [{ env: { K: { secretRef: { vault: 'labvault', name: 'bad_name' } } } }, 'mpi.env.K.secretRef.name'],
    [{ env: { K: { secretRef: { vault: 'labvault', name: 'n', version: 'xyz' } } } }, 'mpi.env.K.secretRef.version'],
    [{ env: { K: { secretRef: { vault: 'labvault', name: 'n', value: 'leak' } } } }, 'mpi.env.K.secretRef.value'],
  ])('refuses a bad reference %#', (mpiPatch, path) => {
    expect(errorsOf({}, mpiPatch).map((e) => e.path)).toContain(path);
  });

  it.each([
    ['no-port', 'licenses[0].server'],
    ['169.254.169.254:80', 'licenses[0].server'],
    ['168.63.129.16:27000', 'licenses[0].server'],
    ['lic.example.com:0', 'licenses[0].server'],
  ])('refuses licence server %s', (server, path) => {
    expect(errorsOf({ licenses: [{ kind: 'flexlm', server }] }).map((e) => e.path)).toContain(path);
  });

  it('refuses another licence manager kind and a bad vendor port', () => {
    expect(errorsOf({ licenses: [{ kind: 'rlm', server: 'a.b:1' }] }).map((e) => e.path)).toContain('licenses[0].kind');
    expect(errorsOf({ licenses: [{ kind: 'flexlm', server: 'a.b:1', vendorPort: 70000 }] }).map((e) => e.path)).toContain('licenses[0].vendorPort');
  });

  it('reads vault URIs as their names and licence servers as port@host', () => {
    expect(vaultNameOf('https://LabVault.vault.azure.net/')).toBe('labvault');
    expect(parseLicenseServer('Lic01.corp.example:27000')).toEqual({ host: 'lic01.corp.example', port: 27000 });
    expect(lmLicenseFile(ok({ licenses: [...LICENSES, { kind: 'flexlm', server: 'b.corp:1055' }] }).licenses)).toBe('27000@10.1.0.4:1055@b.corp');
  });
});

describe('intake policy', () => {
  it('refuses every secret reference on a deployment without a pool identity, with its path', () => {
    const spec = ok({ licenses: LICENSES }, { env: SECRET_ENV });
    expect(checkSecretPolicy(spec, { poolIdentity: false }).map((e) => e.path)).toEqual(['mpi.env.PODKEY.secretRef', 'licenses[0].secretRef']);
    expect(checkSecretPolicy(spec, { poolIdentity: true })).toEqual([]);
  });

  it('refuses a loopback licence server unless ALLOWED_INTERNAL_HOSTS lists it; private addresses pass', () => {
    const spec = ok({ licenses: [{ kind: 'flexlm', server: '127.0.0.1:27000' }] });
    expect(checkSecretPolicy(spec, { poolIdentity: true }).map((e) => e.path)).toEqual(['licenses[0].server']);
    expect(checkSecretPolicy(spec, { poolIdentity: true }, ['127.0.0.1:27000'])).toEqual([]);
  });

  it('refuses LM_LICENSE_FILE in mpi.env next to licenses', () => {
    const spec = ok({ licenses: LICENSES }, { env: { LM_LICENSE_FILE: '1@x' } });
    expect(checkSecretPolicy(spec, { poolIdentity: true }).map((e) => e.path)).toEqual(['mpi.env.LM_LICENSE_FILE']);
  });
});

describe('the MPI task carries references only', () => {
  const spec = ok({ id: 'lic-1', licenses: LICENSES }, { env: SECRET_ENV });
  const plan = planJob('lic-1', spec);
  const shape = mpiTaskRequest(plan, spec, [{ id: 'n0' }, { id: 'n1' }], '/data', plan.batchJobId);
  const task = buildMpiTaskParameter(shape, { clientId: 'cid-1', urlTemplate: 'https://{vault}.vault.azure.net' });

  it('splits plain values from secrets; licence keys become MPIJOB_LICENSE_<n>_KEY', () => {
    expect(plainEnv(spec)).toEqual({ PLAIN: 'x', LM_LICENSE_FILE: '27000@10.1.0.4' });
    expect(jobSecrets(spec)).toEqual([
      { env: 'PODKEY', vault: 'labvault', name: 'pod-key', from: 'mpi.env.PODKEY' },
      { env: 'MPIJOB_LICENSE_0_KEY', vault: 'labvault', name: 'lic-key', from: 'licenses[0].secretRef' },
    ]);
  });

  it('the environment settings hold plain values and the Key Vault access, never a secret name as a value', () => {
    expect(shape.keyVault).toBe(true);
    const names = (task.environmentSettings ?? []).map((e) => e.name);
    expect(names).toEqual(expect.arrayContaining(['PLAIN', 'LM_LICENSE_FILE', 'MPIJOB_KEYVAULT_CLIENT_ID', 'MPIJOB_KEYVAULT_URL_TEMPLATE']));
    expect(names).not.toContain('PODKEY');
    expect(names).not.toContain('MPIJOB_LICENSE_0_KEY');
  });

  it('the master fetches and forwards the secrets by name (-x), after the host setup', () => {
    expect(shape.applicationCommandLine).toContain('mpijob_kv_get labvault pod-key');
    expect(shape.applicationCommandLine).toContain('-x PODKEY');
    expect(shape.applicationCommandLine).toContain('-x MPIJOB_LICENSE_0_KEY');
    expect(shape.coordinationCommandLine).not.toContain('mpijob_kv');
  });

  it('a job without secrets gets no Key Vault access', () => {
    const plain = ok({ id: 'p-1' });
    const s = mpiTaskRequest(planJob('p-1', plain), plain, [{ id: 'n0' }], '/data', 'b');
    expect(s.keyVault).toBeUndefined();
    expect((buildMpiTaskParameter(s, { clientId: 'c' }).environmentSettings ?? []).map((e) => e.name)).not.toContain('MPIJOB_KEYVAULT_CLIENT_ID');
  });

  it('Hydra launchers forward secrets with -genvlist (never -genv NAME "$NAME", which puts the value in argv); docker passes them by name', () => {
    const secrets = [{ env: 'PODKEY', vault: 'labvault', name: 'pod-key', from: 'mpi.env.PODKEY' }];
    const hydra = buildMpiTaskCommands({ ...BASE_INPUT, mpiRuntime: 'intelmpi', secrets } as MpiTaskInput);
    expect(hydra.applicationCommandLine).toContain('-genvlist PODKEY');
    expect(hydra.applicationCommandLine).not.toContain('-genv PODKEY');
    const docker = buildMpiTaskCommands({ ...BASE_INPUT, runtime: 'docker', image: 'r/i:1', containerName: 'c1', secrets } as MpiTaskInput);
    expect(docker.applicationCommandLine).toMatch(/docker exec .*-e PODKEY/);
    expect(() => buildMpiTaskCommands({ ...BASE_INPUT, env: { PODKEY: 'x' }, secrets } as MpiTaskInput)).toThrow(/both a value and a secret/);
  });
});

describe('explain shows the reference, not a value', () => {
  it('names the vault and secret and leaves the client id to the deployment', () => {
    const spec = ok({ id: 'lic-2', licenses: LICENSES }, { env: SECRET_ENV });
    const doc = explainJob({ jobId: 'lic-2', jobIdFrom: 'spec.id', spec, settings: EXPLAIN_SETTINGS, policiesChecked: false });
    const text = JSON.stringify(doc);
    expect(doc.notes.join('\n')).toContain('mpi.env.PODKEY: Key Vault secret labvault/pod-key');
    expect(doc.notes.join('\n')).toContain('LM_LICENSE_FILE=27000@10.1.0.4');
    expect(text).toContain('KEY_VAULT_URL_TEMPLATE');
  });
});

describe('preflight checks every licence server port from every node', () => {
  it('lists the lmgrd and vendor ports, and a node that cannot connect fails naming itself and the port', () => {
    const spec = ok({ licenses: LICENSES });
    expect(requiredNodePaths(spec)).toEqual(['tcp:10.1.0.4:27000', 'tcp:10.1.0.4:27001']);
    const report = parsePreflightOutput(
      [
        'MPIJOB_PREFLIGHT node 10.9.0.1 via=local rc=0 ms=4',
        'MPIJOB_PREFLIGHT out 10.9.0.1 free_kb=52428800',
        'MPIJOB_PREFLIGHT node 10.9.0.2 via=ssh rc=0 ms=30',
        'MPIJOB_PREFLIGHT out 10.9.0.2 free_kb=52428800',
        'MPIJOB_PREFLIGHT out 10.9.0.2 unreachable=10.1.0.4:27001',
      ].join('\n'),
    );
    const verdict = evaluatePreflight(
      { exitCode: 0, report },
      [
        { id: 'n0', ipAddress: '10.9.0.1' },
        { id: 'n1', ipAddress: '10.9.0.2' },
      ],
      {
        maxSshMs: 2000,
        minFreeMB: 1,
        requiredPaths: requiredNodePaths(spec),
        runsPreExecution: false,
        pingPong: { enabled: false },
      },
    );
    expect(verdict.pass).toBe(false);
    expect(verdict.outliers).toEqual(['n1']);
    expect(JSON.stringify(verdict.nodes.n1)).toContain('licence server port 10.1.0.4:27001');
  });

  it('the probe connects with bash /dev/tcp and reports the port it could not reach', () => {
    const script = preflightMasterScript({ requiredPaths: ['tcp:10.1.0.4:27000'], sshPort: 22, maxSshMs: 1000, pingPong: false } as never);
    expect(script).toContain('tcp:*) p=${p#tcp:}; timeout 5 bash -c ": <>/dev/tcp/${p%:*}/${p##*:}"');
    expect(script).toContain('echo "unreachable=$p"');
  });
});
