/**
 * Per-request behaviour of the mock, chosen by the caller. Read from the `x-mock` header or from a
 * `@mock(key=value,flag)` marker anywhere in the raw body (the gateway forwards bodies unchanged
 * but not arbitrary headers). Header values win over body values.
 */
export interface Directives {
  /** Answer this HTTP status (>= 400) with the protocol's error body. */
  status?: number;
  /** Seconds for the Retry-After header of a `status` answer. */
  retryAfter?: number;
  /** Milliseconds to wait before sending response headers. */
  delay?: number;
  /** Streams: milliseconds between the headers and the first event. */
  firstByteDelay?: number;
  /** Streams: milliseconds between two events. */
  chunkDelay?: number;
  /** 200 with a body (or one stream event) that is not JSON. */
  invalidJson?: boolean;
  /** Report no usage figures at all. */
  noUsage?: boolean;
  /** Streams: destroy the socket after this many events. Non-streamed: after this many body bytes. */
  cutAfter?: number;
  /** Streams: an error event after the first content delta, then the end. */
  streamError?: boolean;
  inputTokens?: number;
  outputTokens?: number;
  cacheRead?: number;
  cacheWrite?: number;
  cacheWrite1h?: number;
  reasoningTokens?: number;
  /** Reply with this many words. */
  words?: number;
  /** Answer with a call of the first declared tool (unless the last turn is a tool's result). */
  tool?: boolean;
  /** Like `tool`, calling the declared tool of this name. */
  toolName?: string;
  /** Like `tool`, calling the first N declared tools in parallel. */
  tools?: number;
  /** Reason before answering: a thinking block, a reasoning item, or `reasoning_content`. */
  thinking?: boolean;
  /** Label counted in the stats and used to filter recorded requests. */
  tag?: string;
  /** Azure: the content filter refuses the prompt (400) or stops the completion. */
  contentFilter?: 'prompt' | 'completion';
  /**
   * The faults (status, delays, invalid JSON, cuts, stream errors, no usage, content filter) apply only to calls
   * for this model: one alias's upstreams on one mock fail apart (routing tests).
   */
  onlyModel?: string;
  /**
   * The faults apply only to calls carrying this provider key (in `authorization`, `x-api-key`,
   * `api-key` or `x-goog-api-key`): one credential of a pool fails apart (routing tests).
   */
  onlyKey?: string;
  /**
   * The faults apply to this share of the calls, in whole per cent, drawn at random per call (an
   * upstream failing half of its calls: `status=500,fail_percent=50`).
   */
  failPercent?: number;
}

export class DirectiveError extends Error {
  override name = 'DirectiveError';
}

const MARKER = '@mock(';
const NO_DIRECTIVES: Readonly<Directives> = Object.freeze({});

type Setter = (target: Directives, value: string | undefined, key: string) => void;

function readCount(value: string | undefined, key: string): number {
  const count = Number(value);
  if (value === undefined || value === '' || !Number.isSafeInteger(count) || count < 0) {
    throw new DirectiveError(`mock directive ${key} needs a non-negative integer`);
  }
  return count;
}

function readFlag(value: string | undefined, key: string): true {
  if (value !== undefined) throw new DirectiveError(`mock directive ${key} takes no value`);
  return true;
}

