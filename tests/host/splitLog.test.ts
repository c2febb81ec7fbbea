/** npm start's two views of the host log (issue 28, item 7): the whole log in a file, the console from its own level. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createHostLogger } from '../../local/host/logging';

test('the file gets every entry from the host level, the console only from its own level', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'split-log-'));
  try {
    const file = path.join(dir, 'logs', 'host.log');
    const shown: string[] = [];
    const host = createHostLogger('info', { file, console: { level: 'warn', stream: { write: (line: string) => void shown.push(line) } } });
    host.log.debug('routine timer run');
    host.log.info('job accepted');
    host.log.warn('pool slow');
    host.close();
    const kept = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(kept).toEqual(['job accepted', 'pool slow']);
    expect(shown.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['pool slow']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
