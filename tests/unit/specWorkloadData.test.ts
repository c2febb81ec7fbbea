/**
 * The data sections of the job spec (files, mounts, scratch, outputs): their field rules, the rules between fields,
 * and the data-access policy over them, each problem reported with its field path.
 */
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { canonicalJson, parseJobSpec, specHash, type JobSpec } from '../../shared/core/spec';
import { checkDataAccess, type DataAccessPolicy } from '../../shared/core/intake/dataAccess';
import { httpsUrlProblem } from '../../shared/core/spec/sections/storageFields';

const BASE = `
name: t
pool: { vmSize: Standard_D8s_v5, nodes: 2 }
mpi: { runtime: openmpi, command: app }
`;

function errorsOf(extra: string): { path: string; message: string }[] {
  const r = parseJobSpec(BASE + extra, 'application/yaml');
  return r.ok ? [] : r.errors;
}
const pathsOf = (extra: string) => errorsOf(extra).map((e) => e.path);

function parsed(extra: string): JobSpec {
  const r = parseJobSpec(BASE + extra, 'application/yaml');
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
}

describe('files', () => {
  test('url, blob and prefix sources with paths and modes are accepted', () => {
    const spec = parsed(`
files:
  - { url: "https://releases.example.org/wrf/v4.5/namelist.input", path: run/namelist.input, mode: "0644" }
  - { url: "https://10.1.2.3:8443/tables/RRTMG_LW_DATA", path: RRTMG_LW_DATA }
  - { account: data1, container: software, blob: bin/solver, path: solver, mode: "755" }
  - { account: data1, container: cases, prefix: motorbike/ }
`);
    expect(spec.files).toHaveLength(4);
  });

  test.each([
    ['http://example.org/a', /must be an https:\/\/ URL/],
    ['https://example.org/a?sv=2022&sig=abc', /must not carry a query string: a SAS/],
    ['https://example.org/a?', /must not carry a query string/],
    ['https://example.org/a#frag', /fragment/],
    ['https://user:pass@example.org/a', /user name or password/],
    ['https://EXAMPLE.org/a', /lowercase DNS name/],
    ['https://example.org/a b', /path of letters/],
    ['https://example.org/$(id)', /path of letters/],
    ['https://example.org/', /must name a file/],
    ['https://example.org/' + 'a'.repeat(2100), /at most 2048/],
  ])('url %#: %s is refused', (url, message) => {
    expect(httpsUrlProblem(url)).toMatch(message);
    const errors = errorsOf(`files: [ { url: ${JSON.stringify(url)}, path: x } ]`);
    expect(errors.map((e) => e.path)).toContain('files[0].url');
  });

  test('exactly one source; account and container only with blob sources; path required with url and blob', () => {
    expect(pathsOf('files: [ { path: x } ]')).toEqual(['files[0]']);
    expect(pathsOf('files: [ { url: "https://h.example/a", blob: b, account: data1, container: abc, path: x } ]')).toEqual(['files[0].blob']);
    expect(pathsOf('files: [ { url: "https://h.example/a", account: data1, container: abc, path: x } ]')).toEqual(['files[0].account', 'files[0].container']);
    expect(pathsOf('files: [ { blob: a/b, path: x } ]')).toEqual(['files[0].account', 'files[0].container']);
    expect(pathsOf('files: [ { url: "https://h.example/a" } ]')).toEqual(['files[0].path']);
    expect(pathsOf('files: [ { account: data1, container: abc, blob: a } ]')).toEqual(['files[0].path']);
    expect(pathsOf('files: [ { account: data1, container: abc, prefix: "" } ]')).toEqual([]);
  });

  test('paths stay in the working directory and are unique; modes are octal', () => {
    for (const p of ['/etc/passwd', '../x', 'a/../../x', './x', 'a//b', 'a b', '$HOME/x']) {
      expect(pathsOf(`files: [ { url: "https://h.example/a", path: ${JSON.stringify(p)} } ]`)).toEqual(['files[0].path']);
    }
    expect(pathsOf('files: [ { url: "https://h.example/a", path: x }, { url: "https://h.example/b", path: x } ]')).toEqual(['files[1].path']);
    for (const m of ['"0999"', '"rwx"', '"07777"', '755']) {
      expect(pathsOf(`files: [ { url: "https://h.example/a", path: x, mode: ${m} } ]`)).toEqual(['files[0].mode']);
    }
  });

  test('a spec without the new sections keeps its identity: nothing is added to it by default, so its hash is unchanged', () => {
    const before = parsed('');
    expect(Object.keys(before)).not.toEqual(expect.arrayContaining(['files']));
    expect(canonicalJson(before)).not.toMatch(/"(files|mounts|scratch|outputs)"/);
    expect(specHash(before)).toBe(specHash(parsed('')));
  });
});

