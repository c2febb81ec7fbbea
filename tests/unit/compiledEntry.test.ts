/**
 * local/compiledEntry.ts: a local entry point runs its compiled twin only while the build is current for the sources
 * it names, on a throwaway repository layout (host.json, package.json, sources, dist/ with the build stamp).
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { currentCompiledEntry, findRepoRoot, nodeEntryArgs } from '../../local/compiledEntry';

let repo: string;
const at = (rel: string) => path.join(repo, rel);
function write(rel: string, text: string, mtimeSec: number): void {
  mkdirSync(path.dirname(at(rel)), { recursive: true });
  writeFileSync(at(rel), text);
  utimesSync(at(rel), mtimeSec, mtimeSec);
}

beforeEach(() => {
  repo = mkdtempSync(path.join(os.tmpdir(), 'compiled-entry-'));
  write('host.json', '{}', 1000);
  write('package.json', '{}', 1000);
  write('local/host/worker.ts', 'export {};', 1000);
  write('shared/lib.ts', 'export {};', 1000);
  write('dist/local/host/worker.js', '', 2000);
  write('dist/.build-stamp', '', 2000);
});
afterEach(() => rmSync(repo, { recursive: true, force: true }));

test('the twin in dist/ when no source under the named folders is newer than the build stamp', () => {
  expect(findRepoRoot(at('local/host'))).toBe(repo);
  expect(currentCompiledEntry(at('local/host/worker.ts'), ['local', 'shared'])).toBe(at('dist/local/host/worker.js'));
});

test('the sources when one of them changed after the build, when the twin or the stamp is missing, or for a .js entry', () => {
  write('shared/lib.ts', 'export const edited = 1;', 3000);
  expect(currentCompiledEntry(at('local/host/worker.ts'), ['local', 'shared'])).toBeUndefined();
  // A folder the entry does not run is not looked at.
  expect(currentCompiledEntry(at('local/host/worker.ts'), ['local'])).toBe(at('dist/local/host/worker.js'));
  rmSync(at('dist/.build-stamp'));
  expect(currentCompiledEntry(at('local/host/worker.ts'), ['local'])).toBeUndefined();
  write('dist/.build-stamp', '', 4000);
  rmSync(at('dist/local/host/worker.js'));
  expect(currentCompiledEntry(at('local/host/worker.ts'), ['local'])).toBeUndefined();
  expect(currentCompiledEntry(at('dist/local/host/worker.js'), ['local'])).toBeUndefined();
});

test("node's arguments: the twin when current, else the .ts source through tsx, else the .js entry itself", () => {
  expect(nodeEntryArgs(at('local/host/worker.ts'), ['local'])).toEqual([at('dist/local/host/worker.js')]);
  write('local/host/worker.ts', 'export const edited = 1;', 3000);
  expect(nodeEntryArgs(at('local/host/worker.ts'), ['local'])).toEqual(['--import', 'tsx', at('local/host/worker.ts')]);
  expect(nodeEntryArgs(at('dist/local/host/worker.js'), ['local'])).toEqual([at('dist/local/host/worker.js')]);
});
