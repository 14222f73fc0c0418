import type { MeteredSurface } from '@tollgate/schemas';
import type { SseEvent } from '../upstream/sse.ts';
import { codecFor } from './codecs.ts';
import type { IrRequest } from './ir.ts';
import type { CallerAnswerContext, WireProtocol } from './protocol.ts';
import { providerTag } from './signatures.ts';
import { ToolNames } from './tool-names.ts';

/**
 * A call whose surface is not its upstream's protocol: the caller's request decoded once, before
 * any reservation (so every refusal is free), and everything needed to turn the answer back.
 * The native path never builds one and never reaches this file.
 */
export interface Translation {
  caller: MeteredSurface;
  upstream: WireProtocol;
  request: IrRequest;
  toolNames: ToolNames;
}

/**
 * Decodes the caller's body for an upstream speaking another protocol, and encodes it once for
 * that upstream so that whatever it cannot express is refused now (unsupported_parameter naming
 * the caller's field), never dropped.
 */
export function planTranslation(
  caller: MeteredSurface,
  upstream: WireProtocol,
  body: Record<string, unknown>,
  maxOutputTokens: number,
  target: { providerId: string; upstreamModel: string },
): Translation {
  const request = codecFor(caller).decodeRequest(body, maxOutputTokens);
  const translation: Translation = { caller, upstream, request, toolNames: new ToolNames(request.tools) };
  encodeUpstreamBody(translation, target);
  return translation;
}

/** The upstream request body, for the provider and model the reservation named. */
export function encodeUpstreamBody(
  translation: Translation,
  target: { providerId: string; upstreamModel: string },
): string {
  return JSON.stringify(
    codecFor(translation.upstream).encodeRequest(translation.request, {
      upstreamModel: target.upstreamModel,
      toolNames: translation.toolNames,
      providerTag: providerTag(target.providerId),
    }),
  );
}

function callerContext(
  translation: Translation,
  alias: string,
  includeUsage: boolean,
  created = Math.floor(Date.now() / 1000),
): CallerAnswerContext {
  return { alias, toolNames: translation.toolNames, includeUsage, created, request: translation.request };
}

/** A whole upstream answer (parsed JSON) as the caller's; throws upstream_invalid_response. */
export function translateAnswer(
  translation: Translation,
  body: Record<string, unknown>,
  names: { alias: string; providerId: string },
): string {
  const answer = codecFor(translation.upstream).decodeResponse(body, {
    providerTag: providerTag(names.providerId),
  });
  return JSON.stringify(
    codecFor(translation.caller).encodeResponse(answer, callerContext(translation, names.alias, true)),
  );
}

/** Upstream SSE events in, the caller's SSE text out. */
export interface StreamTranslator {
  push(event: SseEvent): string;
  /** Events written so far (a mid-stream error continues Responses' numbering from it). */
  readonly eventCount: number;
}

export function createStreamTranslator(
  translation: Translation,
  names: { alias: string; providerId: string; includeUsage: boolean; created?: number },
): StreamTranslator {
  const decoder = codecFor(translation.upstream).createStreamDecoder({
    providerTag: providerTag(names.providerId),
  });
  const encoder = codecFor(translation.caller).createStreamEncoder(
    callerContext(translation, names.alias, names.includeUsage, names.created),
  );
  return {
    push(event) {
      let text = '';
      for (const part of decoder.push(event)) text += encoder.encode(part);
      return text;
    },
    get eventCount() {
      return encoder.eventCount;
    },
  };
}
