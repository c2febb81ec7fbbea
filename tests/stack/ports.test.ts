/** Which port each service of a kept stack asks for, and what the recorded-ports file accepts (pure, no services). */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { choosePorts, portInUse, portsFile, readPorts, recordPorts } from '../../local/supervisor/ports';

describe('choosePorts', () => {
  it('takes an explicit non-zero port, else the recorded one, else what was asked (0 or absent)', () => {
    expect(choosePorts({ host: 8080, batch: 0 }, { host: 7071, batch: 40001, blob: 40002 })).toEqual({ host: 8080, batch: 40001, blob: 40002 });
    expect(choosePorts({ host: 0, registry: 0 }, {})).toEqual({ host: 0, registry: 0 });
    expect(choosePorts({}, {})).toEqual({});
  });

  it('refuses a port outside [0, 65535]', () => {
    expect(() => choosePorts({ registry: 70000 }, {})).toThrow('OCI registry port must be an integer in [0, 65535], got 70000');
  });
});

describe('the recorded ports file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'stack-ports-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('merges what is recorded and never records 0', () => {
    expect(readPorts(dir)).toEqual({});
    recordPorts(dir, { blob: 41000, queue: 41001, host: 0 });
    recordPorts(dir, { host: 7071, blob: 41005 });
    expect(readPorts(dir)).toEqual({ blob: 41005, queue: 41001, host: 7071 });
  });

  it('names the file and the field when it holds something else than ports', () => {
    writeFileSync(portsFile(dir), JSON.stringify({ batch: 'x' }));
    expect(() => readPorts(dir)).toThrow(`${portsFile(dir)}: "batch" must be a port number in [1, 65535], got "x"`);
    writeFileSync(portsFile(dir), '{');
    expect(() => readPorts(dir)).toThrow(`cannot read the stack's recorded ports in ${portsFile(dir)}`);
  });
});

describe('portInUse', () => {
  it('explains a taken recorded port, and leaves other errors alone', () => {
    const busy = new Error('listen EADDRINUSE: address already in use 127.0.0.1:41025');
    const explained = portInUse(busy, 'registry', 41025, '/data');
    expect(explained.message).toMatch(/^OCI registry: port 41025 is in use\. It is the port recorded in \/data\/ports\.json/);
    expect(explained.message).toContain(busy.message);
    expect(portInUse(busy, 'batch', 41026, '/data')).toBe(busy);
    const other = new Error('boom');
    expect(portInUse(other, 'registry', 41025, '/data')).toBe(other);
  });
});
