/**
 * The local stand-in of the examples' public release servers (local/releaseServer.ts) and how the emulated nodes
 * resolve their hosts (local/batch/runner/resourceFiles.ts resolvedUrl): examples/workloads/wrf-tables-from-url.yaml
 * runs as written.
 */
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parse } from 'yaml';
import { RELEASE_HOSTS, servedFile } from '../../local/releaseServer';
import { resolvedUrl } from '../../local/batch/runner/resourceFiles';

const ROOT = path.join(__dirname, '..', '..');

describe("resolvedUrl (the nodes' name resolution of stood-in hosts)", () => {
  const aliases = { 'wrf-release.example.org': '127.0.0.1:40123' };

  it('sends an https URL on an aliased host to the local server, path and query kept', () => {
    expect(resolvedUrl('https://wrf-release.example.org/v4.5/namelist.input?x=1', aliases)).toBe('https://127.0.0.1:40123/v4.5/namelist.input?x=1');
    expect(resolvedUrl('https://WRF-Release.example.org/a', aliases)).toBe('https://127.0.0.1:40123/a');
  });

  it('leaves other hosts, http and an explicit other port alone', () => {
    expect(resolvedUrl('https://example.org/a', aliases)).toBe('https://example.org/a');
    expect(resolvedUrl('http://wrf-release.example.org/a', aliases)).toBe('http://wrf-release.example.org/a');
    expect(resolvedUrl('https://wrf-release.example.org:8443/a', aliases)).toBe('https://wrf-release.example.org:8443/a');
    expect(resolvedUrl('https://wrf-release.example.org/a', undefined)).toBe('https://wrf-release.example.org/a');
  });
});

describe('servedFile', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'release-'));
  mkdirSync(path.join(root, 'v1'));
  writeFileSync(path.join(root, 'v1', 'a.txt'), 'a');

  it('serves files under its folder only', () => {
    expect(servedFile(root, '/v1/a.txt')).toBe(path.join(root, 'v1', 'a.txt'));
    expect(servedFile(root, '/v1/a.txt?sig=1')).toBe(path.join(root, 'v1', 'a.txt'));
    expect(servedFile(root, '/v1')).toBeUndefined();
    expect(servedFile(root, '/v1/missing')).toBeUndefined();
    expect(servedFile(root, '/../../etc/passwd')).toBeUndefined();
    expect(servedFile(root, '/%2e%2e/%2e%2e/etc/passwd')).toBeUndefined();
    expect(servedFile(root, '/%E0%A4%A')).toBeUndefined();
  });
});

test('every https file of the examples on a stood-in host is served from the committed folder', () => {
  const spec = parse(readFileSync(path.join(ROOT, 'examples', 'workloads', 'wrf-tables-from-url.yaml'), 'utf8')) as { files: { url?: string }[] };
  const urls = spec.files.map((f) => f.url).filter((u): u is string => !!u);
  expect(urls.length).toBeGreaterThan(0);
  for (const u of urls) {
    const url = new URL(u);
    const folder = RELEASE_HOSTS[url.host];
    expect({ url: u, folder }).toEqual({ url: u, folder: expect.any(String) });
    expect({ url: u, served: servedFile(path.join(ROOT, folder), url.pathname) }).toEqual({ url: u, served: expect.any(String) });
  }
});
