import { parseRegistryAliases, resolveImageAlias, withRegistryAliases } from '../../shared/core/intake/registryAliases';
import { checkSubmission } from '../../shared/adapters/intake/submit';
import { loadConfig } from '../../shared/adapters/config';
import { dataAccessPolicy } from '../../shared/core/intake/dataAccess';
import { containerPolicy } from '../../shared/core/intake/containerPolicy';
import { parseJobSpec } from '../../shared/core/spec';

const aliases = { 'localhost:5000': '127.0.0.1:41733' };

describe('REGISTRY_ALIASES', () => {
  it('parses alias=registry pairs and names every bad entry', () => {
    const problems: string[] = [];
    expect(parseRegistryAliases('localhost:5000=127.0.0.1:41733, reg.example=10.0.0.4', problems)).toEqual({
      'localhost:5000': '127.0.0.1:41733',
      'reg.example': '10.0.0.4',
    });
    expect(problems).toEqual([]);
    parseRegistryAliases('nope,A=b,x=y,x=z', problems);
    expect(problems).toEqual([
      expect.stringContaining('entry 1 ("nope") must be alias=registry'),
      expect.stringContaining('entry 2 ("A=b")'),
      expect.stringContaining('entry 4 names the alias "x" again'),
    ]);
  });

  it('rewrites the registry of plain and docker:// references, nothing else', () => {
    expect(resolveImageAlias('localhost:5000/hpc/mpi-demo:1.0', aliases)).toBe('127.0.0.1:41733/hpc/mpi-demo:1.0');
    expect(resolveImageAlias('docker://localhost:5000/hpc/mpi-demo:1.0', aliases)).toBe('docker://127.0.0.1:41733/hpc/mpi-demo:1.0');
    expect(resolveImageAlias('myreg.azurecr.io/localhost:5000', aliases)).toBe('myreg.azurecr.io/localhost:5000');
    expect(resolveImageAlias('ubuntu:22.04', aliases)).toBe('ubuntu:22.04');
  });

  it('a submission naming the alias is checked and recorded with the registry it stands for', () => {
    const env = {
      BATCH_ACCOUNT_URL: 'https://batch.invalid',
      BATCH_ACCOUNT_NAME: 'batch',
      AzureWebJobsStorage__accountName: 'host',
      STAGING_ACCOUNTS: 'staging',
      ALLOWED_INTERNAL_HOSTS: '127.0.0.1:41733',
      REGISTRY_ALIASES: 'localhost:5000=127.0.0.1:41733',
    };
    const config = loadConfig(env);
    const body = [
      'name: aliased',
      'pool: { vmSize: Standard_D4s_v5, nodes: 2 }',
      'container: { runtime: docker, images: [localhost:5000/hpc/mpi-demo:1.0] }',
      'mpi: { runtime: openmpi, processesPerNode: 1, command: "true" }',
    ].join('\n');
    const checked = checkSubmission({ body, contentType: 'application/yaml', dataAccess: dataAccessPolicy(config), containers: containerPolicy(config) });
    expect(checked).toMatchObject({ ok: true, spec: { container: { images: ['127.0.0.1:41733/hpc/mpi-demo:1.0'] } } });
    // Without the alias the same spec names a loopback registry the deployment does not allow.
    const strict = loadConfig({ ...env, REGISTRY_ALIASES: '' });
    expect(checkSubmission({ body, contentType: 'application/yaml', dataAccess: dataAccessPolicy(strict), containers: containerPolicy(strict) }).ok).toBe(
      false,
    );
  });

  it('a spec without the alias is returned as it was', () => {
    const parsed = parseJobSpec(
      'name: x\npool: { vmSize: Standard_D4s_v5, nodes: 1 }\nmpi: { runtime: openmpi, processesPerNode: 1, command: "true" }\n',
      'application/yaml',
    );
    if (!parsed.ok) throw new Error('spec');
    expect(withRegistryAliases(parsed.spec, aliases)).toBe(parsed.spec);
  });
});
