/**
 * The importer points Shipyard's auto_scratch commands at the spec's scratch ($MPIJOB_SCRATCH) instead of leaving a
 * TODO, and a pre-execution command that fails before the preflight's first probe is explained by its own stderr.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { AUTO_SCRATCH_LINK, wireScratch } from '../../cli/import/shipyard/scratchWiring';
import { newDraft } from '../../cli/import/shipyard/context';
import { evaluatePreflight, type PreflightThresholds } from '../../shared/core/planning/preflight';

const draft = (spec: Record<string, unknown>) => Object.assign(newDraft('a.yaml', 'j', 't'), { spec });

describe('wireScratch', () => {
  it('rewrites $AZ_BATCH_TASK_DIR/auto_scratch in the commands and links the old path first', () => {
    const d = draft({
      scratch: {},
      mpi: { preExecutionCommand: 'cd ${AZ_BATCH_TASK_DIR}/auto_scratch && ./prep.sh', command: 'solver -case $AZ_BATCH_TASK_DIR/auto_scratch/case' },
    });
    const changed = wireScratch(d);
    expect(d.spec.mpi).toEqual({
      preExecutionCommand: `${AUTO_SCRATCH_LINK}; cd $MPIJOB_SCRATCH && ./prep.sh`,
      command: 'solver -case $MPIJOB_SCRATCH/case',
    });
    expect(changed).toHaveLength(3);
    expect(JSON.stringify(d.spec)).not.toContain('auto_scratch/case');
  });

  it('links the old path for setup scripts it cannot read, even when no command names it', () => {
    const d = draft({ scratch: {}, mpi: { preExecutionCommand: 'source set_up_sample.sh', command: 'simpleFoam -parallel' } });
    wireScratch(d);
    expect((d.spec.mpi as Record<string, unknown>).preExecutionCommand).toBe(`${AUTO_SCRATCH_LINK}; source set_up_sample.sh`);
  });

  it('leaves a spec without scratch alone', () => {
    const d = draft({ mpi: { command: 'cd $AZ_BATCH_TASK_DIR/auto_scratch' } });
    expect(wireScratch(d)).toEqual([]);
    expect(d.spec).toEqual({ mpi: { command: 'cd $AZ_BATCH_TASK_DIR/auto_scratch' } });
  });

  it("the link makes a script's `cd $AZ_BATCH_TASK_DIR/auto_scratch` land in the scratch (real bash)", () => {
    const root = mkdtempSync(path.join(tmpdir(), 'auto-scratch-'));
    try {
      const scratch = path.join(root, 'scratch');
      const taskDir = path.join(root, 'task');
      mkdirSync(scratch);
      mkdirSync(taskDir);
      writeFileSync(path.join(root, 'setup.sh'), 'cd $AZ_BATCH_TASK_DIR/auto_scratch\ntouch made-here\npwd -P\n');
      const r = spawnSync('/bin/bash', ['-c', `${AUTO_SCRATCH_LINK}; source ${path.join(root, 'setup.sh')}`], {
        env: { PATH: process.env.PATH, MPIJOB_SCRATCH: scratch, AZ_BATCH_TASK_DIR: taskDir },
        encoding: 'utf8',
      });
      expect({ status: r.status, stderr: r.stderr.includes('auto_scratch') }).toEqual({ status: 0, stderr: false });
      expect(r.stdout.trim()).toBe(scratch);
      expect(readlinkSync(path.join(taskDir, 'auto_scratch'))).toBe(scratch);
      // Without the link (the old import), the same script fails with cd's own message.
      rmSync(path.join(taskDir, 'auto_scratch'));
      const old = spawnSync('/bin/bash', ['-c', `set -e; source ${path.join(root, 'setup.sh')}`], {
        env: { PATH: process.env.PATH, AZ_BATCH_TASK_DIR: taskDir },
        encoding: 'utf8',
      });
      expect(old.status).not.toBe(0);
      expect(old.stderr).toMatch(/cd: .*auto_scratch: No such file or directory/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('a preflight that stopped before its first probe', () => {
  const TH: PreflightThresholds = { maxSshMs: 2000, minFreeMB: 1024, requiredPaths: [], runsPreExecution: true, pingPong: { enabled: true } };
  const NODES = [
    { id: 'n0', ipAddress: '10.9.0.1' },
    { id: 'n1', ipAddress: '10.9.0.2' },
  ];

  it('says what the master\'s stderr ended with, not "printed nothing"', () => {
    const v = evaluatePreflight(
      {
        exitCode: 1,
        stderrTail:
          'some earlier line\nset_up_sample.sh: line 14: cd: /mnt/batch/tasks/x/auto_scratch: No such file or directory\n[mpijob] preExecutionCommand exited with status 1\n',
        report: { probes: [], pairs: [] },
      },
      NODES,
      TH,
    );
    expect(v.pass).toBe(false);
    expect(v.unattributed).toMatch(
      /^the check stopped before its first probe \(task exit 1\): set_up_sample\.sh: line 14: cd: \/mnt\/batch\/tasks\/x\/auto_scratch: No such file or directory \/ \[mpijob\] preExecutionCommand exited with status 1; the job's mpi\.preExecutionCommand ran first/,
    );
    expect(v.unattributed).not.toContain('printed nothing');
  });

  it('still says "printed nothing" when there is no stderr either', () => {
    expect(evaluatePreflight({ exitCode: 137, report: { probes: [], pairs: [] } }, NODES, { ...TH, runsPreExecution: false }).unattributed).toBe(
      'the check printed nothing (task exit 137)',
    );
  });
});
