import { generatedId, invalidAnswer, isObject, type Json } from '../../fields.ts';
import type { IrAssistantPart, IrResponse, IrStopReason, ReasoningProof } from '../../ir.ts';
import type { UpstreamAnswerContext } from '../../protocol.ts';
import { decodeGeminiUsage } from './usage.ts';

/** Gemini answers (generateContent) -> the representation. */

/**
 * Gemini's finishReason. A function call ends with STOP (Gemini has no tool-use reason), so the
 * caller's reason is tool_calls whenever the answer calls a tool. Every safety-like reason is a
 * content filter; a malformed or unexpected tool call and OTHER end the answer as it stands.
 */
const FINISH_FROM: Record<string, IrStopReason> = {
  STOP: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: 'content_filter',
  RECITATION: 'content_filter',
  LANGUAGE: 'content_filter',
  BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  SPII: 'content_filter',
  IMAGE_SAFETY: 'content_filter',
  IMAGE_PROHIBITED_CONTENT: 'content_filter',
  IMAGE_RECITATION: 'content_filter',
};

export function geminiStopReason(finishReason: unknown, calledTool: boolean): IrStopReason {
  const reason = (typeof finishReason === 'string' && FINISH_FROM[finishReason]) || 'stop';
  return reason === 'stop' && calledTool ? 'tool_calls' : reason;
}

/** The first candidate, or null when the prompt itself was blocked (promptFeedback.blockReason). */
export function firstCandidate(body: Json): Json | null {
  const candidate = Array.isArray(body.candidates) ? body.candidates[0] : undefined;
  return isObject(candidate) ? candidate : null;
}

export function promptBlocked(body: Json): boolean {
  return isObject(body.promptFeedback) && typeof body.promptFeedback.blockReason === 'string';
}

export function partsOf(candidate: Json | null): Json[] {
  const content = candidate && isObject(candidate.content) ? candidate.content : null;
  return content && Array.isArray(content.parts) ? content.parts.filter(isObject) : [];
}

/** A part's thought signature as a proof only this provider may be sent back. */
export function signatureOf(part: Json, context: UpstreamAnswerContext): ReasoningProof | null {
  return typeof part.thoughtSignature === 'string' && part.thoughtSignature !== ''
    ? { origin: context.providerTag, kind: 'signature', value: part.thoughtSignature }
    : null;
}

/**
 * A function call part's id. Gemini usually gives none (it matches results by name): then the
 * answer's id and the call's position make one, valid for every caller's protocol.
 */
export function callIdOf(call: Json, answerId: string, position: number): string {
  if (typeof call.id === 'string' && /^[a-zA-Z0-9_-]{1,128}$/.test(call.id)) return call.id;
  return `call_${answerId.replace(/[^a-zA-Z0-9_-]/g, '').slice(0, 48)}_${position}`;
}

export function answerIdOf(body: Json): string {
  return typeof body.responseId === 'string' && body.responseId !== ''
    ? body.responseId
    : generatedId('gen_');
}

export function decodeGeminiResponse(body: Json, context: UpstreamAnswerContext): IrResponse {
  const usage = decodeGeminiUsage(body.usageMetadata);
  const candidate = firstCandidate(body);
  if (usage === null || (candidate === null && !promptBlocked(body))) throw invalidAnswer();
  const content: IrAssistantPart[] = [];
  const id = answerIdOf(body);
  let calls = 0;
  for (const part of partsOf(candidate)) {
    // A signature rides on the part it follows; it goes back on the same place (encode-request).
    const proof = signatureOf(part, context);
    if (part.thought === true) {
      const text = typeof part.text === 'string' ? part.text : '';
      if (text !== '' || proof) content.push({ type: 'reasoning', text, ...(proof ? { proof } : {}) });
      continue;
    }
    if (proof) content.push({ type: 'reasoning', text: '', proof });
    if (typeof part.text === 'string') {
      if (part.text !== '') content.push({ type: 'text', text: part.text });
    } else if (isObject(part.functionCall) && typeof part.functionCall.name === 'string') {
      content.push({
        type: 'tool_call',
        callId: callIdOf(part.functionCall, id, calls++),
        name: part.functionCall.name,
        arguments: JSON.stringify(isObject(part.functionCall.args) ? part.functionCall.args : {}),
      });
    }
  }
  return {
    id,
    content,
    stopReason: candidate === null ? 'content_filter' : geminiStopReason(candidate.finishReason, calls > 0),
    usage,
  };
}
