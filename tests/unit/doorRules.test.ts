/**
 * The pure rules behind the doors (issue 23): the address classifier (every spelling of an internal IPv4 address,
 * IPv6 forms, internal names, the app's own storage under every endpoint name), the host-path normalizer of container
 * binds, duplicate JSON keys, object-machinery keys and the cancel reason. No I/O.
 */
import fc from 'fast-check';
import { classifyHost, internalHostAllowed, storageAccountOfHost } from '../../shared/core/spec/address';
import { normalizeHostPath } from '../../shared/core/spec/hostPath';
import { bindRefusal } from '../../shared/core/spec/sections/container';
import { firstDuplicateJsonKey } from '../../shared/core/spec/jsonDuplicateKeys';
import { forbiddenKeys } from '../../shared/core/spec/forbiddenKeys';
import { parseJobSpec } from '../../shared/core/spec';
import { checkRegistryAddresses, hostRefusal, imageRegistryHost } from '../../shared/core/intake/addressPolicy';
import { checkDataAccess } from '../../shared/core/intake/dataAccess';
import { parseCancelReason, CANCEL_REASON_MAX_CHARS } from '../../shared/core/intake/cancelReason';

const internal = (host: string, own: string[] = []) => classifyHost(host, own).internal;

/** The ranges a job must never name, as [first address as a number, size]. */
const PRIVATE_V4: [number, number][] = [
  [0x0a000000, 2 ** 24], // 10/8
  [0x7f000000, 2 ** 24], // 127/8
  [0xa9fe0000, 2 ** 16], // 169.254/16
  [0xac100000, 2 ** 20], // 172.16/12
  [0xc0a80000, 2 ** 16], // 192.168/16
  [0x00000000, 2 ** 24], // 0/8
];
const privateV4 = fc.constantFrom(...PRIVATE_V4).chain(([base, size]) => fc.integer({ min: 0, max: size - 1 }).map((o) => base + o));
const octets = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];

/** Every spelling inet_aton and URL parsers accept for one address. */
function spellings(n: number): string[] {
  const [a, b, c, d] = octets(n);
  return [
    `${a}.${b}.${c}.${d}`,
    String(n),
    `0x${n.toString(16)}`,
    `0${n.toString(8)}`,
    [a, b, c, d].map((o) => `0${o.toString(8)}`).join('.'),
    [a, b, c, d].map((o) => `0x${o.toString(16)}`).join('.'),
    `${a}.${(b << 16) + (c << 8) + d}`,
    `${a}.${b}.${(c << 8) + d}`,
    `${a}.${b}.${c}.${d}.`,
    `[::ffff:${a}.${b}.${c}.${d}]`,
    `::ffff:${((a << 8) + b).toString(16)}:${((c << 8) + d).toString(16)}`,
    `64:ff9b::${a}.${b}.${c}.${d}`,
  ];
}