describe('mounts and scratch', () => {
  test('each kind is accepted with its fields', () => {
    const spec = parsed(`
mounts:
  - { name: home, nfs: { source: "10.0.0.4:/exports/home", options: "-o vers=4.1,nconnect=4" } }
  - { name: ref, azureFiles: { account: data1, share: refdata, secretRef: REFDATA_KEY } }
  - { name: inputs, blobfuse: { account: data1, container: inputs, readOnly: true, options: "-o attr_timeout=240" } }
  - { name: lic, cifs: { source: //fs01.corp.example/licenses, username: svc-hpc, secretRef: LIC_PW } }
scratch: { kind: mount, mount: home }
`);
    expect(spec.mounts?.map((m) => m.name)).toEqual(['home', 'ref', 'inputs', 'lic']);
    expect(spec.scratch).toEqual({ kind: 'mount', mount: 'home' });
  });

  test('a secret is never accepted in a spec: only secretRef', () => {
    const errors = errorsOf(`
mounts:
  - { name: ref, azureFiles: { account: data1, share: refdata, secretRef: K, accountKey: "c2VjcmV0" } }
  - { name: lic, cifs: { source: //fs01/l, username: u, password: hunter2, secretRef: P } }
  - { name: b, blobfuse: { account: data1, container: inputs, sasKey: "sv=x&sig=y" } }
`);
    expect(errors.map((e) => e.path)).toEqual(
      expect.arrayContaining(['mounts[0].azureFiles.accountKey', 'mounts[1].cifs.password', 'mounts[2].blobfuse.sasKey']),
    );
    for (const e of errors) expect(e.message).toMatch(/a secret is never accepted in a job spec/);
    expect(pathsOf('mounts: [ { name: r, azureFiles: { account: data1, share: refdata, secretRef: "https://kv.vault.azure.net/secrets/x" } } ]')).toEqual([
      'mounts[0].azureFiles.secretRef',
    ]);
  });

  test('one kind per mount, unique names, safe sources and options, not with a reused pool', () => {
    expect(pathsOf('mounts: [ { name: a } ]')).toEqual(['mounts[0]']);
    expect(pathsOf('mounts: [ { name: a, nfs: { source: "h:/x" }, cifs: { source: //h/s, username: u, secretRef: P } } ]')).toEqual(['mounts[0].cifs']);
    expect(pathsOf('mounts: [ { name: a, nfs: { source: "h:/x" } }, { name: a, nfs: { source: "h:/y" } } ]')).toEqual(['mounts[1].name']);
    for (const source of ['"h:x"', '"h:/x;reboot"', '"https://h/x"', '"H:/x"']) {
      expect(pathsOf(`mounts: [ { name: a, nfs: { source: ${source} } } ]`)).toEqual(['mounts[0].nfs.source']);
    }
    expect(pathsOf('mounts: [ { name: a, nfs: { source: "h:/x", options: "-o x; rm -rf /" } } ]')).toEqual(['mounts[0].nfs.options']);
    for (const name of ['"../x"', '"a/b"', '""', '"-x"']) expect(pathsOf(`mounts: [ { name: ${name}, nfs: { source: "h:/x" } } ]`)).toEqual(['mounts[0].name']);
    expect(errorsOf('mounts: [ { name: a, nfs: { source: "h:/x" } } ]')).toEqual([]);
    const r = parseJobSpec(
      `
name: t
pool: { poolId: shared-pool, nodes: 2 }
mpi: { runtime: openmpi, command: app }
mounts: [ { name: a, nfs: { source: "h:/x" } } ]
`,
      'application/yaml',
    );
    expect(r.ok ? [] : r.errors.map((e) => e.path)).toEqual(['mounts']);
  });

  test('scratch: masterNfs by default; kind mount names one of the mounts', () => {
    expect(parsed('scratch: {}').scratch).toEqual({ kind: 'masterNfs' });
    expect(pathsOf('scratch: { kind: mount }')).toEqual(['scratch.mount']);
    expect(pathsOf('scratch: { kind: mount, mount: nope }\nmounts: [ { name: a, nfs: { source: "h:/x" } } ]')).toEqual(['scratch.mount']);
    expect(pathsOf('scratch: { mount: a }\nmounts: [ { name: a, nfs: { source: "h:/x" } } ]')).toEqual(['scratch.mount']);
    expect(pathsOf('scratch: { kind: nfs }')).toEqual(['scratch.kind']);
  });
});

