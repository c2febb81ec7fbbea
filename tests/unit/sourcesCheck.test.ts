/**
 * "Fail before paying", the pure part: which sources a spec makes the pipeline look up before its pool exists, with
 * the field path of each, and how a miss is worded for the dry run (400) and for the job's reason.
 */
import { parseJobSpec } from '../../shared/core/spec';
import { deniedMessage, missesAsErrors, missesReason, missMessage, sourceChecks, type SourceCheck } from '../../shared/core/planning/sourcesCheck';

function spec(yaml: string) {
  const parsed = parseJobSpec(`name: sc\nlimits: { maxWallClock: PT10M }\nmpi: { runtime: openmpi, command: app }\n${yaml}`, 'application/yaml');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.spec;
}

describe('sourceChecks', () => {
  it('lists inputs, files (blob and prefix, not URLs), start-task files and SIF blobs, each with its field path', () => {
    const s = spec(`
pool:
  vmSize: Standard_D8s_v5
  nodes: 2
  startTask: { command: make, resourceFiles: [ { account: data1, container: software, blob: osu_pingpong.c, path: osu_pingpong.c } ] }
container: { runtime: singularity, images: [ "docker://ghcr.io/x/y:1", { account: data1, container: images, blob: app.sif } ] }
data: { inputs: [ { account: data1, container: inputs, prefix: demo/ }, { account: data1, container: decks } ] }
files:
  - { url: "https://example.com/tool.sh", path: tool.sh }
  - { account: data1, container: software, blob: run.sh, path: run.sh }
  - { account: data1, container: cases, prefix: heat1d/ }
`);
    expect(sourceChecks(s)).toEqual([
      { path: 'data.inputs[0].prefix', account: 'data1', container: 'inputs', kind: 'prefix', name: 'demo/' },
      { path: 'data.inputs[1].prefix', account: 'data1', container: 'decks', kind: 'prefix', name: '' },
      { path: 'files[1].blob', account: 'data1', container: 'software', kind: 'blob', name: 'run.sh' },
      { path: 'files[2].prefix', account: 'data1', container: 'cases', kind: 'prefix', name: 'heat1d/' },
      { path: 'pool.startTask.resourceFiles[0].blob', account: 'data1', container: 'software', kind: 'blob', name: 'osu_pingpong.c' },
      { path: 'container.images[1].blob', account: 'data1', container: 'images', kind: 'blob', name: 'app.sif' },
    ]);
  });

  it('a job that reads nothing from storage has nothing to look up', () => {
    expect(sourceChecks(spec('pool: { vmSize: Standard_D8s_v5, nodes: 1 }\ncontainer: { runtime: docker, images: [ "ghcr.io/x/y:1" ] }\n'))).toEqual([]);
  });
});

describe('how a miss is worded', () => {
  const input: SourceCheck = { path: 'data.inputs[0].prefix', account: 'data1', container: 'inputs', kind: 'prefix', name: 'demo/' };
  const blob: SourceCheck = { path: 'pool.startTask.resourceFiles[0].blob', account: 'data1', container: 'software', kind: 'blob', name: 'osu_pingpong.c' };

  it('names what is missing and, when Storage says so, the missing container', () => {
    expect(missMessage(input, true)).toBe('no blob under data1/inputs/demo/ (container "inputs" does not exist)');
    expect(missMessage(input, false)).toBe('no blob under data1/inputs/demo/');
    expect(missMessage(blob, false)).toBe('blob data1/software/osu_pingpong.c does not exist');
  });

  it('a lookup Storage refuses to the app says whose access is missing (the job could not read it either)', () => {
    expect(deniedMessage(blob, 'AuthorizationPermissionMismatch')).toBe(
      'the app\'s identity may not read data1/software/osu_pingpong.c (AuthorizationPermissionMismatch): grant it read access to container "software" of account "data1"',
    );
  });

  it("as validation errors (the dry run) and as the job's reason, with every field path and no activity name", () => {
    const misses = [
      { path: input.path, message: missMessage(input, true) },
      { path: blob.path, message: missMessage(blob, false) },
    ];
    expect(missesAsErrors(misses)).toEqual(misses);
    const reason = missesReason(misses);
    expect(reason).toBe(
      'missing inputs (checked before any pool was created): data.inputs[0].prefix: no blob under data1/inputs/demo/ (container "inputs" does not exist); pool.startTask.resourceFiles[0].blob: blob data1/software/osu_pingpong.c does not exist',
    );
    expect(missesReason(misses.slice(0, 1))).toMatch(/^missing input \(/);
  });
});