describe('address classifier', () => {
  test('every spelling of a private, loopback, link-local or "this network" IPv4 address is internal', () => {
    fc.assert(
      fc.property(privateV4, (n) => spellings(n).every((s) => internal(s))),
      { numRuns: 300 },
    );
  });

  test('public IPv4 addresses stay public in every spelling', () => {
    for (const n of [0x08080808, 0x0d6b2a0e, 0x14000001])
      for (const s of spellings(n).slice(0, 9)) expect({ s, internal: internal(s) }).toEqual({ s, internal: false });
  });

  test('the findings: metadata service, wire server and the encodings that hid them', () => {
    for (const h of [
      '169.254.169.254',
      '168.63.129.16',
      '2852039166',
      '0251.0376.0251.0376',
      '0x7f000001',
      '127.1',
      'localhost',
      'LOCALHOST.',
      'x.localhost',
      '::1',
      '[::1]',
      '::ffff:127.0.0.1',
      'fe80::1',
      'fd12::1',
      '::',
      'metadata',
      'metadata.google.internal',
      'vm1.internal.cloudapp.net',
      'printer.local',
      '09.1.1.1',
    ]) {
      expect({ h, internal: internal(h) }).toEqual({ h, internal: true });
    }
    expect(classifyHost('2852039166')).toMatchObject({ host: '169.254.169.254', why: expect.stringMatching(/metadata/) });
    expect(classifyHost('168.63.129.16')).toMatchObject({ why: expect.stringMatching(/wire server/) });
    for (const h of ['example.org', 'ghcr.io', 'myregistry.azurecr.io', '8.8.8.8', '2001:4860:4860::8888', 'data1.blob.core.windows.net'])
      expect({ h, internal: internal(h) }).toEqual({ h, internal: false });
  });

  test("the app's own storage under every endpoint name, and only its own", () => {
    const own = ['hoststore', 'stage1'];
    for (const h of [
      'stage1.blob.core.windows.net',
      'stage1.web.core.windows.net',
      'stage1.z13.web.core.windows.net',
      'stage1.z22.blob.storage.azure.net',
      'stage1.z7.web.storage.azure.net',
      'hoststore.dfs.core.windows.net',
      'hoststore.queue.core.windows.net',
      'hoststore.table.core.windows.net',
      'hoststore.file.core.windows.net',
      'stage1.privatelink.blob.core.windows.net',
      'stage1-secondary.blob.core.windows.net',
      'STAGE1.Blob.Core.Windows.Net.',
      'stage1.blob.core.chinacloudapi.cn',
      'stage1.blob.core.usgovcloudapi.net',
    ]) {
      expect({ h, internal: internal(h, own) }).toEqual({ h, internal: true });
    }
    for (const h of ['data1.blob.core.windows.net', 'stage1.example.org', 'stage1x.blob.core.windows.net'])
      expect({ h, internal: internal(h, own) }).toEqual({ h, internal: false });
    expect(storageAccountOfHost('stage1.z13.web.core.windows.net')).toBe('stage1');
    expect(storageAccountOfHost('core.windows.net')).toBeUndefined();
  });

  test('ALLOWED_INTERNAL_HOSTS: host (any port) or host:port, same normalization; own storage never', () => {
    expect(internalHostAllowed(['127.0.0.1:5000'], '127.0.0.1', '5000')).toBe(true);
    expect(internalHostAllowed(['127.0.0.1:5000'], '2130706433', '5000')).toBe(true);
    expect(internalHostAllowed(['127.0.0.1:5000'], '127.0.0.1', '5001')).toBe(false);
    expect(internalHostAllowed(['127.0.0.1:5000'], 'localhost', '5000')).toBe(false);
    expect(internalHostAllowed(['registry.corp.internal'], 'registry.corp.internal', '443')).toBe(true);
    expect(hostRefusal({ allowedInternalHosts: ['10.0.0.4'] }, '10.0.0.4', undefined)).toBeUndefined();
    expect(hostRefusal({ ownAccounts: ['stage1'], allowedInternalHosts: ['stage1.blob.core.windows.net'] }, 'stage1.blob.core.windows.net', undefined)).toMatch(
      /own storage/,
    );
  });

  test('image references: the registry host by the distribution grammar', () => {
    expect(imageRegistryHost('localhost:5000/hpc/x:1')).toEqual({ host: 'localhost', port: '5000' });
    expect(imageRegistryHost('docker://2852039166:5000/a/b')).toEqual({ host: '2852039166', port: '5000' });
    // Without "." or ":" the first component is a Docker Hub namespace, not a host (docker reads it so too).
    expect(imageRegistryHost('2852039166/a/b')).toBeUndefined();
    expect(imageRegistryHost('oras://10.1.2.3:443/a')).toEqual({ host: '10.1.2.3', port: '443' });
    expect(imageRegistryHost('ubuntu:22.04')).toBeUndefined();
    expect(imageRegistryHost('library/ubuntu')).toBeUndefined();
    expect(imageRegistryHost('library://a/b/c:1')).toBeUndefined();
  });
});

