/**
 * The emulator's run-time contract comes from the SDKs' mappers (local/batch/contract/sdkContract.ts), never from
 * ../shared/specs. This test holds that derived contract against the official Swagger files (which tests may read),
 * so the two cannot drift apart silently, and proves that the validators answer with no ../shared reachable.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Ajv from 'ajv';
import { CACHEABLE_CODE, cachingCompiler } from '../../local/batch/contract/compiledValidators';
import { registerBatchFormats } from '../../local/batch/contract/formats';
import {
  cachedDocument,
  dataPlaneDocument,
  deriveDataPlaneDocument,
  deriveManagementDocument,
  managementDocument,
  type SwaggerLikeDocument,
} from '../../local/batch/contract/sdkContract';
import { createContractValidator, defaultSpecPath } from '../../local/batch/contract';
import { createManagementValidator, defaultManagementSpecDir, MANAGEMENT_SPEC_FILE } from '../../local/batch/contract/managementValidator';
import { LATER_REVISION_PROPERTIES } from '../../local/batch/contract/swaggerToJsonSchema';

type Schema = Record<string, unknown>;
const official = JSON.parse(readFileSync(defaultSpecPath(), 'utf8')) as SwaggerLikeDocument;
const officialArm = JSON.parse(readFileSync(join(defaultManagementSpecDir(), MANAGEMENT_SPEC_FILE), 'utf8')) as SwaggerLikeDocument;

function operations(doc: SwaggerLikeDocument): Map<string, { method: string; path: string; query: string[]; body: boolean; statuses: string[] }> {
  const out = new Map<string, { method: string; path: string; query: string[]; body: boolean; statuses: string[] }>();
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      if (method === 'parameters') continue;
      const params = (op.parameters ?? []).map((p) => (p.$ref ? doc.parameters[p.$ref.split('/').pop() ?? ''] : p)).filter(Boolean);
      out.set(op.operationId, {
        method,
        path: path.replace(/\{[^}]+\}/g, '{}').toLowerCase(),
        query: params
          .filter((p) => p.in === 'query')
          .map((p) => p.name)
          .sort(),
        // The body's parameter name is not on the wire (the SDK names flattened bodies after their model).
        body: params.some((p) => p.in === 'body'),
        statuses: Object.keys(op.responses).sort(),
      });
    }
  }
  return out;
}

/** Wire type of a Swagger property: integer/number/string/boolean/array/object, with format for numbers. */
function wireType(s: Schema): string {
  const target = s.$ref ? official.definitions[String(s.$ref).split('/').pop() ?? ''] : undefined;
  if (target?.enum) return 'string'; // the spec's named enums; their values are compared below
  if (s.$ref) return `ref:${String(s.$ref).split('/').pop()}`;
  if (s.type === 'array') return `array<${wireType((s.items ?? {}) as Schema)}>`;
  if (s.type === 'integer' || s.type === 'number') return `${String(s.type)}/${String(s.format)}`;
  return String(s.type ?? 'any');
}

/** A valid Pool_Add body: the SDK-built and the cached validators must both accept it. */
const SAMPLE_POOL = {
  id: 'p1',
  vmSize: 'standard_d2s_v3',
  virtualMachineConfiguration: {
    imageReference: { publisher: 'canonical', offer: '0001-com-ubuntu-server-jammy', sku: '22_04-lts', version: 'latest' },
    nodeAgentSKUId: 'batch.node.ubuntu 22.04',
  },
  targetDedicatedNodes: 1,
};

