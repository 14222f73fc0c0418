import type { GatewayProvider, MeteredSurface, ProviderKind } from '@tollgate/schemas';
import type { WireProtocol } from '../translation/protocol.ts';
import type { SseEvent } from './sse.ts';

export type { MeteredSurface, ProviderKind } from '@tollgate/schemas';

/** Where one request goes: the provider, its credential, and the model on both sides. */
export interface UpstreamTarget {
  provider: GatewayProvider;
  /** The provider credential (from loadCredentials), or null for servers that need none. */
  credential: string | null;
  /** The provider's model id; never shown to a client. */
  upstreamModel: string;
  /** The public alias the client called; replaces the upstream id in everything relayed back. */
  alias: string;
}

/**
 * Usage figures as the provider reported them, split into the parts priced apart; each token is
 * in exactly one part (`inputTokens` excludes cache reads and writes; output includes reasoning).
 */
export interface UsageFigures {
  inputTokens: bigint;
  outputTokens: bigint;
  cacheReadTokens: bigint;
  /** Cache writes of five minutes, or of a length the provider did not report. */
  cacheWriteTokens: bigint;
  cacheWrite1hTokens: bigint;
}

/** Usage without cache parts (providers that report none). */
export function plainUsage(inputTokens: bigint, outputTokens: bigint): UsageFigures {
  return { inputTokens, outputTokens, cacheReadTokens: 0n, cacheWriteTokens: 0n, cacheWrite1hTokens: 0n };
}

export interface UpstreamRequest {
  url: string;
  headers: Record<string, string>;
  /**
   * Sent in place of the body the adapter was given, for a kind whose envelope differs from its
   * protocol's (a model named in the URL instead of the body, a version field of its own).
   */
  body?: string;
}

/**
 * What one SSE event means for the relay. Strings rather than objects so the hot path allocates
 * nothing per event.
 * - `pass`: relay it unchanged (apart from the model rewrite).
 * - `usage_only`: the chat-completions usage chunk (`choices: []`); relayed only if the client asked.
 * - `terminal`: the protocol's own end event (message_stop, [DONE], response.completed); relay it.
 * - `provider_error`: the provider reported a failure inside the stream; never relayed as is.
 * - `invalid`: the event is not the JSON the protocol promises.
 * - `drop`: the provider's own metadata, no event of the protocol (Azure's prompt filter chunk);
 *   observed, never relayed or translated.
 */
export type StreamEventVerdict = 'pass' | 'usage_only' | 'terminal' | 'provider_error' | 'invalid' | 'drop';

/** Turns the bytes of a streamed answer into events, in any chunking. SseParser for SSE providers. */
export interface StreamDecoder {
  push(chunk: Uint8Array): SseEvent[];
  /** The body ended: the events still buffered. */
  flush(): SseEvent[];
}

/** Follows one stream's events and keeps the latest usage figures. One tracker per stream. */
export interface StreamUsageTracker {
  observe(event: SseEvent): StreamEventVerdict;
  /** The usage to settle, or null when the stream did not report complete figures. */
  usage(): UsageFigures | null;
}

/**
 * One provider protocol family. An adapter is transport (URL, auth and version headers) plus
 * usage extraction: bodies are forwarded unchanged. OpenAI-compatible servers (vLLM, Ollama,
 * llama.cpp) are the `openai` adapter with their own base URL.
 */
export interface UpstreamAdapter {
  readonly kind: ProviderKind;
  /** The surfaces this kind serves natively: bodies forwarded unchanged. */
  readonly surfaces: readonly MeteredSurface[];
  /**
   * The protocol a call on any other surface is translated into (translation/): the kind's
   * wire protocol. A kind whose protocol is not a surface (Gemini) declares it here alone.
   */
  readonly wireProtocol: WireProtocol;
  /** URL and headers of the upstream call. Only the client headers named by the adapter pass. */
  buildRequest(input: {
    target: UpstreamTarget;
    surface: WireProtocol;
    clientHeaders: Pick<Headers, 'get'>;
    /** Whether the answer is streamed (kinds that stream on another URL); false when absent. */
    stream?: boolean;
    /** The upstream body about to be sent (the wire protocol's, model included). */
    body?: string;
  }): UpstreamRequest;
  /**
   * Kinds whose authentication needs I/O or the final body (an OAuth token, a request signature):
   * the request as it will be sent, authorised. Runs after buildRequest, before every send.
   */
  authorize?(
    request: { url: string; headers: Record<string, string>; body: string },
    target: UpstreamTarget,
  ): Promise<UpstreamRequest>;
  /** Usage of a non-streamed response body (already parsed JSON); null when absent or malformed. */
  extractUsage(surface: WireProtocol, body: unknown): UsageFigures | null;
  createStreamUsageTracker(surface: WireProtocol): StreamUsageTracker;
  /**
   * Whether a 4xx error body says the provider refused our own credential, for providers that do
   * not say it with 401/403 (Gemini answers a wrong key with 400 API_KEY_INVALID): then the call
   * fails as upstream_unavailable, not as the client's mistake. Absent: the status alone decides.
   */
  isCredentialRefusal?(status: number, body: unknown): boolean;
  /**
   * Streams that are not SSE (Bedrock's binary event stream): their content type and a decoder
   * into the events an SSE stream of the wire protocol carries. Absent: SSE.
   */
  readonly streamFraming?: { contentType: string; createDecoder(): StreamDecoder };
  /**
   * The provider answers with a model name of its own (Azure names the deployment's model, Bedrock
   * Anthropic's name, not the id called): the first `model` of an answer or event is replaced by
   * the alias whatever its value.
   */
  readonly namesItsOwnModel?: boolean;
}
