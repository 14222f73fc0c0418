import { PROVIDER_KIND_SURFACES } from '@tollgate/schemas';
import {
  findKeyValue,
  findLastKeyValue,
  firstKeyIs,
  isRecord,
  looksLikeJsonObject,
  parseJson,
  readCount,
  readPlainString,
} from '../json-scan.ts';
import type { SseEvent } from '../sse.ts';
import type {
  MeteredSurface,
  StreamEventVerdict,
  StreamUsageTracker,
  UpstreamAdapter,
  UpstreamRequest,
  UpstreamTarget,
  UsageFigures,
} from '../types.ts';
import { plainUsage } from '../types.ts';
import { assertSurface, trimBaseUrl } from './surface.ts';

/**
 * OpenAI's chat-completions and responses protocols, and every server that copies them (vLLM,
 * Ollama, llama.cpp, ...): those differ only by base URL (`https://api.openai.com/v1`,
 * `http://host:8000/v1`) and by needing a credential or not, which is configuration.
 */
const PATHS: Partial<Record<MeteredSurface, string>> = {
  chat_completions: '/chat/completions',
  responses: '/responses',
};

function buildRequest(input: {
  target: UpstreamTarget;
  surface: MeteredSurface;
  clientHeaders: Pick<Headers, 'get'>;
}): UpstreamRequest {
  assertSurface(openaiAdapter, input.surface);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (input.target.credential !== null) headers.authorization = `Bearer ${input.target.credential}`;
  return { url: trimBaseUrl(input.target.provider.baseUrl) + PATHS[input.surface], headers };
}

/**
 * OpenAI counts cached input inside the prompt count (`*_tokens_details.cached_tokens`): it is
 * taken out of input and reported as cache reads, so no token is counted twice. OpenAI reports no
 * cache writes (it charges none). A cached count above the prompt's is not believed (zero).
 */
function splitCached(input: bigint, output: bigint, details: unknown): UsageFigures {
  const cached = isRecord(details) ? (readCount(details.cached_tokens) ?? 0n) : 0n;
  const read = cached <= input ? cached : 0n;
  return { ...plainUsage(input - read, output), cacheReadTokens: read };
}

/** Chat: prompt_tokens (cached included) and completion_tokens (reasoning included). */
function readChatUsage(usage: unknown): UsageFigures | null {
  if (!isRecord(usage)) return null;
  const input = readCount(usage.prompt_tokens);
  const output = readCount(usage.completion_tokens);
  return input === null || output === null ? null : splitCached(input, output, usage.prompt_tokens_details);
}

/** Responses: input_tokens (cached included) and output_tokens (reasoning included). */
function readResponsesUsage(usage: unknown): UsageFigures | null {
  if (!isRecord(usage)) return null;
  const input = readCount(usage.input_tokens);
  const output = readCount(usage.output_tokens);
  return input === null || output === null ? null : splitCached(input, output, usage.input_tokens_details);
}

export function extractUsage(surface: MeteredSurface, body: unknown): UsageFigures | null {
  if (!isRecord(body)) return null;
  if (surface === 'chat_completions') return readChatUsage(body.usage);
  if (surface === 'responses') return readResponsesUsage(body.usage);
  return null;
}

/**
 * Chat streams: the gateway asks for `stream_options.include_usage`, so the last chunk before
 * `[DONE]` holds the usage with `choices: []`. Every other chunk says `"usage":null` and is not
 * parsed. Servers that report usage on every chunk (vLLM's continuous stats) work too: the
 * latest figures win.
 */
export class ChatUsageTracker implements StreamUsageTracker {
  #usage: UsageFigures | null = null;

  observe(event: SseEvent): StreamEventVerdict {
    const data = event.data;
    if (data === '[DONE]') return 'terminal';
    if (event.event === 'error') return 'provider_error';
    if (!looksLikeJsonObject(data)) return 'invalid';
    // Providers send a failure as a chunk whose (only) member is `error`; usage is the last member.
    if (!firstKeyIs(data, '"error"')) {
      const usageAt = findLastKeyValue(data, '"usage"');
      if (usageAt === -1 || data.startsWith('null', usageAt)) return 'pass';
    }
    const parsed = parseJson(data);
    if (!isRecord(parsed)) return 'invalid';
    if (parsed.error !== undefined && parsed.error !== null) return 'provider_error';
    this.#usage = readChatUsage(parsed.usage) ?? this.#usage;
    return Array.isArray(parsed.choices) && parsed.choices.length === 0 ? 'usage_only' : 'pass';
  }

  usage(): UsageFigures | null {
    return this.#usage;
  }
}

/** The event type: the SSE event name, or the data's own `type` when a server sends no names. */
function responsesEventType(event: SseEvent): string | undefined {
  if (event.event) return event.event;
  const at = findKeyValue(event.data, '"type"');
  return at === -1 ? undefined : readPlainString(event.data, at)?.value;
}

/**
 * Responses streams: usage arrives in `response.completed` (or `response.incomplete`, e.g. when
 * max_output_tokens cut the answer), which also ends the stream. `response.failed` and `error` are
 * the provider failing part-way.
 */
export class ResponsesUsageTracker implements StreamUsageTracker {
  #usage: UsageFigures | null = null;

  observe(event: SseEvent): StreamEventVerdict {
    const type = responsesEventType(event);
    if (type === 'error' || type === 'response.failed') return 'provider_error';
    if (!looksLikeJsonObject(event.data)) return 'invalid';
    if (type !== 'response.completed' && type !== 'response.incomplete') return 'pass';
    const parsed = parseJson(event.data);
    if (!isRecord(parsed)) return 'invalid';
    if (isRecord(parsed.response)) this.#usage = readResponsesUsage(parsed.response.usage) ?? this.#usage;
    return 'terminal';
  }

  usage(): UsageFigures | null {
    return this.#usage;
  }
}

export const openaiAdapter: UpstreamAdapter = {
  kind: 'openai',
  surfaces: PROVIDER_KIND_SURFACES.openai,
  // Chat completions: what every OpenAI-compatible server (vLLM, Ollama, llama.cpp) speaks.
  wireProtocol: 'chat_completions',
  buildRequest,
  extractUsage,
  createStreamUsageTracker(surface) {
    assertSurface(openaiAdapter, surface);
    return surface === 'responses' ? new ResponsesUsageTracker() : new ChatUsageTracker();
  },
};