describe('intake: internal hosts in files[].url and images are refused with the path', () => {
  const spec = (extra: string) => {
    const r = parseJobSpec(`name: t\npool: { vmSize: Standard_D8s_v5, nodes: 1 }\nmpi: { runtime: openmpi, command: x }\n${extra}`, 'application/yaml');
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    return r.spec;
  };
  const policy = { accounts: ['data1'], stagingAccounts: ['stage1'], ownAccounts: ['hoststore', 'stage1'] };
  test('files[].url', () => {
    const refused = (url: string, allowed: string[] = []) =>
      checkDataAccess(spec(`files: [ { url: "${url}", path: a } ]`), { ...policy, allowedInternalHosts: allowed }).map((e) => e.path);
    for (const url of [
      'https://2852039166/latest',
      'https://0251.0376.0251.0376/x',
      'https://0x7f000001/x',
      'https://168.63.129.16/machine',
      'https://10.0.0.5/x',
      'https://localhost/x',
      'https://stage1.z13.web.core.windows.net/x',
      'https://hoststore.z22.blob.storage.azure.net/jobs/x',
    ]) {
      expect({ url, paths: refused(url) }).toEqual({ url, paths: ['files[0].url'] });
    }
    expect(refused('https://wrf-release.example.org/v4.5/namelist.input')).toEqual([]);
    expect(refused('https://127.0.0.1:8443/x', ['127.0.0.1:8443'])).toEqual([]);
  });
  test('images and container.registry.server', () => {
    const refused = (yaml: string, allowed: string[] = []) =>
      checkRegistryAddresses(spec(yaml), { ...policy, allowedInternalHosts: allowed }).map((e) => e.path);
    expect(
      refused(
        'container: { runtime: docker, images: [ "localhost:5000/hpc/mpi-demo:1.0", "0x7f000001:5000/a/b:1", "ghcr.io/a/b:1", "2852039166/hub-namespace:1" ] }',
      ),
    ).toEqual(['container.images[0]', 'container.images[1]']);
    expect(refused('container: { runtime: docker, images: [ "127.0.0.1:5000/hpc/mpi-demo:1.0" ] }', ['127.0.0.1:5000'])).toEqual([]);
    expect(refused('container: { runtime: singularity, images: [ "docker://10.1.2.3/a:1" ] }')).toEqual(['container.images[0]']);
    expect(
      refused('container: { runtime: docker, images: [ "myregistry.azurecr.io/a:1" ], registry: { server: "192.168.1.10:5000", identity: managed } }'),
    ).toEqual(['container.registry.server']);
  });
});

describe('host path normalizer and bind deny-list', () => {
  test('normalizes slashes, "." and trailing slashes; refuses ".." and relative paths', () => {
    expect(normalizeHostPath('//proc')).toBe('/proc');
    expect(normalizeHostPath('/proc/')).toBe('/proc');
    expect(normalizeHostPath('/./var//run/./docker.sock')).toBe('/var/run/docker.sock');
    expect(normalizeHostPath('/')).toBe('/');
    expect(normalizeHostPath('//')).toBe('/');
    expect(normalizeHostPath('/scratch/../etc')).toBeUndefined();
    expect(normalizeHostPath('scratch')).toBeUndefined();
  });

  test('every spelling of a denied root or its subpaths is refused', () => {
    const roots = ['/var', '/mnt', '/home', '/etc', '/root', '/proc', '/sys', '/dev', '/boot', '/run'];
    const noise = fc.array(fc.constantFrom('/', '/./', '//'), { minLength: 0, maxLength: 3 });
    fc.assert(
      fc.property(
        fc.constantFrom(...roots),
        noise,
        noise,
        fc.constantFrom('', 'x', 'run/docker.sock', 'batch/tasks/fsmounts'),
        fc.boolean(),
        (root, pre, post, sub, ro) => {
          const path = `${pre.join('')}${root.slice(1)}${post.join('') || (sub ? '/' : '')}${sub}`;
          const source = path.startsWith('/') ? path : `/${path}`;
          return bindRefusal(source, ro) !== undefined;
        },
      ),
      { numRuns: 300 },
    );
  });

  test('the findings, and what stays allowed', () => {
    expect(bindRefusal('/var/run/docker.sock', true)).toMatch(/\/var/);
    expect(bindRefusal('//proc', true)).toMatch(/\/proc/);
    expect(bindRefusal('/mnt/batch/tasks/fsmounts', false)).toMatch(/\/mnt/);
    expect(bindRefusal('/home/_azbatch/.ssh', true)).toMatch(/\/home/);
    expect(bindRefusal('//', true)).toMatch(/whole node/);
    expect(bindRefusal('/scratch', false)).toBeUndefined();
    expect(bindRefusal('/tmp', false)).toBeUndefined();
    expect(bindRefusal('/opt/intel', true)).toBeUndefined();
    expect(bindRefusal('/opt//intel/', false)).toMatch(/readOnly/);
    expect(bindRefusal('/variable', false)).toBeUndefined();
  });
});

