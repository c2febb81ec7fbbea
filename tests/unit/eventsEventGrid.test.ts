/**
 * The Event Grid sender through the real @azure/eventgrid client down to its HTTP client. Event Grid cannot run here,
 * so the HTTP client is the boundary replaced (said here, as the guide asks): the test sees exactly the request the
 * SDK would put on the wire, and answers as the service would.
 */
import { createHttpHeaders, type HttpClient, type PipelineRequest } from '@azure/core-rest-pipeline';
import type { AccessToken, GetTokenOptions, TokenCredential } from '@azure/core-auth';
import { eventGridEndpoint } from '../../shared/adapters/events/eventGridSender';
import { jobStateChangedEvent } from '../../shared/adapters/events/cloudEvent';

const TOPIC = 'https://evgt-example.westeurope-1.eventgrid.azure.net/api/events';
const event = jobStateChangedEvent(
  { id: 'cfd-1', name: 'cfd', owner: 't/u' },
  { jobId: 'cfd-1', at: '2025-01-01T00:00:02.000Z', kind: 'transition', seq: 2, from: 'Submitted', to: 'Provisioning', reason: 'pool requested' },
  'https://func-hpc.azurewebsites.net',
);

function setup(status: number) {
  const requests: { url: string; headers: Record<string, string>; body: unknown }[] = [];
  const scopes: string[][] = [];
  const credential: TokenCredential = {
    async getToken(scopeList: string | string[], _o?: GetTokenOptions): Promise<AccessToken> {
      scopes.push(Array.isArray(scopeList) ? scopeList : [scopeList]);
      return { token: 'app-identity-token', expiresOnTimestamp: Date.now() + 3_600_000 };
    },
  };
  const httpClient: HttpClient = {
    async sendRequest(request: PipelineRequest) {
      requests.push({ url: request.url, headers: request.headers.toJSON(), body: JSON.parse(String(request.body)) });
      const body = status === 200 ? '' : JSON.stringify({ error: { code: 'Unauthorized', message: 'the principal lacks EventGrid Data Sender' } });
      return { status, headers: createHttpHeaders({ 'content-type': 'application/json' }), request, bodyAsText: body };
    },
  };
  return { endpoint: eventGridEndpoint(TOPIC, credential, { httpClient }), requests, scopes };
}

test('publishes the CloudEvent (CloudEvents batch content type) with an Entra token for Event Grid, one request per try', async () => {
  const { endpoint, requests, scopes } = setup(200);
  expect(endpoint.name).toBe('eventgrid');
  expect(await endpoint.send(event)).toEqual({ ok: true, status: 200 });
  expect(requests).toHaveLength(1);
  const [req] = requests;
  expect(req.url.startsWith(`${TOPIC}?api-version=`)).toBe(true);
  expect(req.headers['content-type']).toBe('application/cloudevents-batch+json; charset=utf-8');
  expect(req.headers.authorization).toBe('Bearer app-identity-token');
  expect(scopes).toEqual([['https://eventgrid.azure.net/.default']]);
  expect(req.body).toEqual([
    {
      specversion: '1.0',
      id: 'cfd-1:2',
      source: 'https://func-hpc.azurewebsites.net/api/jobs/cfd-1',
      type: 'com.hpcjobs.job.stateChanged.v1',
      subject: 'Provisioning',
      time: '2025-01-01T00:00:02.000Z',
      datacontenttype: 'application/json',
      sequence: '0000000002',
      data: event.data,
    },
  ]);
});

test('a refusal is a failed try with the status, and the SDK does not retry on its own', async () => {
  const { endpoint, requests } = setup(401);
  const r = await endpoint.send(event);
  expect(r).toMatchObject({ ok: false, status: 401 });
  expect(r.error).toMatch(/EventGrid Data Sender|Unauthorized/);
  const busy = setup(503);
  expect(await busy.endpoint.send(event)).toMatchObject({ ok: false, status: 503 });
  expect(busy.requests).toHaveLength(1);
  expect(requests).toHaveLength(1);
});