describe('outputs', () => {
  test('defaults: always, logs on, failures reported; patterns from workdir unless said', () => {
    const spec = parsed('outputs: { account: data1, container: results, files: [ { pattern: "**/*.dat" } ] }');
    expect(spec.outputs).toEqual({
      account: 'data1',
      container: 'results',
      when: 'always',
      logs: true,
      onUploadFailure: 'report',
      files: [{ pattern: '**/*.dat', from: 'workdir' }],
    });
  });

  test('patterns are relative globs without shell characters; scratch needs a scratch section; no duplicates; a usable prefix', () => {
    for (const p of ['/etc/*', '../x', 'a/./b', '$AZ_BATCH_NODE_ROOT_DIR/x', 'a b', '`id`', 'x;y']) {
      expect(pathsOf(`outputs: { account: data1, container: results, files: [ { pattern: ${JSON.stringify(p)} } ] }`)).toEqual(['outputs.files[0].pattern']);
    }
    expect(pathsOf('outputs: { account: data1, container: results, files: [ { pattern: "x", from: scratch } ] }')).toEqual(['outputs.files[0].from']);
    expect(pathsOf('outputs: { account: data1, container: results, files: [ { pattern: x }, { pattern: x, from: workdir } ] }')).toEqual(['outputs.files[1]']);
    expect(pathsOf('outputs: { account: data1, container: results, files: [ { pattern: x }, { pattern: x, from: allNodes } ] }')).toEqual([]);
    expect(pathsOf('outputs: { account: data1, container: results, prefix: "runs/" }')).toEqual(['outputs.prefix']);
    expect(pathsOf('outputs: { account: data1, container: results, prefix: "" }')).toEqual(['outputs.prefix']);
    expect(pathsOf('outputs: { account: data1, container: results, logs: false }')).toEqual(['outputs.files']);
    expect(pathsOf('outputs: { account: data1, container: results, when: sometimes }')).toEqual(['outputs.when']);
  });
});

