import { AppError } from '@tollgate/errors';

/*
 * Edits the top-level members of a JSON object without re-serialising it. The gateway forwards
 * messages, tools and system prompts byte for byte; only `model`, the max-output field and
 * `stream_options` change, and JSON.stringify would alter number formats, escapes, key order and
 * whitespace everywhere else. The scanner is one linear pass with no regular expressions and no
 * recursion (deep nesting cannot overflow the stack). It expects text that JSON.parse accepted;
 * on structural surprises it fails closed with invalid_request.
 */

const SPACE = 0x20;
const TAB = 0x09;
const LINE_FEED = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** One top-level member: its decoded key and where its value's raw text sits. */
export interface TopLevelMember {
  key: string;
  /** `raw.slice(valueStart, valueEnd)` is the value exactly as sent. */
  valueStart: number;
  valueEnd: number;
}

export interface TopLevelSpans {
  /** Every member in order, duplicates included. */
  members: TopLevelMember[];
  /** Offset of the object's closing brace. */
  closeBrace: number;
}

function malformed(): AppError {
  return new AppError('invalid_request', { message: 'The request body is not valid JSON.' });
}

function isWhitespace(code: number): boolean {
  return code === SPACE || code === LINE_FEED || code === CARRIAGE_RETURN || code === TAB;
}

function skipWhitespace(raw: string, index: number): number {
  let i = index;
  while (i < raw.length && isWhitespace(raw.charCodeAt(i))) i += 1;
  return i;
}

/** `start` is an opening quote; returns the offset just past the closing quote. */
function skipString(raw: string, start: number): number {
  let from = start + 1;
  for (;;) {
    const quote = raw.indexOf('"', from);
    if (quote === -1) throw malformed();
    // The quote is escaped when an odd number of backslashes precede it.
    let backslashes = 0;
    for (let j = quote - 1; j > start && raw.charCodeAt(j) === BACKSLASH; j -= 1) backslashes += 1;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** Returns the offset just past the value starting at `start`. */
function skipValue(raw: string, start: number): number {
  const first = raw.charCodeAt(start);
  if (first === QUOTE) return skipString(raw, start);
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0;
    let i = start;
    while (i < raw.length) {
      const code = raw.charCodeAt(i);
      if (code === QUOTE) {
        i = skipString(raw, i);
        continue;
      }
      if (code === OPEN_BRACE || code === OPEN_BRACKET) depth += 1;
      else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
        depth -= 1;
        if (depth === 0) return i + 1;
      }
      i += 1;
    }
    throw malformed();
  }
  // A number or a literal runs until the next delimiter.
  let i = start;
  while (i < raw.length) {
    const code = raw.charCodeAt(i);
    if (code === COMMA || code === CLOSE_BRACE || code === CLOSE_BRACKET || isWhitespace(code)) break;
    i += 1;
  }
  if (i === start) throw malformed();
  return i;
}

function decodeKey(raw: string, start: number, end: number): string {
  const inner = raw.slice(start + 1, end - 1);
  // Keys may be written with escapes ("max\u005ftokens"); they must match like JSON.parse matches.
  return inner.includes('\\') ? (JSON.parse(raw.slice(start, end)) as string) : inner;
}

/** Finds every top-level member of a JSON object text and where its value is. */
export function readTopLevelSpans(raw: string): TopLevelSpans {
  let i = skipWhitespace(raw, 0);
  if (raw.charCodeAt(i) !== OPEN_BRACE) throw malformed();
  i = skipWhitespace(raw, i + 1);
  const members: TopLevelMember[] = [];
  if (raw.charCodeAt(i) !== CLOSE_BRACE) {
    for (;;) {
      if (raw.charCodeAt(i) !== QUOTE) throw malformed();
      const keyEnd = skipString(raw, i);
      const key = decodeKey(raw, i, keyEnd);
      i = skipWhitespace(raw, keyEnd);
      if (raw.charCodeAt(i) !== COLON) throw malformed();
      const valueStart = skipWhitespace(raw, i + 1);
      const valueEnd = skipValue(raw, valueStart);
      members.push({ key, valueStart, valueEnd });
      i = skipWhitespace(raw, valueEnd);
      const separator = raw.charCodeAt(i);
      if (separator === CLOSE_BRACE) break;
      if (separator !== COMMA) throw malformed();
      i = skipWhitespace(raw, i + 1);
    }
  }
  const closeBrace = i;
  if (skipWhitespace(raw, closeBrace + 1) !== raw.length) throw malformed();
  return { members, closeBrace };
}

