import type { SseEvent } from '../upstream/sse.ts';
import type { IrRequest, IrResponse, IrStreamPart } from './ir.ts';
import type { ToolNames } from './tool-names.ts';

/**
 * The wire protocols the gateway translates between. A caller speaks one of the metered surfaces'
 * protocols; an upstream adapter declares the one it speaks. A new protocol (Gemini) is one more
 * name here, one more codec in codecs.ts, and no change to the others.
 */
export const WIRE_PROTOCOLS = ['messages', 'chat_completions', 'responses', 'gemini'] as const;
export type WireProtocol = (typeof WIRE_PROTOCOLS)[number];

/** What an encoder of the upstream request needs besides the request. */
export interface UpstreamRequestContext {
  upstreamModel: string;
  /** Upstream tool names for the caller's tools (shortened and flattened reversibly). */
  toolNames: ToolNames;
  /** Tag of the provider the request goes to: only reasoning it issued is sent back to it. */
  providerTag: string;
}

/** What a decoder of the upstream answer needs. */
export interface UpstreamAnswerContext {
  /** Tag of the provider answering: the origin of every reasoning proof it issues. */
  providerTag: string;
}

/** What an encoder of the caller's answer needs. */
export interface CallerAnswerContext {
  /** The public alias: the only model name the caller sees. */
  alias: string;
  /** The caller's tools, to tell custom (freeform) tools from functions. */
  toolNames: ToolNames;
  /** Chat streams: whether the caller asked for the usage chunk (stream_options.include_usage). */
  includeUsage: boolean;
  /** Unix seconds of the answer. */
  created: number;
  /** The request as the caller sent it, for the fields a response echoes (Responses). */
  request: IrRequest;
}

/** Turns one stream's upstream events into parts; `finish` comes once, at the protocol's end. */
export interface StreamDecoder {
  push(event: SseEvent): IrStreamPart[];
}

/** Turns parts into the caller's SSE text; `finish` writes the protocol's last events. */
export interface StreamEncoder {
  encode(part: IrStreamPart): string;
  /** Events written so far (Responses numbers its events; a mid-stream error continues it). */
  readonly eventCount: number;
}

/**
 * One wire protocol, both ways. As the caller's protocol: decode its request, encode the answer.
 * As the upstream's: encode the request, decode its answer. Pure functions; a refusal is an
 * AppError with its catalogue code (unsupported_parameter naming the caller's field).
 */
export interface ProtocolCodec {
  readonly protocol: WireProtocol;
  /** The caller's body (top-level fields already allow-listed) as the representation. */
  decodeRequest(body: Record<string, unknown>, maxOutputTokens: number): IrRequest;
  /** The upstream body (without stream-only fields the relay adds). */
  encodeRequest(request: IrRequest, context: UpstreamRequestContext): Record<string, unknown>;
  /** A whole upstream answer; throws upstream_invalid_response when it is not one. */
  decodeResponse(body: Record<string, unknown>, context: UpstreamAnswerContext): IrResponse;
  encodeResponse(response: IrResponse, context: CallerAnswerContext): Record<string, unknown>;
  createStreamDecoder(context: UpstreamAnswerContext): StreamDecoder;
  createStreamEncoder(context: CallerAnswerContext): StreamEncoder;
}
