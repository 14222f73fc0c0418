import { AppError } from '@tollgate/errors';
import { describe, expect, it } from 'vitest';
import {
  editTopLevelValue,
  readTopLevelSpans,
  readTopLevelValue,
  setTopLevelFields,
  withIncludeUsage,
} from './top-level-json.ts';

/** Small seeded PRNG (mulberry32) so a failing case can be replayed from its seed. */
function createRandom(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (max: number) => Math.floor(next() * max);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  return { next, int, pick };
}
type Random = ReturnType<typeof createRandom>;

const WHITESPACE = ['', '', ' ', '  ', '\n', '\t', '\r\n  ', ' \n\t '];
const STRING_PIECES = [
  'a',
  'text',
  ' ',
  'é',
  '中文',
  '🌍',
  'x\u2028y',
  '{',
  '}',
  '[',
  ']',
  ',',
  ':',
  "'",
  '\\"',
  '\\\\',
  '\\/',
  '\\b',
  '\\f',
  '\\n',
  '\\r',
  '\\t',
  '\\u0041',
  '\\u00e9',
  '\\ud83c\\udf0d',
  '\\\\\\"',
];
const NUMBERS = [
  '0',
  '-0',
  '7',
  '-12',
  '3.14',
  '1e3',
  '1E+5',
  '2.5e-3',
  '-0.000',
  '12345678901234567890',
  '1.0',
];
const KEYS = [
  '"model"',
  '"max_tokens"',
  '"max\\u005ftokens"',
  '"stream"',
  '"stream_options"',
  '"messages"',
  '"tools"',
  '"system"',
  '"x"',
  '"é"',
  '"a\\"b"',
  '"with space"',
  '""',
  '"🌍"',
];

function randomString(random: Random): string {
  const length = random.int(6);
  let text = '"';
  for (let index = 0; index < length; index += 1) text += random.pick(STRING_PIECES);
  return `${text}"`;
}

function randomValue(random: Random, depth: number): string {
  const kind = random.int(depth > 3 ? 4 : 6);
  if (kind === 0) return randomString(random);
  if (kind === 1) return random.pick(NUMBERS);
  if (kind === 2) return random.pick(['true', 'false', 'null']);
  if (kind === 3) return randomString(random);
  if (kind === 4) {
    const items = Array.from(
      { length: random.int(4) },
      () => ws(random) + randomValue(random, depth + 1) + ws(random),
    );
    return items.length === 0 ? `[${ws(random)}]` : `[${items.join(',')}]`;
  }
  const members = Array.from(
    { length: random.int(4) },
    () =>
      `${ws(random)}${random.pick(KEYS)}${ws(random)}:${ws(random)}${randomValue(random, depth + 1)}${ws(random)}`,
  );
  return members.length === 0 ? `{${ws(random)}}` : `{${members.join(',')}}`;
}

function ws(random: Random): string {
  return random.pick(WHITESPACE);
}

interface GeneratedMember {
  key: string;
  value: string;
}

/** A random top-level object: its raw text and what each member was written as. */
function randomObject(random: Random): { raw: string; members: GeneratedMember[] } {
  const members = Array.from({ length: random.int(8) }, () => ({
    rawKey: random.pick(KEYS),
    value: randomValue(random, 0),
  }));
  const body = members.map(
    (m) => `${ws(random)}${m.rawKey}${ws(random)}:${ws(random)}${m.value}${ws(random)}`,
  );
  const raw = `${ws(random)}{${members.length === 0 ? ws(random) : body.join(',')}}${ws(random)}`;
  return {
    raw,
    members: members.map((m) => ({ key: JSON.parse(m.rawKey) as string, value: m.value })),
  };
}

const EDIT_VALUES = ['"upstream-model-1"', '4096', 'true', '{"include_usage":true}', 'null', '[1,2]'];
const EDIT_KEYS = ['model', 'max_tokens', 'stream_options', 'max_output_tokens', 'x', 'é'];

