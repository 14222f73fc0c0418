/**
 * The layouts of hot-layout.ts, run against Redis: what the control plane encodes each script
 * reads under the same names, and the `|` texts written on one side read field by field on the
 * other.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  ACCOUNT_ENTRY_FIELDS,
  CALL_FIELDS,
  compileLayout,
  encodeCall,
  joinFields,
  KEY_ENTRY_FIELDS,
  RECORD_FIELDS,
  SCRIPT_LAYOUTS,
  type ScriptCall,
  type ScriptLayout,
  type ScriptName,
  splitFields,
} from './hot-layout.ts';
import { parseRecord } from './hot-records.ts';
import { COMMON_SOURCE, SCRIPT_SOURCES } from './hot-scripts.ts';

let redis: Redis;

beforeAll(() => {
  redis = new Redis(inject('testServices').redisUrl);
});
afterAll(() => {
  redis.disconnect();
});

/** Every KEYS and ARGV value the script sees, by the names its layout gives them (compiled). */
function echoSource(script: ScriptName): string {
  const shape: ScriptLayout = SCRIPT_LAYOUTS[script];
  return compileLayout(
    script,
    [
      'local out = {}',
      'local function put(name, value) out[#out + 1] = name; out[#out + 1] = value end',
      ...shape.keys.map((name) => `put('key:${name}', KEYS[KEY.${name}])`),
      ...shape.args.map((name) => `put('arg:${name}', ARGV[ARG.${name}])`),
      `local count = ${shape.args.includes('count') ? 'tonumber(ARGV[ARG.count])' : '0'}`,
      'for n = 1, count do',
      ...shape.itemKeys.map(
        (name) => `  put(n .. ':key:${name}', KEYS[KEYS_HEAD + (n - 1) * ITEM_KEYS + ITEM_KEY.${name}])`,
      ),
      ...shape.itemArgs.map(
        (name) => `  put(n .. ':arg:${name}', ARGV[ARGS_HEAD + (n - 1) * ITEM_ARGS + ITEM_ARG.${name}])`,
      ),
      'end',
      "put('keys', #KEYS)",
      "put('args', #ARGV)",
      'return out',
    ].join('\n'),
  );
}

const CLOCK_OFFSET_MS = -1234;

/** A call of the script with a value of its own for every name. */
function sampleCall(script: ScriptName, items: number): ScriptCall<ScriptName> {
  const shape: ScriptLayout = SCRIPT_LAYOUTS[script];
  const named = (names: readonly string[], tag: string) =>
    Object.fromEntries(
      names
        .filter((name) => name !== 'count' && name !== 'clockOffsetMs')
        .map((name) => [name, `${tag}${name}`]),
    );
  return {
    keys: named(shape.keys, 'k-'),
    args: named(shape.args, 'a-'),
    items: Array.from({ length: shape.itemArgs.length > 0 ? items : 0 }, (_, n) => ({
      keys: named(shape.itemKeys, `${n + 1}-k-`),
      args: named(shape.itemArgs, `${n + 1}-a-`),
    })),
  } as unknown as ScriptCall<ScriptName>;
}

function expectedEcho(script: ScriptName, call: ScriptCall<ScriptName>): Record<string, string | number> {
  const shape: ScriptLayout = SCRIPT_LAYOUTS[script];
  const items = (call.items ?? []) as Array<{ keys: Record<string, string>; args: Record<string, string> }>;
  const expected: Record<string, string | number> = {};
  for (const name of shape.keys) expected[`key:${name}`] = (call.keys as Record<string, string>)[name]!;
  for (const name of shape.args) {
    expected[`arg:${name}`] =
      name === 'count'
        ? String(items.length)
        : name === 'clockOffsetMs'
          ? String(CLOCK_OFFSET_MS)
          : (call.args as Record<string, string>)[name]!;
  }
  items.forEach((item, index) => {
    for (const name of shape.itemKeys) expected[`${index + 1}:key:${name}`] = item.keys[name]!;
    for (const name of shape.itemArgs) expected[`${index + 1}:arg:${name}`] = item.args[name]!;
  });
  expected.keys = shape.keys.length + items.length * shape.itemKeys.length;
  expected.args = shape.args.length + items.length * shape.itemArgs.length;
  return expected;
}

async function evalPairs(source: string, keys: string[], args: Array<string | number>) {
  const flat = (await redis.eval(source, keys.length, ...keys, ...args)) as Array<string | number>;
  const pairs: Record<string, string | number> = {};
  for (let index = 0; index < flat.length; index += 2) pairs[String(flat[index])] = flat[index + 1]!;
  return pairs;
}

