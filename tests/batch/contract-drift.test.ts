/**
 * The emulator's run-time contract comes from the SDKs' mappers (local/batch/contract/sdkContract.ts), never from
 * ../shared/specs. This test holds that derived contract against the official Swagger files (which tests may read),
 * so the two cannot drift apart silently, and proves that the validators answer with no ../shared reachable.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dataPlaneDocument, managementDocument, type SwaggerLikeDocument } from '../../local/batch/contract/sdkContract';
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

describe('the data-plane contract derived from @azure/batch matches the official spec', () => {
  const sdk = dataPlaneDocument();
  const sdkOps = operations(sdk);
  const specOps = operations(official);

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
  const sdk = managementDocument();
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
    const pool = {
      id: 'p1',
      vmSize: 'standard_d2s_v3',
      virtualMachineConfiguration: {
        imageReference: { publisher: 'canonical', offer: '0001-com-ubuntu-server-jammy', sku: '22_04-lts', version: 'latest' },
        nodeAgentSKUId: 'batch.node.ubuntu 22.04',
      },
      targetDedicatedNodes: 1,
    };
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
