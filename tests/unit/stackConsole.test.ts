/**
 * `npm start`'s console (issue 28, item 7): one readable line per job transition from the job events, repeats
 * dropped, control characters never reaching the terminal; and which host log levels go to the file and the console.
 * Pure.
 */
import { jobLinePrinter, jobTransitionLine } from '../../local/supervisor/jobLines';
import { hostLogLevels } from '../../local/supervisor/logLevels';

const event = (seq: number, data: Record<string, unknown>) => ({
  specversion: '1.0',
  id: `cfd-7:${seq}`,
  type: 'com.hpcjobs.job.stateChanged.v1',
  subject: data.state,
  data: { jobId: 'cfd-7', name: 'cfd run 7', seq, time: '2026-11-27T10:02:03.125Z', ...data },
});

describe('job transition lines', () => {
  it('says submitted for the creation, from → to for a change, ended for a terminal state, each with its reason', () => {
    expect(jobTransitionLine(event(1, { state: 'Submitted', previousState: null, reason: 'accepted' }))).toBe(
      '10:02:03  job cfd-7 (cfd run 7) submitted: accepted',
    );
    expect(jobTransitionLine(event(3, { state: 'PullingImages', previousState: 'Provisioning', reason: 'pool ready: 4/4 nodes idle' }))).toBe(
      '10:02:03  job cfd-7 Provisioning → PullingImages: pool ready: 4/4 nodes idle',
    );
    expect(jobTransitionLine(event(9, { state: 'Failed', previousState: 'Running', reason: 'exit code 3' }))).toBe(
      '10:02:03  job cfd-7 ended Failed: exit code 3',
    );
    expect(jobTransitionLine(event(9, { state: 'Succeeded', previousState: 'CleaningUp' }))).toBe('10:02:03  job cfd-7 ended Succeeded');
  });

  it('ignores what is not a job state change', () => {
    expect(jobTransitionLine({ type: 'com.example.other', data: { jobId: 'x', state: 'Running' } })).toBeUndefined();
    expect(jobTransitionLine({ type: 'com.hpcjobs.job.stateChanged.v1' })).toBeUndefined();
  });

  it('replaces control characters of submitted text (no escape sequence reaches the terminal)', () => {
    const line = jobTransitionLine(event(2, { state: 'Failed', previousState: 'Submitted', reason: 'bad\u001b[2J\nspec\u0007' })) as string;
    expect(line).toBe('10:02:03  job cfd-7 ended Failed: bad [2J spec');
    expect([...line].some((c) => c.charCodeAt(0) < 0x20)).toBe(false);
  });

  it('prints a repeated delivery of the same event once', () => {
    const lines: string[] = [];
    const print = jobLinePrinter((l) => lines.push(l));
    const e = event(4, { state: 'Running', previousState: 'StagingData' });
    print(e);
    print(e);
    print(event(5, { state: 'CleaningUp', previousState: 'Running' }));
    expect(lines).toHaveLength(2);
  });
});

describe('host log levels of npm start', () => {
  it('by default: the file from info, the console readable from warn', () => {
    expect(hostLogLevels(undefined, 'jobs')).toEqual({ file: 'info', console: { level: 'warn', format: 'pretty' } });
  });
  it('--log-level debug shows debug on the console and keeps it in the file; warn does not thin the file', () => {
    expect(hostLogLevels('debug', 'jobs')).toEqual({ file: 'debug', console: { level: 'debug', format: 'pretty' } });
    expect(hostLogLevels('warn', 'jobs')).toEqual({ file: 'info', console: { level: 'warn', format: 'pretty' } });
  });
  it('--log-console json puts the JSON lines on the console as before', () => {
    expect(hostLogLevels(undefined, 'json')).toEqual({ file: 'info', console: { level: 'info', format: 'json' } });
  });
  it('refuses an unknown level, naming the option', () => {
    expect(() => hostLogLevels('verbose', 'jobs')).toThrow('--log-level must be one of trace, debug, info, warn, error, fatal, got "verbose"');
  });
});
