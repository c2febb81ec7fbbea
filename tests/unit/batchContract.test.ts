import { createContractValidator, defaultSpecPath, type ContractExchange } from '../../local/batch/contract';
import { convertDefinitions, convertSchema } from '../../local/batch/contract/swaggerToJsonSchema';
import { route, emulatedRoutes } from '../../local/batch/handlers/router';
import { productOperations } from '../batch/productOperations';

const v = createContractValidator({ specPath: defaultSpecPath() });
const API = 'api-version=2022-10-01.16.0';
const JSON_HEADERS = { 'content-type': 'application/json; odata=minimalmetadata; charset=utf-8' };

const goodPool = {
  id: 'job1-pool',
  vmSize: 'standard_hb120rs_v3',
  virtualMachineConfiguration: {
    imageReference: { publisher: 'microsoft-azure-batch', offer: 'ubuntu-server-container', sku: '20-04-lts', version: 'latest' },
    nodeAgentSKUId: 'batch.node.ubuntu 20.04',
    containerConfiguration: { type: 'dockerCompatible' },
  },
  targetDedicatedNodes: 2,
  enableInterNodeCommunication: true,
  taskSlotsPerNode: 1,
  resizeTimeout: 'PT15M',
  metadata: [{ name: 'hpc-cp-job', value: 'job1' }],
  targetNodeCommunicationMode: 'default',
};

const addPool = (body: unknown, extra: Partial<ContractExchange> = {}): ContractExchange => ({
  method: 'POST',
  path: `/pools?${API}`,
  headers: JSON_HEADERS,
  requestBody: JSON.stringify(body),
  ...extra,
});

describe('matchOperation', () => {
  test.each([
    ['POST', '/pools', 'Pool_Add'],
    ['GET', '/pools/p1', 'Pool_Get'],
    ['HEAD', '/pools/p1', 'Pool_Exists'],
    ['GET', '/pools/p1/nodes', 'ComputeNode_List'],
    ['GET', '/pools/p1/nodes/tvm-1', 'ComputeNode_Get'],
    ['POST', '/jobs/j1/tasks', 'Task_Add'],
    ['GET', '/jobs/j1/taskcounts', 'Job_GetTaskCounts'],
    ['GET', '/jobs/j1/tasks/t1/subtasksinfo', 'Task_ListSubtasks'],
    ['GET', '/jobs/j1/tasks/t1/files/stdout.txt', 'File_GetFromTask'],
    ['GET', '/jobs/j1/tasks/t1/files/wd%2Fout%2Flog.txt', 'File_GetFromTask'],
    ['GET', '/jobs/j1/tasks/t1/files/wd/out/log.txt', 'File_GetFromTask'],
    ['GET', '/jobs/j1/tasks/t1/files', 'File_ListFromTask'],
    ['GET', '/pools/p1/nodes/n1/files/startup/stdout.txt', 'File_GetFromComputeNode'],
    ['DELETE', '/certificates(thumbprintAlgorithm=sha1,thumbprint=abc)', 'Certificate_Delete'],
    ['POST', '/pools/p1/resize?api-version=x', 'Pool_Resize'],
  ])('%s %s -> %s', (method, path, id) => {
    expect(v.matchOperation(method, path)).toBe(id);
  });

  test('unknown method/path pairs match nothing', () => {
    expect(v.matchOperation('PUT', '/pools')).toBeUndefined();
    expect(v.matchOperation('GET', '/nonsense/x')).toBeUndefined();
    expect(v.validateRequest({ method: 'GET', path: '/nonsense' })[0]).toMatch(/no operation in the spec/);
  });

  test('the spec has 78 operations (every method of every path)', () => {
    expect(v.operationIds()).toHaveLength(78);
  });
});

