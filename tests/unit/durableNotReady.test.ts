/**
 * A function that runs while the Durable extension is still starting gets no usable durableClient binding: that is
 * "not ready yet" (503 with Retry-After, the API's error body), never a 500. A function registered without the
 * binding is a bug and keeps its own error.
 */
import { InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import { DurableClientNotReady, durableClientOf } from '../../functions/lib/durable';
import { unavailable } from '../../functions/lib/http';

const quiet = { log: () => undefined };

describe('durableClientOf', () => {
  it('says "not ready" when the binding is registered but has no client yet, and that maps to 503 + Retry-After', () => {
    const context = new InvocationContext({ options: { extraInputs: [df.input.durableClient()] }, logHandler: quiet.log });
    let thrown: unknown;
    try {
      durableClientOf(context);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(DurableClientNotReady);
    const answer = unavailable(context, 'job API', thrown);
    expect(answer.status).toBe(503);
    expect(answer.headers).toEqual({ 'Retry-After': '2' });
    expect(answer.jsonBody).toEqual({ error: 'Unavailable', message: expect.stringMatching(/^temporarily unavailable: the Durable client is not ready yet/) });
  });

  it('returns the client once the binding carries one', () => {
    const binding = df.input.durableClient();
    const context = new InvocationContext({ options: { extraInputs: [binding] }, logHandler: quiet.log });
    context.extraInputs.set(binding, {
      taskHubName: 'hub',
      creationUrls: { createNewInstancePostUri: 'http://h/x', createAndWaitOnNewInstancePostUri: 'http://h/y' },
      managementUrls: {
        id: 'INSTANCEID',
        statusQueryGetUri: 'http://h/s',
        sendEventPostUri: 'http://h/e',
        terminatePostUri: 'http://h/t',
        rewindPostUri: 'http://h/r',
        purgeHistoryDeleteUri: 'http://h/p',
        restartPostUri: 'http://h/rs',
        suspendPostUri: 'http://h/su',
        resumePostUri: 'http://h/re',
      },
      baseUrl: 'http://h/runtime/webhooks/durabletask',
      requiredQueryStringParameters: 'code=k',
      rpcBaseUrl: undefined,
    });
    expect(durableClientOf(context).taskHubName).toBe('hub');
  });

  it("keeps the library's error for a function registered without the binding (a bug, not a start-up gap)", () => {
    const context = new InvocationContext({ options: { extraInputs: [] }, logHandler: quiet.log });
    expect(() => durableClientOf(context)).toThrow(/Could not find a registered durable client input binding/);
  });
});
