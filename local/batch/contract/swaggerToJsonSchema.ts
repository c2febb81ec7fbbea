/**
 * Converts the Swagger 2.0 schema dialect of the Batch spec into JSON Schema (draft-07) that ajv
 * compiles, and makes it strict: every object that lists its properties refuses any other property.
 *
 * The spec itself never says `additionalProperties: false`, so a literal reading would accept any
 * stray field; the contract tests exist precisely to catch those, so strictness is added here.
 */

export type JsonSchema = Record<string, unknown>;

/** A Swagger 2.0 operation parameter, as both specs (Batch data plane, Batch management) write them. */
export interface SwaggerParameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'body' | 'formData';
  required?: boolean;
  type?: string;
  format?: string;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  schema?: JsonSchema;
  $ref?: string;
}

/** The enum the SDK (built from a later revision of the spec) uses for node communication mode. */
const NODE_COMMUNICATION_MODE: JsonSchema = { type: 'string', enum: ['default', 'classic', 'simplified'] };

/**
 * Properties that exist in the later spec revision @azure/batch 10.2.0 was generated from, but not
 * in the saved 2022-10-01.16.0 file (the SDK's models carry node communication modes, which the service added in a
 * later 2022-10-01 revision). They are allowed exactly
 * where the SDK sends or receives them.
 */
export const LATER_REVISION_PROPERTIES: Record<string, Record<string, JsonSchema>> = {
  PoolSpecification: { targetNodeCommunicationMode: NODE_COMMUNICATION_MODE },
  PoolAddParameter: { targetNodeCommunicationMode: NODE_COMMUNICATION_MODE },
  PoolUpdatePropertiesParameter: { targetNodeCommunicationMode: NODE_COMMUNICATION_MODE },
  PoolPatchParameter: { targetNodeCommunicationMode: NODE_COMMUNICATION_MODE },
  CloudPool: {
    targetNodeCommunicationMode: NODE_COMMUNICATION_MODE,
    currentNodeCommunicationMode: NODE_COMMUNICATION_MODE,
  },
};

/** The id under which the converted definitions are registered with ajv. */
export const DEFINITIONS_ID = 'batch-definitions';

/** Keywords that only document (or drive code generation) and carry no validation meaning. */
const DOC_KEYWORDS = new Set(['title', 'description', 'default', 'externalDocs', 'example', 'readOnly', 'discriminator']);

/**
 * One Swagger schema object -> JSON Schema. `$ref: '#/definitions/X'` is pointed at the shared
 * definitions document so each compiled validator resolves references the same way.
 */
export function convertSchema(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key.startsWith('x-ms-') || DOC_KEYWORDS.has(key) || key === 'x-nullable') continue;
    switch (key) {
      case '$ref': {
        const ref = String(value);
        const m = /^#\/definitions\/(.+)$/.exec(ref);
        if (!m) throw new Error(`unsupported $ref ${ref} (only #/definitions/... is used by the Batch spec)`);
        out.$ref = `${DEFINITIONS_ID}#/definitions/${m[1]}`;
        break;
      }
      case 'properties': {
        const props: Record<string, JsonSchema> = {};
        for (const [name, sub] of Object.entries(value as Record<string, JsonSchema>)) props[name] = convertSchema(sub);
        out.properties = props;
        break;
      }
      case 'items':
        out.items = convertSchema(value as JsonSchema);
        break;
      case 'additionalProperties':
        out.additionalProperties = typeof value === 'boolean' ? value : convertSchema(value as JsonSchema);
        break;
      case 'allOf':
        // Not used by this spec revision; refuse rather than silently mis-validate.
        throw new Error('allOf is not supported by the contract converter');
      case 'format':
        // 'file' marks binary download bodies: nothing to validate as JSON.
        if (value !== 'file') out.format = value;
        break;
      default:
        out[key] = value;
    }
  }
  if (schema['x-nullable'] === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  if (out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  if (out.format === undefined && schema.format === 'file') delete out.type;
  return out;
}

/**
 * All spec definitions converted, plus the later-revision properties, as one schema document. The SDK-derived
 * contract (sdkContract.ts) already has them: `addLaterRevision` false leaves its definitions as they are.
 */
export function convertDefinitions(definitions: Record<string, JsonSchema>, addLaterRevision = true): JsonSchema {
  const converted: Record<string, JsonSchema> = {};
  for (const [name, def] of Object.entries(definitions)) {
    const schema = convertSchema(def);
    const extra = addLaterRevision ? LATER_REVISION_PROPERTIES[name] : undefined;
    if (extra) {
      const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
      for (const [prop, propSchema] of Object.entries(extra)) {
        if (props[prop]) throw new Error(`${name}.${prop} already exists in the spec; drop the later-revision allowance`);
        props[prop] = propSchema;
      }
      schema.properties = props;
    }
    converted[name] = schema;
  }
  return { $id: DEFINITIONS_ID, definitions: converted };
}

/**
 * A non-body Swagger parameter (path, query, header) as a JSON Schema for its value, after the
 * textual value has been coerced (see coerceParameterValue).
 */
export function parameterSchema(param: { type?: string; format?: string; enum?: unknown[]; minimum?: number; maximum?: number }): JsonSchema {
  const schema: JsonSchema = {};
  if (param.type) schema.type = param.type;
  if (param.format) schema.format = param.format;
  if (param.enum) schema.enum = param.enum;
  if (param.minimum !== undefined) schema.minimum = param.minimum;
  if (param.maximum !== undefined) schema.maximum = param.maximum;
  return schema;
}

/** Query/header values are text on the wire; turn them into what the parameter's type says, or leave them to fail. */
export function coerceParameterValue(type: string | undefined, raw: string): unknown {
  if (type === 'integer' || type === 'number') {
    const n = Number(raw);
    return raw.trim() !== '' && Number.isFinite(n) ? n : raw;
  }
  if (type === 'boolean') {
    if (raw === 'true' || raw === 'True') return true;
    if (raw === 'false' || raw === 'False') return false;
    return raw;
  }
  return raw;
}