describe('the data-plane contract derived from @azure/batch matches the official spec', () => {
  // Derived afresh here, never read from the cache the validators use; the cached one must be the same.
  const sdk = deriveDataPlaneDocument();
  const sdkOps = operations(sdk);
  const specOps = operations(official);

  it('is the document the validators use (from the cache when there is one)', () => {
    expect(dataPlaneDocument()).toEqual(JSON.parse(JSON.stringify(sdk)));
  });

  it('has the same api-version and the same operations, paths, query parameters, bodies and statuses', () => {
    expect(sdk.info.version).toBe(official.info.version);
    expect([...sdkOps.keys()].sort()).toEqual([...specOps.keys()].sort());
    for (const [id, op] of specOps) expect({ id, ...sdkOps.get(id) }).toEqual({ id, ...op });
  });

  it('has every spec model with the same properties, required lists, types and enums', () => {
    const differences: string[] = [];
    for (const [name, def] of Object.entries(official.definitions)) {
      const mine = sdk.definitions[name];
      const props = (def.properties ?? {}) as Record<string, Schema>;
      if (!mine) {
        if (Object.keys(props).length) differences.push(`${name}: missing`);
        continue;
      }
      const myProps = (mine.properties ?? {}) as Record<string, Schema>;
      const later = Object.keys(LATER_REVISION_PROPERTIES[name] ?? {});
      expect({
        name,
        props: Object.keys(myProps)
          .filter((p) => !later.includes(p))
          .sort(),
      }).toEqual({ name, props: Object.keys(props).sort() });
      const required = ((def.required ?? []) as string[]).filter((p) => !(props[p] as Schema | undefined)?.readOnly);
      expect({ name, required: ((mine.required ?? []) as string[]).sort() }).toEqual({ name, required: [...required].sort() });
      for (const [p, s] of Object.entries(props)) {
        const m = myProps[p];
        if (wireType(m) !== wireType(s)) differences.push(`${name}.${p}: ${wireType(m)} vs spec ${wireType(s)}`);
        const values = (s.enum ?? official.definitions[String(s.$ref).split('/').pop() ?? '']?.enum) as string[] | undefined;
        if (values) expect({ at: `${name}.${p}`, enum: [...((m.enum ?? []) as string[])].sort() }).toEqual({ at: `${name}.${p}`, enum: [...values].sort() });
      }
    }
    expect(differences).toEqual([]);
  });
});

/**
 * Where @azure/arm-batch 9.1.0 itself differs from the stored TypeSpec-generated 2023-11-01 file: the SDK keeps the
 * service's historical action paths. None is a pool operation; the emulator implements none of them (501).
 */
const ACCOUNT = '/subscriptions/{}/resourcegroups/{}/providers/microsoft.batch/batchaccounts/{}';
const ARM_PATH_DIFFERENCES: Record<string, string> = {
  Certificates_CancelDeletion: `${ACCOUNT}/certificates/{}/canceldelete`,
  BatchAccounts_GetKeys: `${ACCOUNT}/listkeys`,
  BatchAccounts_ListOutboundNetworkDependenciesEndpoints: `${ACCOUNT}/outboundnetworkdependenciesendpoints`,
  BatchAccounts_RegenerateKey: `${ACCOUNT}/regeneratekeys`,
  BatchAccounts_SynchronizeAutoStorageKeys: `${ACCOUNT}/syncautostoragekeys`,
};

describe('the management contract derived from @azure/arm-batch matches the official spec', () => {
  const sdk = deriveManagementDocument();
  it('is the document the validators use (from the cache when there is one)', () => {
    expect(managementDocument()).toEqual(JSON.parse(JSON.stringify(sdk)));
  });

  it('has the same api-version and the same operations at the same paths and methods', () => {
    expect(sdk.info.version).toBe(officialArm.info.version);
    const mine = operations(sdk);
    const theirs = operations(officialArm);
    expect([...mine.keys()].sort()).toEqual([...theirs.keys()].sort());
    const differences = [...theirs]
      .filter(([id, op]) => mine.get(id)?.method !== op.method || mine.get(id)?.path !== (ARM_PATH_DIFFERENCES[id] ?? op.path))
      .map(([id, op]) => `${id}: ${mine.get(id)?.method} ${mine.get(id)?.path} vs spec ${op.method} ${op.path}`);
    expect(differences).toEqual([]);
  });

  it('has the spec pool model: the same properties under properties', () => {
    const mine = sdk.definitions.Pool.properties as Record<string, Schema>;
    const props = officialArm.definitions.PoolProperties.properties as Record<string, Schema>;
    expect(Object.keys((mine.properties as Schema).properties as Schema).sort()).toEqual(Object.keys(props).sort());
  });
});