describe('validateRequest', () => {
  test('a well-formed pool add passes, including targetNodeCommunicationMode', () => {
    expect(v.validateRequest(addPool(goodPool))).toEqual([]);
  });

  test('an unknown property fails and is named with its location', () => {
    const bad = { ...goodPool, virtualMachineConfiguration: { ...goodPool.virtualMachineConfiguration, preloadEverything: true } };
    expect(v.validateRequest(addPool(bad))).toEqual([
      'Pool_Add request body: /virtualMachineConfiguration has property "preloadEverything" that the spec does not define',
    ]);
  });

  test('a missing required property fails', () => {
    const { vmSize: _drop, ...bad } = goodPool;
    expect(v.validateRequest(addPool(bad))).toEqual(['Pool_Add request body: / is missing required property "vmSize"']);
  });

  test('targetNodeCommunicationMode is allowed only where the SDK sends it', () => {
    const job = { id: 'j1', poolInfo: { poolId: 'p1' }, targetNodeCommunicationMode: 'default' };
    const problems = v.validateRequest({ method: 'POST', path: `/jobs?${API}`, headers: JSON_HEADERS, requestBody: job });
    expect(problems).toEqual(['Job_Add request body: / has property "targetNodeCommunicationMode" that the spec does not define']);
  });

  test('wrong types, enums and formats fail', () => {
    const bad = {
      ...goodPool,
      targetDedicatedNodes: 'two',
      resizeTimeout: '15 minutes',
      virtualMachineConfiguration: { ...goodPool.virtualMachineConfiguration, containerConfiguration: { type: 'docker' } },
    };
    const problems = v.validateRequest(addPool(bad));
    expect(problems).toHaveLength(3);
    expect(problems.join('\n')).toMatch(/targetDedicatedNodes must be integer/);
    expect(problems.join('\n')).toMatch(/resizeTimeout must match format "duration"/);
    expect(problems.join('\n')).toMatch(/containerConfiguration\/type must be one of \["dockerCompatible"\]/);
  });

  test('api-version is required and must be the spec version', () => {
    expect(v.validateRequest(addPool(goodPool, { path: '/pools' }))).toEqual(['Pool_Add request: required query parameter "api-version" is missing']);
    expect(v.validateRequest(addPool(goodPool, { path: '/pools?api-version=2020-01-01.11.0' }))[0]).toMatch(
      /api-version "2020-01-01.11.0" is not the spec's version/,
    );
  });

  test('query parameters: unknown ones fail, typed ones are checked', () => {
    const list = (q: string) => v.validateRequest({ method: 'GET', path: `/pools/p1/nodes?${API}&${q}` });
    expect(list('maxresults=10&$filter=state%20eq%20%27idle%27')).toEqual([]);
    expect(list('maxresults=ten')).toEqual(['ComputeNode_List request: query parameter "maxresults"="ten" must be integer']);
    expect(list('colour=red')).toEqual(['ComputeNode_List request: query parameter "colour" is not defined by the spec']);
    // query given separately, as a parsed object
    expect(v.validateRequest({ method: 'GET', path: '/pools/p1/nodes', query: { 'api-version': '2022-10-01.16.0', timeout: '30' } })).toEqual([]);
  });

  test('header formats are checked (client-request-id is a uuid, ocp-date RFC 1123)', () => {
    const ok = v.validateRequest({
      method: 'GET',
      path: `/pools/p1?${API}`,
      headers: { 'client-request-id': '9c4d50ee-2d56-4cd3-8152-34347dc9f2b0', 'ocp-date': 'Sat, 21 Nov 2026 19:00:00 GMT' },
    });
    expect(ok).toEqual([]);
    const bad = v.validateRequest({ method: 'GET', path: `/pools/p1?${API}`, headers: { 'client-request-id': 'abc', 'ocp-date': 'yesterday' } });
    expect(bad).toHaveLength(2);
  });

  test('body rules: required body missing, body where none is defined, non-JSON body', () => {
    expect(v.validateRequest({ method: 'POST', path: `/jobs?${API}` })).toEqual(['Job_Add request: required body "job" is missing']);
    expect(v.validateRequest({ method: 'POST', path: `/pools/p1/stopresize?${API}`, requestBody: '{"a":1}' })[0]).toMatch(/defines no body for this operation/);
    expect(v.validateRequest({ method: 'POST', path: `/jobs?${API}`, requestBody: '{oops' })[0]).toMatch(/body is not JSON/);
    // optional body may be absent
    expect(v.validateRequest({ method: 'POST', path: `/jobs/j1/terminate?${API}`, requestBody: '' })).toEqual([]);
  });

  test('a multi-instance task add with container settings passes; missing coordinationCommandLine fails', () => {
    const task = {
      id: 'mpi',
      commandLine: '/bin/bash -c "mpirun hostname"',
      multiInstanceSettings: { numberOfInstances: 2, coordinationCommandLine: '/bin/true', commonResourceFiles: [{ httpUrl: 'http://x/y', filePath: 'y' }] },
      containerSettings: { imageName: 'img:1', containerRunOptions: '--net=host' },
      environmentSettings: [{ name: 'A', value: 'b' }],
      constraints: { maxWallClockTime: 'PT1H', maxTaskRetryCount: 0 },
    };
    const ex = { method: 'POST', path: `/jobs/j1/tasks?${API}`, headers: JSON_HEADERS, requestBody: task };
    expect(v.validateRequest(ex)).toEqual([]);
    const broken = { ...task, multiInstanceSettings: { numberOfInstances: 2 } };
    expect(v.validateRequest({ ...ex, requestBody: broken })).toEqual([
      'Task_Add request body: /multiInstanceSettings is missing required property "coordinationCommandLine"',
    ]);
  });
});

