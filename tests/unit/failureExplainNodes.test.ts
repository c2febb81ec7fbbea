/**
 * Issue 28 item 4: a failure on a node other than the master, and a failed preflight check, are explained with the
 * failing node, the exit code and its meaning, and that node's own stderr tail (the master's only for want of it,
 * and then said so).
 */
import { exitCodeMeaning, failedSubtask, jobError, mpiEvidence, preflightEvidence } from '../../shared/core/planning/failureExplain';

describe('a non-master node whose coordination command failed', () => {
  const mpi = {
    exitCode: 5,
    failure: 'SubtaskFailed: The coordination command of subtask 1 on node n2 failed.',
    logs: [{ node: 'n1' }, { node: 'n2' }],
    stderrTail: 'master: nothing wrong here',
    subtasks: [{ id: 1, nodeId: 'n2', exitCode: 5, stderrTail: 'prepare: /scratch/input: No such file or directory\n' }],
  };

  it("names that node with its own stderr tail, not the master's", () => {
    expect(mpiEvidence(mpi)).toEqual({
      stage: 'Running',
      task: 'coordination command',
      node: 'n2',
      exitCode: 5,
      stderr: 'prepare: /scratch/input: No such file or directory\n',
    });
    const err = jobError({ state: 'Failed', reason: 'MPI task exited with code 5', result: { mpi } });
    expect(err?.message).toBe(
      'Running: MPI task exited with code 5 (the coordination command on node n2 ended with exit code 5)\nLast lines of stderr:\nprepare: /scratch/input: No such file or directory',
    );
    expect(err?.details).toEqual({
      stage: 'Running',
      node: 'n2',
      task: 'coordination command',
      exitCode: 5,
      stderrTail: 'prepare: /scratch/input: No such file or directory',
    });
  });

  it("falls back to the master's stderr when the node's could not be read, and says whose it is", () => {
    const withoutTail = { ...mpi, subtasks: [{ id: 1, nodeId: 'n2', exitCode: 5 }] };
    const err = jobError({ state: 'Failed', reason: 'MPI task exited with code 5', result: { mpi: withoutTail } });
    expect(err?.message).toContain('Last lines of stderr on node n1:\nmaster: nothing wrong here');
    expect(err?.details).toMatchObject({ node: 'n2', stderrNode: 'n1' });
  });

  it("the master's own subtask (id 0) is not a non-master failure", () => {
    expect(
      failedSubtask([
        { id: 0, nodeId: 'n1', exitCode: 3 },
        { id: 2, nodeId: 'n3', exitCode: 0 },
      ]),
    ).toBeUndefined();
    expect(
      failedSubtask([
        { id: 1, nodeId: 'n2', exitCode: 0 },
        { id: 2, nodeId: 'n3', exitCode: 139 },
      ])?.nodeId,
    ).toBe('n3');
  });
});

describe('a failed preflight check', () => {
  it('a subtask that failed on its node: that node, its exit code and meaning, its stderr', () => {
    const evidence = preflightEvidence(
      {
        exitCode: 1,
        masterNode: 'n1',
        stderrTail: 'probe: ssh n2 refused',
        failedSubtasks: [{ id: 1, nodeId: 'n2', exitCode: 137, stderrTail: 'sshd: Killed' }],
      },
      [],
    );
    expect(evidence).toEqual({ stage: 'StagingData', task: 'preflight check', node: 'n2', exitCode: 137, stderr: 'sshd: Killed' });
    const err = jobError({ state: 'Failed', reason: 'StagingData: preflight: the check printed nothing (task exit 1)', evidence });
    expect(err?.message).toMatch(/^StagingData: preflight: .* \(the preflight check on node n2 ended with exit code 137 \(killed \(SIGKILL\): out of memory/);
    expect(err?.message).toMatch(/Last lines of stderr:\nsshd: Killed$/);
    expect(err?.details).toMatchObject({ task: 'preflight check', node: 'n2', exitCode: 137, exitCodeMeaning: exitCodeMeaning(137) });
  });

  it('a pre-execution command that failed on the master: the master, its exit code, its stderr', () => {
    const evidence = preflightEvidence(
      { exitCode: 127, masterNode: 'n1', stderrTail: 'bash: module: command not found\n[mpijob] preExecutionCommand exited with status 127' },
      [],
    );
    expect(evidence).toEqual({
      stage: 'StagingData',
      task: 'preflight check',
      node: 'n1',
      exitCode: 127,
      stderr: 'bash: module: command not found\n[mpijob] preExecutionCommand exited with status 127',
    });
    expect(jobError({ state: 'Failed', reason: 'preflight: the check printed nothing (task exit 127)', evidence })?.message).toContain(
      '(the preflight check on node n1 ended with exit code 127 (command not found',
    );
  });

  it("a node the verdict blamed (unreachable): that node; the master's stderr, said to be the master's", () => {
    const evidence = preflightEvidence({ exitCode: 0, masterNode: 'n1', stderrTail: 'ssh: connect to host 10.0.0.5 port 22: Connection refused' }, [
      'n3',
      'n4',
    ]);
    expect(evidence).toEqual({
      stage: 'StagingData',
      task: 'preflight check',
      node: 'n3',
      stderr: 'ssh: connect to host 10.0.0.5 port 22: Connection refused',
      stderrNode: 'n1',
    });
    expect(jobError({ state: 'Failed', reason: 'preflight: n3 (unreachable)', evidence })?.message).toContain('Last lines of stderr on node n1:\nssh: connect');
  });

  it('with nothing read: the stage and task only', () => {
    expect(preflightEvidence({}, [])).toEqual({ stage: 'StagingData', task: 'preflight check' });
  });
});
