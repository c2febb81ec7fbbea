import {
  describeExitCode,
  exitCodeMeaning,
  explainFailure,
  jobError,
  mpiEvidence,
  startTaskNote,
  tailLines,
  userReason,
} from '../../shared/core/planning/failureExplain';

describe('exit code meanings', () => {
  it.each([
    [126, /not executable/],
    [127, /command not found/],
    [137, /SIGKILL.*out of memory/],
    [139, /segmentation fault/],
    [143, /terminated \(SIGTERM\)/],
    [135, /signal 7/],
  ])('%i', (code, meaning) => {
    expect(exitCodeMeaning(code)).toMatch(meaning);
    expect(describeExitCode(code)).toMatch(new RegExp(`^exit code ${code} \\(`));
  });

  it('0 and unknown codes have no meaning', () => {
    expect(exitCodeMeaning(0)).toBeUndefined();
    expect(exitCodeMeaning(42)).toBeUndefined();
    expect(describeExitCode(42)).toBe('exit code 42');
  });
});

describe('userReason', () => {
  it('turns an activity failure into the stage and what it was doing', () => {
    expect(userReason("unexpected: Activity function 'inputsList' failed: listing data1/inputs/demo/: The specified container does not exist")).toBe(
      "StagingData: listing the job's inputs failed: listing data1/inputs/demo/: The specified container does not exist",
    );
  });

  it('names an activity it has no words for without the internal phrase', () => {
    expect(userReason("Activity function 'somethingNew' failed: boom")).toBe('the pipeline step somethingNew failed: boom');
  });

  it("drops Batch's generic exit words and explains the wall clock", () => {
    expect(userReason('MPI task exited with code 3: FailureExitCode: The task exited with an exit code representing a failure')).toBe(
      'MPI task exited with code 3',
    );
    expect(
      userReason('MPI task exited with code -1: MaxWallClockTimeExceeded: The task ran longer than its maxWallClockTime constraint and was terminated.'),
    ).toMatch(/wall-clock limit exceeded \(limits\.maxWallClock\)/);
  });

  it('keeps other reasons, an unexpected error said as internal', () => {
    expect(userReason('Provisioning: pool p: only 1/2 nodes ready after 60 s')).toBe('Provisioning: pool p: only 1/2 nodes ready after 60 s');
    expect(userReason('unexpected: boom')).toBe('internal error: boom');
  });
});

describe('explainFailure', () => {
  const stderr = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';

  it('names the stage, task, node, exit code with meaning and keeps the last 20 lines of stderr', () => {
    const msg = explainFailure('MPI task exited with code 127', { stage: 'Running', task: 'application', node: 'n1', exitCode: 127, stderr });
    expect(msg.split('\n')[0]).toBe(
      'Running: MPI task exited with code 127 (the application on node n1 ended with exit code 127 (command not found: the program is not on the PATH of the node or container))',
    );
    expect(msg).toContain('Last lines of stderr:\nline 11\n');
    expect(msg).not.toContain('line 10\n');
    expect(msg.endsWith('line 30')).toBe(true);
  });

  it('does not repeat a stage the reason starts with', () => {
    expect(explainFailure('Provisioning: pool p: 3 nodes failed', { stage: 'Provisioning', task: 'start task', node: 'n2', exitCode: 1 })).toBe(
      'Provisioning: pool p: 3 nodes failed (the start task on node n2 ended with exit code 1 (general error))',
    );
  });

  it('without evidence is the reason in user words', () => {
    expect(explainFailure("unexpected: Activity function 'shardCopy' failed: 403", undefined)).toBe(
      'StagingData: copying input data to the staging account failed: 403',
    );
  });
});

describe('mpiEvidence', () => {
  const base = { logs: [{ node: 'master-node' }], stderrTail: 'sh: 1: foo: not found' };

  it('a succeeded task has none', () => {
    expect(mpiEvidence({ ...base, exitCode: 0, subtasks: [] })).toBeUndefined();
  });

  it('the application on the master', () => {
    expect(
      mpiEvidence({
        ...base,
        exitCode: 127,
        subtasks: [
          { id: 0, nodeId: 'master-node', exitCode: 127 },
          { id: 1, nodeId: 'n2', exitCode: 0 },
        ],
      }),
    ).toEqual({ stage: 'Running', task: 'application', node: 'master-node', exitCode: 127, stderr: 'sh: 1: foo: not found' });
  });

  it('a coordination command that failed on a node', () => {
    expect(mpiEvidence({ ...base, exitCode: 126, subtasks: [{ id: 1, nodeId: 'n2', exitCode: 126 }] })).toMatchObject({
      task: 'coordination command',
      node: 'n2',
      exitCode: 126,
    });
  });
});

describe('jobError', () => {
  it('a success has none; a cancel keeps its reason', () => {
    expect(jobError({ state: 'Succeeded' })).toBeUndefined();
    expect(jobError({ state: 'Cancelled', reason: 'by me' })).toEqual({ code: 'Cancelled', message: 'by me' });
  });

  it('an application failure carries the evidence in details', () => {
    const err = jobError({
      state: 'Failed',
      reason: 'MPI task exited with code 127: FailureExitCode: The task exited with an exit code representing a failure',
      result: { mpi: { exitCode: 127, subtasks: [], logs: [{ node: 'tvm-1' }], stderrTail: 'bash: ./app: No such file\n' } },
    });
    expect(err?.code).toBe('PipelineFailed');
    expect(err?.message).toMatch(/^Running: MPI task exited with code 127 \(the application on node tvm-1 ended with exit code 127 \(command not found/);
    expect(err?.message).toMatch(/Last lines of stderr:\nbash: \.\/app: No such file$/);
    expect(err?.details).toEqual({
      stage: 'Running',
      node: 'tvm-1',
      task: 'application',
      exitCode: 127,
      exitCodeMeaning: exitCodeMeaning(127),
      stderrTail: 'bash: ./app: No such file',
    });
  });

  it('a start task failure from the stage evidence wins over the MPI result', () => {
    const err = jobError({
      state: 'Failed',
      reason: 'Provisioning: pool p: 2 nodes failed',
      evidence: { stage: 'Provisioning', node: 'n1', task: 'start task', exitCode: 2, stderr: 'cc: osu_pingpong.c: No such file' },
    });
    expect(err?.message).toContain('the start task on node n1 ended with exit code 2');
    expect(err?.details).toMatchObject({ task: 'start task', stderrTail: 'cc: osu_pingpong.c: No such file' });
  });
});

describe('startTaskNote and tailLines', () => {
  it('a start task note for the timeline keeps 5 lines', () => {
    const note = startTaskNote('n1', 127, undefined, 'a\nb\nc\nd\ne\nf\ng\n');
    expect(note).toBe(
      'node n1: the start task ended with exit code 127 (command not found: the program is not on the PATH of the node or container); last lines of stderr:\nc\nd\ne\nf\ng',
    );
    expect(startTaskNote('n2', undefined, 'BlobDownloadMiscError: x', undefined)).toBe('node n2: the start task failed: BlobDownloadMiscError: x');
  });

  it('tailLines ignores trailing blank lines', () => {
    expect(tailLines('a\nb\n\n\n', 1)).toBe('b');
  });
});