describe('validateResponse', () => {
  const pool = {
    'odata.metadata': 'https://acct.batch/$metadata#pools/@Element',
    id: 'p1',
    url: 'https://acct/pools/p1',
    state: 'active',
    allocationState: 'steady',
    vmSize: 'standard_d2_v3',
    currentDedicatedNodes: 2,
    targetDedicatedNodes: 2,
    creationTime: '2026-11-21T19:00:00.000Z',
    resizeErrors: [{ code: 'AllocationFailed', message: 'no capacity', values: [{ name: 'Reason', value: 'x' }] }],
    currentNodeCommunicationMode: 'classic',
    targetNodeCommunicationMode: 'default',
  };
  const get = (body: unknown, status = 200): ContractExchange => ({
    method: 'GET',
    path: `/pools/p1?${API}`,
    status,
    responseBody: JSON.stringify(body),
    responseHeaders: { 'request-id': '9c4d50ee-2d56-4cd3-8152-34347dc9f2b0', 'last-modified': 'Sat, 21 Nov 2026 19:00:00 GMT' },
  });

  test('a pool (with odata.metadata and the later-revision mode properties) passes', () => {
    expect(v.validateResponse(get(pool))).toEqual([]);
  });

  test('unknown response properties fail, also nested', () => {
    expect(v.validateResponse(get({ ...pool, colour: 'red' }))).toEqual(['Pool_Get response 200 body: / has property "colour" that the spec does not define']);
    const nested = { ...pool, resizeErrors: [{ code: 'X', message: 'm', detail: 'extra' }] };
    expect(v.validateResponse(get(nested))[0]).toMatch(/\/resizeErrors\/0 has property "detail"/);
  });

  test('wrong enum and date formats fail', () => {
    expect(v.validateResponse(get({ ...pool, state: 'running' }))[0]).toMatch(/\/state must be one of/);
    expect(v.validateResponse(get({ ...pool, creationTime: 'today' }))[0]).toMatch(/creationTime must match format "date-time"/);
  });

  test('error responses are checked against BatchError', () => {
    const err = { 'odata.metadata': 'x', code: 'PoolNotFound', message: { lang: 'en-US', value: 'The specified pool does not exist.' } };
    expect(v.validateResponse(get(err, 404))).toEqual([]);
    expect(v.validateResponse(get({ code: 'PoolNotFound', message: 'plain string' }, 404))[0]).toMatch(/\/message must be object/);
    expect(v.validateResponse(get({ error: 'x' }, 500))[0]).toMatch(/property "error" that the spec does not define/);
  });

  test('undocumented success codes and unexpected bodies fail', () => {
    expect(v.validateResponse({ method: 'POST', path: `/pools?${API}`, status: 200 })[0]).toMatch(
      /status 200 is not documented for this operation \(documented: 201, default\)/,
    );
    expect(v.validateResponse({ method: 'POST', path: `/pools?${API}`, status: 201, responseBody: '{"id":"p"}' })[0]).toMatch(
      /defines no body for this response/,
    );
    expect(v.validateResponse({ method: 'POST', path: `/pools?${API}`, status: 201, responseBody: '' })).toEqual([]);
    expect(v.validateResponse(get(undefined))[0]).toMatch(/defines a body for this response, but none was returned/);
  });

  test('file downloads are not parsed as JSON; HEAD 404 for exists is documented', () => {
    const file: ContractExchange = {
      method: 'GET',
      path: `/jobs/j1/tasks/t1/files/stdout.txt?${API}`,
      status: 200,
      responseBody: 'hello world\n',
      responseHeaders: { 'ocp-batch-file-isdirectory': 'false', 'content-length': '12' },
    };
    expect(v.validateResponse(file)).toEqual([]);
    expect(v.validateResponse({ ...file, responseHeaders: { 'ocp-batch-file-isdirectory': 'maybe' } })[0]).toMatch(
      /header "ocp-batch-file-isdirectory"="maybe" must be boolean/,
    );
    expect(v.validateResponse({ method: 'HEAD', path: `/pools/p1?${API}`, status: 404 })).toEqual([]);
  });

  test('a response header with a bad format fails', () => {
    const ex = get(pool);
    expect(v.validateResponse({ ...ex, responseHeaders: { 'request-id': 'not-a-uuid' } })[0]).toMatch(
      /header "request-id"="not-a-uuid" must match format "uuid"/,
    );
  });
});