function randomEdits(random: Random): Record<string, string> {
  const edits: Record<string, string> = {};
  for (let count = random.int(4); count > 0; count -= 1)
    edits[random.pick(EDIT_KEYS)] = random.pick(EDIT_VALUES);
  return edits;
}

/** The text between member values: keys, colons, commas and whitespace. */
function skeleton(raw: string): string[] {
  const { members } = readTopLevelSpans(raw);
  const pieces: string[] = [];
  let cursor = 0;
  for (const member of members) {
    pieces.push(raw.slice(cursor, member.valueStart));
    cursor = member.valueEnd;
  }
  pieces.push(raw.slice(cursor));
  return pieces;
}

describe('readTopLevelSpans (property)', () => {
  it('finds every top-level member and its exact value text', () => {
    for (let seed = 1; seed <= 2000; seed += 1) {
      const random = createRandom(seed);
      const { raw, members } = randomObject(random);
      expect(() => JSON.parse(raw), `seed ${seed}`).not.toThrow();
      const spans = readTopLevelSpans(raw);
      const found = spans.members.map((m) => ({ key: m.key, value: raw.slice(m.valueStart, m.valueEnd) }));
      expect(found, `seed ${seed}`).toEqual(members);
      expect(raw[spans.closeBrace]).toBe('}');
    }
  });
});

describe('setTopLevelFields (property)', () => {
  it('changes exactly the edited members and leaves every other byte alone', () => {
    for (let seed = 1; seed <= 2000; seed += 1) {
      const random = createRandom(seed);
      const { raw, members } = randomObject(random);
      const edits = randomEdits(random);
      const result = setTopLevelFields(raw, edits);

      const expected: Record<string, unknown> = JSON.parse(raw);
      for (const [key, value] of Object.entries(edits)) expected[key] = JSON.parse(value);
      expect(JSON.parse(result), `seed ${seed}`).toEqual(expected);

      const after = readTopLevelSpans(result).members.map((m) => ({
        key: m.key,
        value: result.slice(m.valueStart, m.valueEnd),
      }));
      const present = new Set(members.map((m) => m.key));
      const appended = Object.entries(edits)
        .filter(([key]) => !present.has(key))
        .map(([key, value]) => ({ key, value }));
      const kept = members.map((m) =>
        Object.hasOwn(edits, m.key) ? { key: m.key, value: edits[m.key] } : m,
      );
      expect(after, `seed ${seed}`).toEqual([...kept, ...appended]);

      const before = skeleton(raw);
      const now = skeleton(result);
      if (members.length > 0) {
        // Keys, separators and whitespace before each original value are untouched.
        expect(now.slice(0, members.length), `seed ${seed}`).toEqual(before.slice(0, members.length));
        expect(now.at(-1), `seed ${seed}`).toBe(before.at(-1));
      }
    }
  });
});