describe('JSON bodies: duplicate keys and object-machinery keys', () => {
  test('the first duplicate key with its path, at any depth, escapes decoded', () => {
    expect(firstDuplicateJsonKey('{"a":1,"a":2}')).toMatchObject({ path: 'a', key: 'a' });
    expect(firstDuplicateJsonKey('{"mpi":{"env":{"A":"1","B":"x","A":"2"}}}')).toMatchObject({ path: 'mpi.env.A' });
    expect(firstDuplicateJsonKey('{"l":[{"k":1},{"k":2,"k":3}]}')).toMatchObject({ path: 'l[1].k' });
    expect(firstDuplicateJsonKey('{"a\\u0062":1,"ab":2}')).toMatchObject({ key: 'ab' });
    expect(firstDuplicateJsonKey('{"a":{"b":1},"c":{"b":1},"s":"\\"a\\":"}')).toBeUndefined();
  });

  test('a generated object with one key repeated is found at the right place', () => {
    const key = fc.string({ minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(fc.uniqueArray(key, { minLength: 1, maxLength: 8 }), fc.nat(), (keys, pick) => {
        const dup = keys[pick % keys.length];
        const text = `{"outer":{${[...keys, dup].map((k, i) => `${JSON.stringify(k)}:${i}`).join(',')}}}`;
        return (
          firstDuplicateJsonKey(text)?.key === dup &&
          firstDuplicateJsonKey(`{"outer":{${keys.map((k) => `${JSON.stringify(k)}:[1,{"x":1}]`).join(',')}}}`) === undefined
        );
      }),
      { numRuns: 200 },
    );
  });

  test('parseJobSpec refuses duplicate JSON keys with the path and position, as YAML ones', () => {
    const r = parseJobSpec(
      '{"name":"a","pool":{"vmSize":"Standard_D8s_v5","nodes":1},\n"mpi":{"runtime":"openmpi","command":"x","command":"y"}}',
      'application/json',
    );
    expect(r).toMatchObject({ ok: false, errors: [{ path: 'mpi.command', line: 2, message: expect.stringMatching(/appears twice/) }] });
  });

  test('__proto__, constructor and prototype anywhere are reported with their path (JSON, YAML, decoded)', () => {
    expect(forbiddenKeys(JSON.parse('{"a":[{"b":{"__proto__":{"x":1}}}],"constructor":1}'))).toEqual([
      { path: 'constructor', key: 'constructor' },
      { path: 'a[0].b.__proto__', key: '__proto__' },
    ]);
    const base = '"name":"a","pool":{"vmSize":"Standard_D8s_v5","nodes":1}';
    const json = parseJobSpec(`{${base},"mpi":{"runtime":"openmpi","command":"x","env":{"__proto__":{"polluted":"1"}}}}`, 'application/json');
    expect(json).toMatchObject({ ok: false, errors: [{ path: 'mpi.env.__proto__' }] });
    const yaml = parseJobSpec(
      'name: a\npool: { vmSize: Standard_D8s_v5, nodes: 1 }\ntags: { prototype: x }\nmpi: { runtime: openmpi, command: x }\n',
      'application/yaml',
    );
    expect(yaml).toMatchObject({ ok: false, errors: [{ path: 'tags.prototype' }] });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('cancel reason', () => {
  test('absent: the default; within the rules: kept; otherwise 400 errors at "reason"', () => {
    expect(parseCancelReason(null)).toEqual({ ok: true, reason: 'cancelled by user' });
    expect(parseCancelReason('wrong input deck')).toEqual({ ok: true, reason: 'wrong input deck' });
    for (const bad of ['a\u2028b', 'a\u0085b', 'a\u202eb', 'a\u0000b', 'a\nb', 'x'.repeat(6 * 1024), '', ' ']) {
      const r = parseCancelReason(bad);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.errors.every((e) => e.path === 'reason')).toBe(true);
    }
    expect(parseCancelReason('x'.repeat(CANCEL_REASON_MAX_CHARS)).ok).toBe(true);
  });
});