describe('data-access policy over the data sections', () => {
  const policy: DataAccessPolicy = {
    accounts: ['data1'],
    containers: [
      { account: 'data1', container: 'results' },
      { account: 'data1', container: 'case*' },
      { account: 'data1', container: 'refdata' },
    ],
    stagingAccounts: ['stage1'],
    ownAccounts: ['hoststore', 'stage1'],
    mountSources: ['10.0.0.4:/exports/*', '//fs01/licenses'],
  };
  const refusals = (extra: string) => checkDataAccess(parsed(extra), policy).map((e) => e.path);

  test('blob files, outputs and blobfuse/Azure Files mounts are checked like inputs, at the field that is wrong', () => {
    expect(refusals('files: [ { account: data1, container: cases, prefix: x/ }, { account: other, container: cases, blob: a, path: a } ]')).toEqual([
      'files[1].account',
    ]);
    expect(refusals('files: [ { account: data1, container: secret, blob: a, path: a } ]')).toEqual(['files[0].container']);
    expect(refusals('outputs: { account: data1, container: stg-1234-x }')).toEqual(['outputs.container']);
    expect(refusals('outputs: { account: stage1, container: results }')).toEqual(['outputs.account']);
    expect(
      refusals(
        'mounts: [ { name: a, blobfuse: { account: data1, container: inputs } }, { name: b, azureFiles: { account: data1, share: refdata, secretRef: K } } ]',
      ),
    ).toEqual(['mounts[0].blobfuse.container']);
    expect(refusals('mounts: [ { name: b, azureFiles: { account: data1, share: other, secretRef: K } } ]')).toEqual(['mounts[0].azureFiles.share']);
  });

  test('NFS on a storage account counts as that account; other file servers must be listed', () => {
    expect(refusals('mounts: [ { name: a, nfs: { source: "data1.blob.core.windows.net:/data1/cases1" } } ]')).toEqual([]);
    expect(refusals('mounts: [ { name: a, nfs: { source: "data1.blob.core.windows.net:/data1/private" } } ]')).toEqual(['mounts[0].nfs.source']);
    expect(refusals('mounts: [ { name: a, nfs: { source: "stage1.file.core.windows.net:/stage1/share" } } ]')).toEqual(['mounts[0].nfs.source']);
    expect(refusals('mounts: [ { name: a, nfs: { source: "data1.blob.core.windows.net:/stage1/x" } } ]')).toEqual(['mounts[0].nfs.source']);
    expect(refusals('mounts: [ { name: a, nfs: { source: "10.0.0.4:/exports/home" } } ]')).toEqual([]);
    expect(refusals('mounts: [ { name: a, nfs: { source: "10.0.0.5:/exports/home" } } ]')).toEqual(['mounts[0].nfs.source']);
    expect(refusals('mounts: [ { name: a, cifs: { source: //fs01/licenses, username: u, secretRef: P } } ]')).toEqual([]);
    expect(refusals('mounts: [ { name: a, cifs: { source: //fs01/other, username: u, secretRef: P } } ]')).toEqual(['mounts[0].cifs.source']);
    const none = checkDataAccess(parsed('mounts: [ { name: a, nfs: { source: "10.0.0.4:/exports/home" } } ]'), { ...policy, mountSources: [] });
    expect(none[0].message).toMatch(/DATA_MOUNT_SOURCES is empty/);
  });

  test('a secretRef must name a mount secret the deployment publishes (when it says which)', () => {
    const spec =
      'mounts: [ { name: b, azureFiles: { account: data1, share: refdata, secretRef: REFKEY } }, { name: c, cifs: { source: //fs01/licenses, username: u, secretRef: LIC } } ]';
    expect(checkDataAccess(parsed(spec), { ...policy, mountSecretNames: ['REFKEY'] }).map((e) => [e.path, e.message])).toEqual([
      ['mounts[1].cifs.secretRef', 'names no mount secret of this deployment: the app setting MOUNT_SECRET_LIC is not set'],
    ]);
    expect(refusals(spec)).toEqual([]);
  });

  test("an https URL must not point at the app's own storage", () => {
    expect(refusals('files: [ { url: "https://stage1.blob.core.windows.net/stg-x/shard", path: a } ]')).toEqual(['files[0].url']);
    expect(refusals('files: [ { url: "https://hoststore.table.core.windows.net/Jobs", path: a } ]')).toEqual(['files[0].url']);
    expect(refusals('files: [ { url: "https://azureopendatastorage.blob.core.windows.net/x/y", path: a } ]')).toEqual([]);
  });
});

test('every committed workload example parses', () => {
  const dir = path.join(__dirname, '../../examples/workloads');
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
  expect(files.length).toBeGreaterThanOrEqual(3);
  for (const f of files) {
    const r = parseJobSpec(readFileSync(path.join(dir, f), 'utf8'), 'application/yaml');
    if (!r.ok) throw new Error(`${f}: ${JSON.stringify(r.errors)}`);
    // Each names the real code it stands for.
    expect(readFileSync(path.join(dir, f), 'utf8')).toMatch(/^# Stands for: \S/);
  }
});
