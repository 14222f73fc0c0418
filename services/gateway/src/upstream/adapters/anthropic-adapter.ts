import { PROVIDER_KIND_SURFACES } from '@tollgate/schemas';
import { isRecord, looksLikeJsonObject, parseJson, readCount, readOptionalCount } from '../json-scan.ts';
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
import { assertSurface, trimBaseUrl } from './surface.ts';

/** Sent when the client names no version; the one version Anthropic documents as current. */
export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

/**
 * The messages URL. The base is the provider's origin (as in Anthropic's own SDK); a base that
 * already ends in /v1 is accepted too, so either way of writing it works.
 */
function messagesUrl(baseUrl: string): string {
  const base = trimBaseUrl(baseUrl);
  return base.endsWith('/v1') ? `${base}/messages` : `${base}/v1/messages`;
}

function buildRequest(input: {
  target: UpstreamTarget;
  surface: MeteredSurface;
  clientHeaders: Pick<Headers, 'get'>;
}): UpstreamRequest {
  assertSurface(anthropicAdapter, input.surface);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'anthropic-version': input.clientHeaders.get('anthropic-version') || DEFAULT_ANTHROPIC_VERSION,
  };
  // Headers.get joins repeated headers with ", ", which is how Anthropic reads a list of betas.
  const beta = input.clientHeaders.get('anthropic-beta');
  if (beta) headers['anthropic-beta'] = beta;
  if (input.target.credential !== null) headers['x-api-key'] = input.target.credential;
  return { url: messagesUrl(input.target.provider.baseUrl), headers };
}

/**
 * Anthropic reports cache tokens beside `input_tokens` (which is uncached input only):
 * `cache_read_input_tokens`, and `cache_creation_input_tokens` with, on recent API versions, its
 * split by lifetime in `cache_creation` (`ephemeral_5m_input_tokens`, `ephemeral_1h_input_tokens`).
 * Writes of a lifetime not reported are five-minute writes, Anthropic's default.
 */
export function cacheWrites(
  usage: Record<string, unknown>,
  total: bigint,
): { fiveMinutes: bigint; oneHour: bigint } {
  const split = usage.cache_creation;
  const oneHour = isRecord(split) ? (readCount(split.ephemeral_1h_input_tokens) ?? 0n) : 0n;
  // A split that claims more than the total is not believed: the total is billed as 5-minute writes.
  return oneHour <= total ? { fiveMinutes: total - oneHour, oneHour } : { fiveMinutes: total, oneHour: 0n };
}

function readMessagesUsage(usage: unknown): UsageFigures | null {
  if (!isRecord(usage)) return null;
  const input = readCount(usage.input_tokens);
  const cacheCreation = readOptionalCount(usage.cache_creation_input_tokens);
  const cacheRead = readOptionalCount(usage.cache_read_input_tokens);
  const output = readCount(usage.output_tokens);
  if (input === null || cacheCreation === null || cacheRead === null || output === null) return null;
  const writes = cacheWrites(usage, cacheCreation);
  return {
    inputTokens: input,
    outputTokens: output,
    cacheReadTokens: cacheRead,
    cacheWriteTokens: writes.fiveMinutes,
    cacheWrite1hTokens: writes.oneHour,
  };
}

function extractUsage(surface: MeteredSurface, body: unknown): UsageFigures | null {
  if (surface !== 'messages' || !isRecord(body)) return null;
  return readMessagesUsage(body.usage);
}

/**
 * message_start carries the input figures (and a provisional output count); message_delta carries
 * the cumulative output count and, on recent API versions, input and cache figures too. The latest
 * non-null value of each wins. Usage is complete only once a message_delta gave the output count.
 */
export class MessagesUsageTracker implements StreamUsageTracker {
  #input: bigint | null = null;
  #cacheCreation = 0n;
  #cacheCreation1h = 0n;
  #cacheRead = 0n;
  #output: bigint | null = null;
  #finalOutputSeen = false;

  observe(event: SseEvent): StreamEventVerdict {
    switch (event.event) {
      case 'error':
        return 'provider_error';
      case 'message_start':
        return this.#readEvent(event.data, false);
      case 'message_delta':
        return this.#readEvent(event.data, true);
      case 'message_stop':
        return looksLikeJsonObject(event.data) ? 'terminal' : 'invalid';
      default:
        return looksLikeJsonObject(event.data) ? 'pass' : 'invalid';
    }
  }

  usage(): UsageFigures | null {
    if (this.#input === null || this.#output === null || !this.#finalOutputSeen) return null;
    return {
      inputTokens: this.#input,
      outputTokens: this.#output,
      cacheReadTokens: this.#cacheRead,
      cacheWriteTokens: this.#cacheCreation - this.#cacheCreation1h,
      cacheWrite1hTokens: this.#cacheCreation1h,
    };
  }

  #readEvent(data: string, isDelta: boolean): StreamEventVerdict {
    const parsed = parseJson(data);
    if (!isRecord(parsed)) return 'invalid';
    const usage = isDelta ? parsed.usage : isRecord(parsed.message) ? parsed.message.usage : undefined;
    if (!isRecord(usage)) return 'pass';
    this.#input = readCount(usage.input_tokens) ?? this.#input;
    const cacheCreation = readCount(usage.cache_creation_input_tokens);
    if (cacheCreation !== null) {
      this.#cacheCreation = cacheCreation;
      this.#cacheCreation1h = cacheWrites(usage, cacheCreation).oneHour;
    }
    this.#cacheRead = readCount(usage.cache_read_input_tokens) ?? this.#cacheRead;
    const output = readCount(usage.output_tokens);
    if (output !== null) {
      this.#output = output;
      if (isDelta) this.#finalOutputSeen = true;
    }
    return 'pass';
  }
}

/** Anthropic's messages protocol: `x-api-key`, `anthropic-version`, `anthropic-beta`. */
export const anthropicAdapter: UpstreamAdapter = {
  kind: 'anthropic',
  surfaces: PROVIDER_KIND_SURFACES.anthropic,
  wireProtocol: 'messages',
  buildRequest,
  extractUsage,
  createStreamUsageTracker(surface) {
    assertSurface(anthropicAdapter, surface);
    return new MessagesUsageTracker();
  },
};
