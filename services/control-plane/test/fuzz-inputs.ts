/**
 * Test helper (used by fuzz.test.ts only): inputs built from an OpenAPI 3.1 document's JSON
 * schemas, one plausible value per schema plus hostile variations of it.
 */

// biome-ignore lint/suspicious/noExplicitAny: JSON schemas are walked generically
export type JsonSchema = Record<string, any>;

export interface Document {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, JsonSchema> };
}

export interface Operation {
  parameters?: Array<{ name: string; in: string; required?: boolean; schema?: JsonSchema }>;
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
}

const STRING_CANDIDATES = [
  'fuzz',
  'fuzz-value',
  'abc',
  'a',
  '1',
  '0',
  '123456',
  'USD',
  'fuzz@example.test',
  '0'.repeat(64),
  'long-enough-password-1',
];

export function resolve(document: Document, schema: JsonSchema | undefined): JsonSchema {
  let current = schema ?? {};
  for (let hops = 0; hops < 20 && typeof current.$ref === 'string'; hops += 1) {
    const name = current.$ref.split('/').pop() ?? '';
    current = document.components?.schemas?.[name] ?? {};
  }
  return current;
}

function typesOf(schema: JsonSchema): string[] {
  if (Array.isArray(schema.type)) return schema.type;
  if (typeof schema.type === 'string') return [schema.type];
  if (schema.properties) return ['object'];
  return [];
}

function stringFor(schema: JsonSchema): string {
  if (schema.format === 'email') return 'fuzz@example.test';
  if (schema.format === 'date-time') return '2026-01-02T03:04:05Z';
  if (schema.format === 'date') return '2026-01-02';
  if (schema.format === 'uuid') return '3f1e2d4c-5b6a-4789-8abc-def012345678';
  if (schema.format === 'uri' || schema.format === 'url') return 'https://example.test/v1';
  const pattern = typeof schema.pattern === 'string' ? new RegExp(schema.pattern) : null;
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? Number.POSITIVE_INFINITY;
  for (const candidate of STRING_CANDIDATES) {
    if (candidate.length >= min && candidate.length <= max && (!pattern || pattern.test(candidate))) {
      return candidate;
    }
  }
  return 'x'.repeat(Math.max(1, Math.min(min, 64)));
}

/**
 * A value the schema should accept (best effort: patterns are matched from a few candidates).
 * `hints` give values by property name (records that exist, so a sample reaches past lookups).
 */
export function sample(
  document: Document,
  raw: JsonSchema | undefined,
  depth = 0,
  hints: Record<string, unknown> = {},
  name = '',
): unknown {
  const schema = resolve(document, raw);
  if (depth > 8) return null;
  if (name in hints) return structuredClone(hints[name]);
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if (schema.default !== undefined) return schema.default;
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    if (Array.isArray(schema[key]) && schema[key].length > 0) {
      const options = schema[key].map((option: JsonSchema) => resolve(document, option));
      const preferred = options.find((option: JsonSchema) => !typesOf(option).includes('null')) ?? options[0];
      return sample(document, preferred, depth + 1, hints, name);
    }
  }
  const type = typesOf(schema).find((each) => each !== 'null') ?? typesOf(schema)[0];
  switch (type) {
    case 'object': {
      const result: Record<string, unknown> = {};
      for (const [property, propertySchema] of Object.entries<JsonSchema>(schema.properties ?? {})) {
        result[property] = sample(document, propertySchema, depth + 1, hints, property);
      }
      return result;
    }
    case 'array': {
      const count = Math.max(1, schema.minItems ?? 1);
      return Array.from({ length: count }, () => sample(document, schema.items, depth + 1, hints));
    }
    case 'integer':
      return Math.max(schema.minimum ?? 1, Math.min(schema.maximum ?? 5, 5));
    case 'number':
      return Math.max(schema.minimum ?? 1, Math.min(schema.maximum ?? 5, 5));
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return stringFor(schema);
  }
}

/** Values that must be refused (or accepted) cleanly wherever a scalar goes. */
export const HOSTILE_VALUES: readonly unknown[] = [
  'nul\u0000inside',
  '\u0000',
  '',
  ' ',
  'x'.repeat(100_000),
  '\ud800',
  '9'.repeat(400),
  '-1',
  '1e309',
  'not-a-date',
  '2026-02-30T25:61:61Z',
  '0000-00-00',
  '+275760-09-13T00:00:01Z',
  '../../etc/passwd',
  "'; drop table accounts; --",
  '%00',
  2_147_483_648,
  -2_147_483_649,
  Number.MAX_SAFE_INTEGER + 1,
  9_223_372_036_854_775_807n.toString(),
  1e308,
  -1,
  0,
  1.5,
  true,
  null,
  [],
  ['\u0000'],
  {},
  { nested: { deeper: '\u0000' } },
];

/** Query-string forms of the hostile values (query values are always text). */
export const HOSTILE_QUERY_VALUES: readonly string[] = [
  'nul\u0000inside',
  '',
  'x'.repeat(10_000),
  '9'.repeat(400),
  '-1',
  '0',
  '1.5',
  '1e309',
  'NaN',
  'Infinity',
  'not-a-date',
  '2026-02-30',
  '2026-02-30T25:61:61Z',
  '0000-00-00T00:00:00Z',
  '+275760-09-13T00:00:01Z',
  '-271821-04-20T00:00:00Z',
  '%',
  '\ud800',
  'bm90LWEtY3Vyc29y',
  '!!!notbase64',
  Buffer.from('{"createdAt":"nope","id":"\u0000"}').toString('base64url'),
  Buffer.from('{"t":"2026-02-30","id":99999999999999999999}').toString('base64url'),
  Buffer.from('2026-01-01T00:00:00Z|not-a-uuid').toString('base64url'),
  Buffer.from('9999999999999999999999|1').toString('base64url'),
  'true',
  '[]',
  '{}',
];

/** Nesting `depth` arrays deep: parsers and validators must not fall over. */
export function deeplyNested(depth: number): string {
  return `${'['.repeat(depth)}${']'.repeat(depth)}`;
}

/** Path ids: random, malformed, well-formed and hostile. */
export const PATH_IDS: readonly string[] = [
  '3f1e2d4c-5b6a-4789-8abc-def012345678',
  '00000000-0000-0000-0000-000000000000',
  'not-a-uuid',
  'fuzz-id',
  'a'.repeat(300),
  '%00',
  'x%00y',
  '%E2%82',
  '..%2F..%2Fadmin',
  '1',
  '-1',
  '99999999999999999999',
  '1e309',
  "'",
];