describe('setTopLevelFields', () => {
  it('replaces a value in place and keeps formatting elsewhere', () => {
    const raw =
      '{ "model" : "alias-a",\n  "messages":[{"role":"user","content":"1.50e1 \\u00e9"}], "n": 1.0 }';
    expect(setTopLevelFields(raw, { model: '"claude-x-2025"' })).toBe(
      '{ "model" : "claude-x-2025",\n  "messages":[{"role":"user","content":"1.50e1 \\u00e9"}], "n": 1.0 }',
    );
  });

  it('replaces every duplicate, including a key written with escapes', () => {
    const raw = '{"max_tokens":10,"max\\u005ftokens":99999,"max_tokens":5}';
    const result = setTopLevelFields(raw, { max_tokens: '100' });
    expect(result).toBe('{"max_tokens":100,"max\\u005ftokens":100,"max_tokens":100}');
  });

  it('appends missing keys to empty and non-empty objects', () => {
    expect(setTopLevelFields('{}', { max_tokens: '8' })).toBe('{"max_tokens":8}');
    expect(setTopLevelFields(' { \n } ', { a: '1', b: '"x"' })).toBe(' { \n "a":1,"b":"x"} ');
    expect(setTopLevelFields('{"model":"m" \n}', { max_tokens: '8' })).toBe(
      '{"model":"m","max_tokens":8 \n}',
    );
  });

  it('escapes appended keys as JSON', () => {
    const result = setTopLevelFields('{}', { 'we"ird': '1' });
    expect(JSON.parse(result)).toEqual({ 'we"ird': 1 });
  });

  it('returns the text unchanged when there is nothing to set', () => {
    const raw = '{"a" : 1e3}';
    expect(setTopLevelFields(raw, {})).toBe(raw);
  });

  it('does not mistake look-alikes inside nested values or strings for top-level keys', () => {
    const raw = '{"messages":[{"model":"inner","max_tokens":1}],"system":"\\"model\\": x","model":"outer"}';
    const result = setTopLevelFields(raw, { model: '"up"' });
    expect(JSON.parse(result)).toEqual({
      messages: [{ model: 'inner', max_tokens: 1 }],
      system: '"model": x',
      model: 'up',
    });
  });

  it('handles very deep nesting without recursion', () => {
    const depth = 50_000;
    const raw = `{"deep":${'['.repeat(depth)}${']'.repeat(depth)},"model":"a"}`;
    expect(setTopLevelFields(raw, { model: '"b"' }).endsWith('"model":"b"}')).toBe(true);
  });

  it('refuses text that is not a JSON object', () => {
    for (const raw of ['[]', '"x"', '{"a":1', '{"a" 1}', '{"a":1}x', '{a:1}', '{"a":}']) {
      expect(() => setTopLevelFields(raw, { model: '"m"' }), raw).toThrow(AppError);
    }
  });
});

describe('readTopLevelValue', () => {
  it('returns the raw text of the last occurrence, as JSON.parse would read it', () => {
    const raw = '{"stream_options":{"a":1},"stream_options" : { "include_obfuscation" : false } }';
    expect(readTopLevelValue(raw, 'stream_options')).toBe('{ "include_obfuscation" : false }');
    expect(readTopLevelValue(raw, 'missing')).toBeUndefined();
  });
});

describe('editTopLevelValue', () => {
  it('gives the last occurrence to the edit and writes its answer over every duplicate', () => {
    const raw = '{"usage":{"a":1}, "id":"x","usage" : {"b":2} }';
    const seen: string[] = [];
    const edited = editTopLevelValue(raw, 'usage', (value) => {
      seen.push(value);
      return '{"c":3}';
    });
    expect(seen).toEqual(['{"b":2}']);
    expect(edited).toBe('{"usage":{"c":3}, "id":"x","usage" : {"c":3} }');
    expect(JSON.parse(edited!)).toEqual({ usage: { c: 3 }, id: 'x' });
  });

  it('answers null when the member is absent or the edit declines, and adds nothing', () => {
    expect(editTopLevelValue('{"id":"x"}', 'usage', () => '{}')).toBeNull();
    expect(editTopLevelValue('{"usage":null}', 'usage', () => null)).toBeNull();
  });
});

describe('withIncludeUsage', () => {
  it('creates stream_options when the client sent none or null', () => {
    expect(withIncludeUsage(undefined)).toBe('{"include_usage":true}');
    expect(withIncludeUsage(' null ')).toBe('{"include_usage":true}');
  });

  it("keeps the client's other members and forces include_usage to true", () => {
    expect(withIncludeUsage('{ "include_obfuscation": false }')).toBe(
      '{ "include_obfuscation": false,"include_usage":true }',
    );
    expect(JSON.parse(withIncludeUsage('{"include_usage":false,"x":[1]}'))).toEqual({
      include_usage: true,
      x: [1],
    });
  });

  it('refuses a stream_options that is not an object', () => {
    for (const raw of ['true', '"yes"', '[1]', '3']) {
      expect(() => withIncludeUsage(raw)).toThrow(/stream_options must be an object/);
    }
  });
});