/** The raw text of a top-level member's value; with duplicates the last one, as JSON.parse reads. */
export function readTopLevelValue(raw: string, key: string): string | undefined {
  const member = lastMember(readTopLevelSpans(raw), key);
  return member && raw.slice(member.valueStart, member.valueEnd);
}

/** The member JSON.parse reads for `key`: the last of its duplicates. */
function lastMember(spans: TopLevelSpans, key: string): TopLevelMember | undefined {
  return spans.members.findLast((member) => member.key === key);
}

/**
 * Sets top-level members of a JSON object text. `fields` maps each key to the raw JSON text of its
 * new value. Every occurrence of a key is replaced (duplicates too, so no upstream parser can pick
 * an unedited copy); keys not present are appended before the closing brace. All other bytes stay
 * exactly as they were.
 */
export function setTopLevelFields(raw: string, fields: Record<string, string>): string {
  const wanted = new Map(Object.entries(fields));
  if (wanted.size === 0) return raw;
  return withMembers(raw, readTopLevelSpans(raw), wanted);
}

/**
 * The object text with its member `key` given `edit`'s answer for the member's value (the last
 * one, as JSON.parse reads, and written over every duplicate); null when the member is absent or
 * `edit` answers null. One pass over the text, however long: receipts edit whole answers.
 */
export function editTopLevelValue(
  raw: string,
  key: string,
  edit: (value: string) => string | null,
): string | null {
  const spans = readTopLevelSpans(raw);
  const last = lastMember(spans, key);
  if (last === undefined) return null;
  const replacement = edit(raw.slice(last.valueStart, last.valueEnd));
  return replacement === null ? null : withMembers(raw, spans, new Map([[key, replacement]]));
}

/** The text with every member in `wanted` replaced, the rest appended before the closing brace. */
function withMembers(raw: string, spans: TopLevelSpans, wanted: Map<string, string>): string {
  const { members, closeBrace } = spans;
  const parts: string[] = [];
  const replaced = new Set<string>();
  let cursor = 0;
  for (const member of members) {
    const replacement = wanted.get(member.key);
    if (replacement === undefined) continue;
    parts.push(raw.slice(cursor, member.valueStart), replacement);
    cursor = member.valueEnd;
    replaced.add(member.key);
  }
  const appended: string[] = [];
  for (const [key, value] of wanted) {
    if (!replaced.has(key)) appended.push(`${JSON.stringify(key)}:${value}`);
  }
  if (appended.length > 0) {
    const last = members.at(-1);
    // After the last value (before any whitespace ahead of the brace), or inside an empty object.
    const insertAt = last === undefined ? closeBrace : last.valueEnd;
    const text = last === undefined ? appended.join(',') : `,${appended.join(',')}`;
    parts.push(raw.slice(cursor, insertAt), text);
    cursor = insertAt;
  }
  parts.push(raw.slice(cursor));
  return parts.join('');
}

/**
 * The raw `stream_options` value for a streaming chat-completions call: the client's own members
 * kept as sent, with `include_usage` set to true so the final chunk carries usage to meter.
 */
export function withIncludeUsage(existingRawValue: string | undefined): string {
  const trimmed = existingRawValue?.trim();
  if (trimmed === undefined || trimmed === 'null') return '{"include_usage":true}';
  if (trimmed.charCodeAt(0) !== OPEN_BRACE) {
    throw new AppError('invalid_request', { message: 'stream_options must be an object.' });
  }
  return setTopLevelFields(trimmed, { include_usage: 'true' });
}