describe('swagger → JSON Schema conversion', () => {
  test('documentation and x-ms-* keywords are dropped; listed properties become closed; free-form objects stay open', () => {
    const out = convertSchema({
      type: 'object',
      title: 't',
      description: 'd',
      'x-ms-enum': { name: 'E' },
      properties: { a: { type: 'string', readOnly: true }, settings: { type: 'object', title: 'free' } },
      required: ['a'],
    });
    expect(out).toEqual({
      type: 'object',
      properties: { a: { type: 'string' }, settings: { type: 'object' } },
      required: ['a'],
      additionalProperties: false,
    });
  });

  test('x-nullable allows null; $ref points at the shared definitions document', () => {
    expect(convertSchema({ type: 'integer', 'x-nullable': true })).toEqual({ type: ['integer', 'null'] });
    expect(convertSchema({ $ref: '#/definitions/CloudPool' })).toEqual({ $ref: 'batch-definitions#/definitions/CloudPool' });
    expect(() => convertSchema({ $ref: 'other.json#/x' })).toThrow(/unsupported \$ref/);
  });

  test('a later-revision allowance that the spec already defines is refused (so it gets removed when the spec catches up)', () => {
    expect(() => convertDefinitions({ CloudPool: { type: 'object', properties: { targetNodeCommunicationMode: { type: 'string' } } } })).toThrow(
      /CloudPool.targetNodeCommunicationMode already exists in the spec/,
    );
  });
});

describe('the emulator and the product against the spec', () => {
  /** A concrete path for a route pattern: {x} → x1, {*filePath} → dir/file.txt. */
  const samplePath = (pattern: string) => '/' + pattern.replace(/\{\*\w+\}/g, 'dir/file.txt').replace(/\{\w+\}/g, 'x1');

  test('every emulated route is an operation of the spec (the rest answer 501 naming theirs)', () => {
    const routes = emulatedRoutes();
    expect(routes.length).toBeGreaterThan(40);
    for (const r of routes) expect([r.method, r.pattern, v.matchOperation(r.method, samplePath(r.pattern))]).toEqual([r.method, r.pattern, expect.any(String)]);
  });

  test('every operation the product calls (read from shared/adapters/batch) is a spec operation the emulator emulates', () => {
    const ops = productOperations();
    expect(ops).toEqual(expect.arrayContaining(['Pool_Add', 'Job_Add', 'Task_Add', 'Task_ListSubtasks', 'File_GetFromTask']));
    const emulated = new Set(emulatedRoutes().map((r) => v.matchOperation(r.method, samplePath(r.pattern))));
    expect(ops.filter((op) => !v.operationIds().includes(op))).toEqual([]);
    expect(ops.filter((op) => !emulated.has(op))).toEqual([]);
    expect(route('POST', ['pools', 'p1', 'enableautoscale'])).toBeUndefined(); // not emulated: the server answers 501
  });
});
