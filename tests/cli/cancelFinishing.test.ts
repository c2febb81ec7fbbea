/** `hpcjob cancel` on a job that is cleaning up: the API's 409 JobFinishing is said plainly, not as an error. */
import { ApiClient } from '../../cli/apiClient';
import { cancelCommand } from '../../cli/commands/cancel';
import type { CommandContext } from '../../cli/context';
import { CliError, ExitCode } from '../../cli/errors';

function answering(status: number, body: unknown): ApiClient {
  const fetchImpl = (async () => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })) as typeof fetch;
  return new ApiClient({ endpoint: 'http://api.test', key: 'k' }, fetchImpl);
}

function context(api: ApiClient): CommandContext & { printed: string[] } {
  const printed: string[] = [];
  return { json: false, out: (t: string) => void printed.push(t), err: () => undefined, api: () => api, printed } as unknown as CommandContext & {
    printed: string[];
  };
}

const job = { id: 'j1', name: 'j1', state: 'CleaningUp' };

describe('hpcjob cancel: too late', () => {
  it('prints that the job is cleaning up and the state it will end in', async () => {
    const ctx = context(
      answering(409, {
        error: 'JobFinishing',
        message: 'job j1 is cleaning up and it will end Succeeded: too late to cancel',
        job,
        cancelRequested: false,
        endsAs: 'Succeeded',
      }),
    );
    await expect(cancelCommand(ctx, 'j1')).resolves.toBe(ExitCode.Ok);
    expect(ctx.printed).toEqual(['job j1 is already cleaning up and will end Succeeded: too late to cancel\n']);
  });

  it('without a recorded end, says only that it is too late', async () => {
    const ctx = context(
      answering(409, {
        error: 'JobFinishing',
        message: 'job j1 is cleaning up and its end is already decided: too late to cancel',
        job,
        cancelRequested: false,
      }),
    );
    await cancelCommand(ctx, 'j1');
    expect(ctx.printed).toEqual(['job j1 is already cleaning up: too late to cancel\n']);
  });

  it('another 409 is still an error', async () => {
    await expect(answering(409, { error: 'Other', message: 'something else' }).cancel('j1')).rejects.toThrow(new CliError('something else', ExitCode.Usage));
  });
});