describe('each script’s KEYS and ARGV', () => {
  for (const script of Object.keys(SCRIPT_LAYOUTS) as ScriptName[]) {
    it(`${script}: the script reads by name what the control plane encoded by name`, async () => {
      for (const items of [0, 1, 3]) {
        const call = sampleCall(script, items);
        const { keys, args } = encodeCall(script, call, CLOCK_OFFSET_MS);
        expect(await evalPairs(echoSource(script), keys, args)).toEqual(expectedEcho(script, call));
      }
    });
  }

  it('a name its layout lacks fails when the script is put together, not in Redis', () => {
    expect(() => compileLayout('hotWritten', 'return ARGV[ITEM_ARG.estimateIn]')).toThrow(
      'hotWritten uses ITEM_ARG.estimateIn, which its layout lacks',
    );
    expect(() => compileLayout('hotReserve', 'return RECORD.nothing')).toThrow(/RECORD\.nothing/);
  });

  it('every script compiles in Redis', async () => {
    for (const source of Object.values(SCRIPT_SOURCES)) {
      expect(await redis.script('LOAD', source)).toMatch(/^[0-9a-f]{40}$/);
    }
  });
});

/** A value of its own for every field, with an empty one and digits among them. */
function sampleValues<T extends readonly string[]>(fields: T): Record<T[number], string> {
  return Object.fromEntries(
    fields.map((field, index) => [
      field,
      index === 1 ? '' : index % 3 === 0 ? String(index * 1_000_003) : `v-${field}`,
    ]),
  ) as Record<T[number], string>;
}

describe('the | texts', () => {
  it('a finished call written by the scripts’ record() is read field by field by parseRecord', async () => {
    const values = sampleValues(RECORD_FIELDS);
    const source = compileLayout(
      'hotFinish',
      `${COMMON_SOURCE}
local r = {}
${RECORD_FIELDS.map((name, index) => `r.${name} = ARGV[${index + 1}]`).join('\n')}
return record(r)`,
    );
    const text = (await redis.eval(source, 0, ...RECORD_FIELDS.map((field) => values[field]))) as string;
    expect(parseRecord(text)).toEqual(values);
  });

  it('a call in flight written by the scripts is read back by its CALL fields', async () => {
    const values = sampleValues(CALL_FIELDS);
    const source = compileLayout(
      'hotFinish',
      `${COMMON_SOURCE}
local c = {}
${CALL_FIELDS.map((name, index) => `c.${name} = ARGV[${index + 1}]`).join('\n')}
return inFlight(c)`,
    );
    const text = (await redis.eval(source, 0, ...CALL_FIELDS.map((field) => values[field]))) as string;
    expect(text.startsWith('R|')).toBe(true);
    expect(splitFields(CALL_FIELDS, text.slice(2))).toEqual(values);
  });

  for (const [name, fields, index] of [
    ['a finished call', RECORD_FIELDS, 'RECORD'],
    ['a call in flight', CALL_FIELDS, 'CALL'],
    ['a key entry', KEY_ENTRY_FIELDS, 'KEY_ENTRY'],
    ['an account entry', ACCOUNT_ENTRY_FIELDS, 'ACCOUNT_ENTRY'],
  ] as const) {
    it(`${name} written by the control plane is read by the scripts field by field (${index})`, async () => {
      const values = sampleValues(fields);
      const source = compileLayout(
        'hotFinish',
        `${COMMON_SOURCE}
local f = fields(ARGV[1])
local out = {}
${fields.map((name) => `out[#out + 1] = '${name}'; out[#out + 1] = f[${index}.${name}]`).join('\n')}
out[#out + 1] = '#'; out[#out + 1] = #f
return out`,
      );
      const read = await evalPairs(source, [], [joinFields(fields, values)]);
      expect(read).toEqual({ ...values, '#': fields.length });
    });
  }
});

describe('hotWritten', () => {
  it('reads a record’s action and forgotten where they stand: only an unseen release or hold stays, as a tombstone', async () => {
    const calls = `test:written:${process.pid}:${Date.now()}`;
    const text = (id: string, action: string, forgotten: string) =>
      `D|${joinFields(RECORD_FIELDS, { ...sampleValues(RECORD_FIELDS), id, action, forgotten })}`;
    await redis.hset(calls, {
      'unseen-release': text('unseen-release', 'release', '1'),
      'unseen-hold': text('unseen-hold', 'hold', '1'),
      'unseen-settle': text('unseen-settle', 'settle', '1'),
      'seen-release': text('seen-release', 'release', '0'),
      'in-flight': 'R|key|alias|surface',
    });
    const ids = ['unseen-release', 'unseen-hold', 'unseen-settle', 'seen-release', 'in-flight'];
    const { keys, args } = encodeCall('hotWritten', {
      keys: { calls },
      args: { tombstoneMs: 60_000 },
      items: ids.map((id) => ({ keys: {}, args: { id } })),
    });
    await redis.eval(SCRIPT_SOURCES.hotWritten, keys.length, ...keys, ...args);
    const left = await redis.hgetall(calls);
    await redis.del(calls);
    expect(Object.keys(left).sort()).toEqual(['in-flight', 'unseen-hold', 'unseen-release']);
    expect(left['unseen-release']).toMatch(/^G\|\d+$/);
    expect(left['unseen-hold']).toMatch(/^G\|\d+$/);
    expect(left['in-flight']).toBe('R|key|alias|surface');
  });
});
