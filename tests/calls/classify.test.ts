/** The call counter's classification of requests as they arrive (pure: no stack). */
import { batchTemplate, classifyBatch, classifyStorage } from '../../local/testing/callCounter';
import { intakeRequests } from '../../bench/lib/callBudget';
import { NODE_AGENT_USER_AGENT } from '../../local/batch/runner/nodeAgentHttp';

const s = (service: 'table' | 'queue' | 'blob', method: string, url: string) => {
  const c = classifyStorage(service, method, url, 'HpcMpiHub');
  return [c.component, c.account, c.resource, c.operation];
};

test('table requests: entity reads, queries, inserts, merges, batches, table creation', () => {
  expect(s('table', 'POST', '/devstoreaccount1/Jobs')).toEqual(['app', 'devstoreaccount1', 'Jobs', 'insert']);
  expect(s('table', 'GET', "/devstoreaccount1/Jobs(PartitionKey='a',RowKey='b')")).toEqual(['app', 'devstoreaccount1', 'Jobs', 'get']);
  expect(s('table', 'GET', '/devstoreaccount1/Jobs()?$filter=x')).toEqual(['app', 'devstoreaccount1', 'Jobs', 'query']);
  expect(s('table', 'MERGE', "/devstoreaccount1/Jobs(PartitionKey='a',RowKey='b')")).toEqual(['app', 'devstoreaccount1', 'Jobs', 'merge']);
  expect(s('table', 'PUT', "/devstoreaccount1/HpcMpiHubInstances(PartitionKey='a',RowKey='')")).toEqual([
    'durable',
    'devstoreaccount1',
    'HpcMpiHubInstances',
    'replace',
  ]);
  expect(s('table', 'POST', '/devstoreaccount1/$batch')).toEqual(['durable', 'devstoreaccount1', '$batch', 'batch']);
  expect(s('table', 'POST', '/devstoreaccount1/Tables')).toEqual(['app', 'devstoreaccount1', '', 'create-table']);
});

test("queue requests: the pollers' dequeues apart, puts and deletes of the hub's queues are durable", () => {
  expect(s('queue', 'GET', '/devstoreaccount1/hpcmpihub-control-00/messages?numofmessages=32')).toEqual([
    'poller',
    'devstoreaccount1',
    'hpcmpihub-control-00',
    'get-messages',
  ]);
  expect(s('queue', 'POST', '/devstoreaccount1/hpcmpihub-workitems/messages')).toEqual(['durable', 'devstoreaccount1', 'hpcmpihub-workitems', 'put-message']);
  expect(s('queue', 'DELETE', '/devstoreaccount1/job-events/messages/abc?popreceipt=x')).toEqual(['app', 'devstoreaccount1', 'job-events', 'delete-message']);
  expect(s('queue', 'GET', '/devstoreaccount1/job-events/messages?peekonly=true')).toEqual(['app', 'devstoreaccount1', 'job-events', 'peek']);
});

test('blob requests: reads, writes with their comp, listings, the user delegation key', () => {
  expect(s('blob', 'GET', '/staging1/shards/a/b.bin')).toEqual(['app', 'staging1', 'shards', 'read']);
  expect(s('blob', 'PUT', '/staging1/shards/a?comp=block&blockid=x')).toEqual(['app', 'staging1', 'shards', 'write-block']);
  expect(s('blob', 'GET', '/staging1/shards?restype=container&comp=list')).toEqual(['app', 'staging1', 'shards', 'list-blobs']);
  expect(s('blob', 'POST', '/staging1/?restype=service&comp=userdelegationkey')).toEqual(['app', 'staging1', '', 'user-delegation-key']);
});

test("the emulated nodes' own transfers (their agent's User-Agent) are the nodes', not the control plane's", () => {
  const ua = `${NODE_AGENT_USER_AGENT} azsdk-js-storageblob/12.0.0`;
  expect(classifyStorage('blob', 'PUT', '/data/results/u/j/logs/nodes/n1/stdout.txt', 'HpcMpiHub', ua)).toMatchObject({
    component: 'node',
    resource: 'results',
    operation: 'write',
  });
  expect(classifyStorage('blob', 'PUT', '/data/results/u/j/logs/nodes/n1/stdout.txt', 'HpcMpiHub', 'azsdk-js-storageblob/12.0.0')).toMatchObject({
    component: 'app',
  });
});

test('Batch paths as templates, ids replaced; a file path is one id', () => {
  expect(batchTemplate('/pools/p1/nodes')).toBe('/pools/{}/nodes');
  expect(batchTemplate('/jobs/j/tasks/t/files/wd/out/a.txt')).toBe('/jobs/{}/tasks/{}/files/{}');
  expect(batchTemplate('/jobs/j/tasks?$select=id')).toBe('/jobs/{}/tasks');
  expect(classifyBatch('batch', 'get', '/jobs/j/tasks/mpi')).toMatchObject({ service: 'batch', resource: '/jobs/{}/tasks/{}', operation: 'GET' });
});

test("intake: nothing after the start message is intake's (the engine's episode and the job's first activity run then)", () => {
  const c = (component: string, service: string, operation: string) => ({ component, service, operation, resource: '', account: '', url: '', at: 0 }) as never;
  const window = [
    c('app', 'table', 'insert'),
    c('poller', 'queue', 'get-messages'),
    c('durable', 'table', 'insert'),
    c('durable', 'queue', 'put-message'),
    c('durable', 'table', 'get'),
    c('app', 'table', 'merge'),
  ];
  expect(intakeRequests(window).map((x: { operation: string }) => x.operation)).toEqual(['insert', 'insert', 'put-message']);
});
