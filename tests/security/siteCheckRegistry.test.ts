/**
 * The site's health-check image (preflight.siteCheck.image) is pulled by every node like the job's own images, so it
 * passes the same registry rule at the door (issue 27, item 4): an internal registry the deployment does not serve,
 * the metadata address, or the app's own storage is refused with the field path `preflight.siteCheck.image`; the
 * registry the deployment serves (ALLOWED_INTERNAL_HOSTS) and its alias (REGISTRY_ALIASES) are taken, the alias
 * rewritten in the recorded spec as for container.images. On the old code the site-check image was never looked at.
 * Pure: the intake's checks (checkSubmission, the one path behind HTTP, the queue and the dry run) with the policies
 * built from a loaded configuration, as the app builds them.
 */
import { loadConfig } from '../../shared/adapters/config';
import { dataAccessPolicy } from '../../shared/core/intake/dataAccess';
import { containerPolicy } from '../../shared/core/intake/containerPolicy';
import { checkSubmission } from '../../shared/adapters/intake/submit';

const REGISTRY = '127.0.0.1:41733';
const config = loadConfig({
  BATCH_ACCOUNT_URL: 'http://127.0.0.1:45123',
  BATCH_ACCOUNT_NAME: 'localbatch',
  BATCH_ACCOUNT_KEY: 'a2V5a2V5a2V5',
  AzureWebJobsStorage: 'UseDevelopmentStorage=true',
  STAGING_ACCOUNTS: 'devstoreaccount1',
  DATA_ACCOUNTS: 'datasa1',
  ALLOWED_INTERNAL_HOSTS: REGISTRY,
  REGISTRY_ALIASES: `localhost:5000=${REGISTRY}`,
});

function submit(siteCheck: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return checkSubmission({
    body: {
      name: 'site-registry',
      pool: { vmSize: 'Standard_HB120rs_v3', nodes: 2 },
      mpi: { runtime: 'openmpi', command: 'true' },
      preflight: { siteCheck },
      ...extra,
    },
    contentType: 'application/json',
    dataAccess: dataAccessPolicy(config),
    containers: containerPolicy(config),
  });
}
const errorsOf = (r: ReturnType<typeof submit>) => (r.ok ? [] : r.errors);

describe('preflight.siteCheck.image goes through the registry policy of container.images', () => {
  it.each([
    ['a loopback registry the deployment does not serve', '127.0.0.2:41733/ops/nodecheck:1'],
    ['a private address', '10.0.0.4:5000/ops/nodecheck:1'],
    ['the instance metadata address', '169.254.169.254/ops/nodecheck:1'],
    ['localhost on another port', 'localhost:6000/ops/nodecheck:1'],
    ["the app's own storage", 'devstoreaccount1.blob.core.windows.net/ops/nodecheck:1'],
  ])('refuses %s at preflight.siteCheck.image', (_what, image) => {
    const errors = errorsOf(submit({ image }));
    expect(errors.map((e) => e.path)).toEqual(['preflight.siteCheck.image']);
    expect(errors[0].message).toMatch(/names /);
  });

  it('refuses it exactly as the same reference in container.images', () => {
    const image = '10.0.0.4:5000/ops/nodecheck:1';
    const asJobImage = errorsOf(submit({ script: 'true' }, { container: { runtime: 'docker', images: [image] } }));
    const asSiteImage = errorsOf(submit({ image }));
    expect(asSiteImage.map((e) => e.message)).toEqual(asJobImage.map((e) => e.message));
  });

  it('takes a public registry, the registry the deployment serves, and its alias (rewritten as recorded)', () => {
    for (const image of ['contoso.azurecr.io/ops/nodecheck:1', 'ubuntu:22.04', `${REGISTRY}/ops/nodecheck:1`]) {
      const r = submit({ image });
      expect({ image, errors: errorsOf(r) }).toEqual({ image, errors: [] });
    }
    const aliased = submit({ image: 'localhost:5000/ops/nodecheck:1' });
    expect(aliased.ok && aliased.spec.preflight.siteCheck?.image).toBe(`${REGISTRY}/ops/nodecheck:1`);
  });
});