describe('the validators need no ../shared at run time', () => {
  const before = { path: process.env.BATCH_SPEC_PATH, dir: process.env.BATCH_SPEC_DIR };
  afterAll(() => {
    for (const [k, v] of [
      ['BATCH_SPEC_PATH', before.path],
      ['BATCH_SPEC_DIR', before.dir],
    ] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('reading a spec file that is not there fails, so the default validators cannot be reading one', () => {
    expect(() => createContractValidator({ specPath: '/nonexistent/specs/BatchService.json' })).toThrow(/ENOENT/);
    expect(() => createManagementValidator('/nonexistent/specs')).toThrow(/ENOENT/);
  });

  it('the data-plane validator built from the SDK accepts a valid pool and refuses an invalid one', () => {
    delete process.env.BATCH_SPEC_PATH;
    const v = createContractValidator();
    const pool = SAMPLE_POOL;
    expect(v.requestBodyErrors('Pool_Add', pool)).toEqual([]);
    const errors = v.requestBodyErrors('Pool_Add', { ...pool, vmSize: undefined, bogus: 1, targetDedicatedNodes: 1.5 });
    expect(errors.map((e) => e.keyword).sort()).toEqual(expect.arrayContaining(['additionalProperties', 'required', 'type']));
    expect(v.describeOperation('POST', '/pools/p1/nodes/n1/reimage')?.operationId).toBe('ComputeNode_Reimage');
    expect(v.validateRequest({ method: 'GET', path: '/pools?api-version=2022-10-01.16.0&maxresults=5000' }).join()).toMatch(/maxresults/);
  });

  it('the management validator built from the SDK accepts a valid pool and refuses an invalid one', () => {
    delete process.env.BATCH_SPEC_DIR;
    const v = createManagementValidator();
    const pool = {
      properties: {
        vmSize: 'STANDARD_D2S_V3',
        deploymentConfiguration: {
          virtualMachineConfiguration: { imageReference: { publisher: 'canonical', offer: 'x', sku: 'y' }, nodeAgentSkuId: 'batch.node.ubuntu 22.04' },
        },
      },
    };
    expect(v.requestBodyErrors('Pools_Create', pool)).toEqual([]);
    expect(v.requestBodyErrors('Pools_Create', { properties: { ...pool.properties, vmSize: 7, extra: true } }).length).toBeGreaterThan(0);
    expect(v.matchOperation('PATCH', '/subscriptions/s/resourceGroups/r/providers/Microsoft.Batch/batchAccounts/a/pools/p')).toBe('Pools_Update');
  });
});

describe('the derived documents are cached by SDK version', () => {
  const doc = (version: string): SwaggerLikeDocument => ({ info: { version }, paths: {}, definitions: {}, parameters: {} });
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'contract-cache-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('derives once, then reads the cache file; leaves no temporary file behind', () => {
    const derive = jest.fn(() => doc('v1'));
    expect(cachedDocument('@azure/batch', derive, dir)).toEqual(doc('v1'));
    expect(cachedDocument('@azure/batch', derive, dir)).toEqual(doc('v1'));
    expect(derive).toHaveBeenCalledTimes(1);
    expect(readdirSync(dir)).toEqual([expect.stringMatching(/^-azure-batch-[0-9a-f]{16}\.json$/)]);
  });

  it('ignores a damaged or altered file and derives over it', () => {
    cachedDocument('@azure/batch', () => doc('v1'), dir);
    const [name] = readdirSync(dir);
    const text = readFileSync(join(dir, name), 'utf8');
    for (const damaged of [text.slice(0, text.length - 3), text.replace('"v1"', '"v2"'), '', 'not json\n{}']) {
      writeFileSync(join(dir, name), damaged);
      const derive = jest.fn(() => doc('v1'));
      expect(cachedDocument('@azure/batch', derive, dir)).toEqual(doc('v1'));
      expect(derive).toHaveBeenCalledTimes(1);
      expect(readFileSync(join(dir, name), 'utf8')).toBe(text);
    }
  });

  it('keys each SDK apart, and still answers when the cache cannot be written', () => {
    cachedDocument('@azure/batch', () => doc('data'), dir);
    expect(cachedDocument('@azure/arm-batch', () => doc('arm'), dir)).toEqual(doc('arm'));
    expect(readdirSync(dir)).toHaveLength(2);
    expect(cachedDocument('@azure/batch', () => doc('data'), join(dir, readdirSync(dir)[0], 'not-a-dir'))).toEqual(doc('data'));
  });
});

describe('validators loaded from the cache answer as the ones ajv compiles', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'contract-validators-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const pool = SAMPLE_POOL;
  const pools = [
    pool,
    { ...pool, vmSize: undefined, bogus: 1, targetDedicatedNodes: 1.5 },
    { ...pool, targetDedicatedNodes: 2 ** 40, resizeTimeout: 'PT1X', taskSchedulingPolicy: { nodeFillType: 'sideways' } },
    { ...pool, startTask: { commandLine: 7, userIdentity: { autoUser: { scope: 'nowhere', extra: true } } }, metadata: [{ name: 'a' }] },
  ];
  const tasks = [
    { id: 't', commandLine: 'x', constraints: { maxWallClockTime: 'P10675199DT2H48M5.4775807S', maxTaskRetryCount: '3' } },
    { id: 't', commandLine: 'x', multiInstanceSettings: { numberOfInstances: 2, coordinationCommandLine: null }, exitConditions: { preProcessingError: {} } },
  ];

  // Compiling is what the cache saves, so each plane is compared once: the data plane from the SDK contract (what
  // the emulator checks with), the management plane from the spec files (allOf, refs across documents).
  it('data plane: the same errors for the same bodies and answers', () => {
    const answers = (v: ReturnType<typeof createContractValidator>) => [
      ...pools.map((b) => v.requestBodyErrors('Pool_Add', b)),
      ...tasks.map((b) => v.requestBodyErrors('Task_Add', b)),
      v.validateResponse({
        method: 'GET',
        path: '/pools/p1?api-version=2022-10-01.16.0',
        status: 200,
        responseHeaders: { 'last-modified': 'Sun, 06 Nov 1994 08:49:37 GMT', etag: '0x1' },
        responseBody: { id: 'p1', state: 'sideways', creationTime: 'yesterday', currentDedicatedNodes: -1.5, x: 1 },
      }),
    ];
    const first = answers(createContractValidator({ cacheDir: dir }));
    expect(first.flat().length).toBeGreaterThan(10);
    expect(readdirSync(dir).length).toBeGreaterThan(0);
    expect(answers(createContractValidator({ cacheDir: dir }))).toEqual(first);
  });

  it('management: the same errors for the same bodies', () => {
    const body = { properties: { vmSize: 7, extra: true, scaleSettings: { fixedScale: { targetDedicatedNodes: 'two', resizeTimeout: 'PT1X' } } } };
    const first = createManagementValidator(defaultManagementSpecDir(), dir).requestBodyErrors('Pools_Create', body);
    expect(first.length).toBeGreaterThan(2);
    expect(createManagementValidator(defaultManagementSpecDir(), dir).requestBodyErrors('Pools_Create', body)).toEqual(first);
  });

  it('the second validator is loaded, not compiled (ajv marks what it compiles with its schema)', () => {
    const schema = { type: 'object', properties: { n: { type: 'integer', format: 'int32' } } };
    const ajvFor = () => {
      const ajv = new Ajv({ allErrors: true, strict: false, code: CACHEABLE_CODE });
      registerBatchFormats(ajv);
      return ajv;
    };
    const compiled = cachingCompiler({ ajv: ajvFor(), documents: [], dir })(schema);
    const loaded = cachingCompiler({ ajv: ajvFor(), documents: [], dir })(schema);
    expect((compiled as { schema?: unknown }).schema).toEqual(schema);
    expect((loaded as { schema?: unknown }).schema).toBeUndefined();
    for (const data of [{ n: 1 }, { n: 2 ** 31 }, { n: 'x' }]) {
      expect(loaded(data)).toBe(compiled(data));
      expect(loaded.errors).toEqual(compiled.errors);
    }
  });
});