const SETTERS: Record<string, Setter> = {
  status: (target, value, key) => {
    const status = readCount(value, key);
    if (status < 400 || status > 599) throw new DirectiveError('mock directive status must be 400-599');
    target.status = status;
  },
  retry_after: (target, value, key) => {
    target.retryAfter = readCount(value, key);
  },
  delay: (target, value, key) => {
    target.delay = readCount(value, key);
  },
  first_byte_delay: (target, value, key) => {
    target.firstByteDelay = readCount(value, key);
  },
  chunk_delay: (target, value, key) => {
    target.chunkDelay = readCount(value, key);
  },
  invalid_json: (target, value, key) => {
    target.invalidJson = readFlag(value, key);
  },
  no_usage: (target, value, key) => {
    target.noUsage = readFlag(value, key);
  },
  cut_after: (target, value, key) => {
    target.cutAfter = readCount(value, key);
  },
  stream_error: (target, value, key) => {
    target.streamError = readFlag(value, key);
  },
  input_tokens: (target, value, key) => {
    target.inputTokens = readCount(value, key);
  },
  output_tokens: (target, value, key) => {
    target.outputTokens = readCount(value, key);
  },
  cache_read: (target, value, key) => {
    target.cacheRead = readCount(value, key);
  },
  cache_write: (target, value, key) => {
    target.cacheWrite = readCount(value, key);
  },
  cache_write_1h: (target, value, key) => {
    target.cacheWrite1h = readCount(value, key);
  },
  reasoning_tokens: (target, value, key) => {
    target.reasoningTokens = readCount(value, key);
  },
  words: (target, value, key) => {
    target.words = readCount(value, key);
  },
  tool: (target, value, key) => {
    target.tool = readFlag(value, key);
  },
  tool_name: (target, value, key) => {
    if (!value) throw new DirectiveError(`mock directive ${key} needs a value`);
    target.toolName = value;
  },
  tools: (target, value, key) => {
    target.tools = readCount(value, key);
  },
  thinking: (target, value, key) => {
    target.thinking = readFlag(value, key);
  },
  content_filter: (target, value) => {
    if (value !== 'prompt' && value !== 'completion')
      throw new DirectiveError('mock directive content_filter is prompt or completion');
    target.contentFilter = value;
  },
  tag: (target, value) => {
    if (!value) throw new DirectiveError('mock directive tag needs a value');
    target.tag = value;
  },
  fail_percent: (target, value, key) => {
    const percent = readCount(value, key);
    if (percent > 100) throw new DirectiveError('mock directive fail_percent must be 0-100');
    target.failPercent = percent;
  },
  only_model: (target, value) => {
    if (!value) throw new DirectiveError('mock directive only_model needs a value');
    target.onlyModel = value;
  },
  only_key: (target, value) => {
    if (!value) throw new DirectiveError('mock directive only_key needs a value');
    target.onlyKey = value;
  },
};

const KEY_HEADERS = ['authorization', 'x-api-key', 'api-key', 'x-goog-api-key'];

/** The directives of a call with these headers: without the faults when they are scoped to another key. */
export function directivesForKey(
  directives: Directives,
  headers: Record<string, string | string[] | undefined>,
): Directives {
  const key = directives.onlyKey;
  if (key === undefined) return directives;
  const sent = KEY_HEADERS.map((name) => headers[name]).map((value) =>
    typeof value === 'string' ? value.replace(/^Bearer\s+/i, '') : undefined,
  );
  return sent.includes(key) ? directives : withoutFaults(directives);
}

/** The directives of a call for `model`: without the faults when they are scoped to another model. */
export function directivesForModel(directives: Directives, model: unknown): Directives {
  if (directives.onlyModel === undefined || directives.onlyModel === model) return directives;
  return withoutFaults(directives);
}

/** The directives of this call once `fail_percent` was drawn: the faults, or none of them. */
export function directivesDrawn(directives: Directives, random: () => number = Math.random): Directives {
  if (directives.failPercent === undefined || random() * 100 < directives.failPercent) return directives;
  return withoutFaults(directives);
}

function withoutFaults(directives: Directives): Directives {
  const {
    status: _status,
    retryAfter: _retryAfter,
    delay: _delay,
    firstByteDelay: _firstByteDelay,
    invalidJson: _invalidJson,
    noUsage: _noUsage,
    cutAfter: _cutAfter,
    streamError: _streamError,
    contentFilter: _contentFilter,
    ...kept
  } = directives;
  return kept;
}

/** Applies a `key=value,flag` list onto `target`; unknown keys are refused so typos are noticed. */
function applyList(target: Directives, list: string): void {
  for (const item of list.split(',')) {
    const entry = item.trim();
    if (entry === '') continue;
    const equals = entry.indexOf('=');
    const key = (equals === -1 ? entry : entry.slice(0, equals)).trim();
    const value = equals === -1 ? undefined : entry.slice(equals + 1).trim();
    const setter = SETTERS[key];
    if (!setter) throw new DirectiveError(`unknown mock directive ${key}`);
    setter(target, value, key);
  }
}

function unwrapMarker(text: string, from: number): string {
  const start = from + MARKER.length;
  const end = text.indexOf(')', start);
  if (end === -1) throw new DirectiveError('mock directive marker is not closed');
  return text.slice(start, end);
}

/**
 * Reads the directives of one request. The common case (no header, no marker) costs one indexOf
 * over the body and returns a shared empty object.
 */
export function readDirectives(header: string | string[] | undefined, body: string): Directives {
  const markerAt = body.indexOf(MARKER);
  if (markerAt === -1 && header === undefined) return NO_DIRECTIVES;
  const directives: Directives = {};
  if (markerAt !== -1) applyList(directives, unwrapMarker(body, markerAt));
  if (header !== undefined) {
    const text = Array.isArray(header) ? header.join(',') : header;
    const headerMarker = text.indexOf(MARKER);
    applyList(directives, headerMarker === -1 ? text : unwrapMarker(text, headerMarker));
  }
  return directives;
}
