import type { SseEvent } from '../../../upstream/sse.ts';
import { isObject, type Json, parseEventData } from '../../fields.ts';
import type { IrStreamPart, IrUsage } from '../../ir.ts';
import type { StreamDecoder, UpstreamAnswerContext } from '../../protocol.ts';
import {
  answerIdOf,
  callIdOf,
  firstCandidate,
  geminiStopReason,
  partsOf,
  promptBlocked,
  signatureOf,
} from './response.ts';
import { decodeGeminiUsage } from './usage.ts';

/**
 * Gemini stream chunks (`streamGenerateContent?alt=sse`: each a whole GenerateContentResponse,
 * no event names, no end marker) -> parts. Text and thoughts arrive as deltas; a function call
 * arrives whole in one part. Every chunk repeats the cumulative usageMetadata: the figures of the
 * chunk with the finishReason are the answer's (never a sum), and that chunk ends the answer.
 */
export function createGeminiStreamDecoder(context: UpstreamAnswerContext): StreamDecoder {
  let started = false;
  let finished = false;
  let calls = 0;
  let answerId = '';
  let textBlock: string | null = null;
  let reasoningBlock: string | null = null;
  let blocks = 0;
  const nextId = () => `g${blocks++}`;

  function close(parts: IrStreamPart[]): void {
    if (textBlock !== null) parts.push({ type: 'block-end', id: textBlock });
    if (reasoningBlock !== null) parts.push({ type: 'block-end', id: reasoningBlock });
    textBlock = null;
    reasoningBlock = null;
  }

  function onPart(part: Json, parts: IrStreamPart[]): void {
    const proof = signatureOf(part, context);
    const text = typeof part.text === 'string' ? part.text : '';
    if (part.thought === true || (proof && !isObject(part.functionCall) && text === '')) {
      if (reasoningBlock === null) {
        close(parts);
        reasoningBlock = nextId();
        parts.push({ type: 'reasoning-start', id: reasoningBlock });
      }
      if (part.thought === true && text !== '')
        parts.push({ type: 'reasoning-delta', id: reasoningBlock, delta: text });
      if (proof) parts.push({ type: 'reasoning-proof', id: reasoningBlock, proof });
      return;
    }
    if (proof) {
      // The signature belongs before the part it rides on, as in a whole answer.
      close(parts);
      const id = nextId();
      parts.push(
        { type: 'reasoning-start', id },
        { type: 'reasoning-proof', id, proof },
        { type: 'block-end', id },
      );
    }
    if (isObject(part.functionCall) && typeof part.functionCall.name === 'string') {
      close(parts);
      const id = nextId();
      const args = isObject(part.functionCall.args) ? part.functionCall.args : {};
      parts.push(
        {
          type: 'tool-call-start',
          id,
          callId: callIdOf(part.functionCall, answerId, calls++),
          name: part.functionCall.name,
        },
        { type: 'tool-call-delta', id, delta: JSON.stringify(args) },
        { type: 'block-end', id },
      );
      return;
    }
    if (text === '') return;
    if (textBlock === null) {
      close(parts);
      textBlock = nextId();
      parts.push({ type: 'text-start', id: textBlock });
    }
    parts.push({ type: 'text-delta', id: textBlock, delta: text });
  }

  return {
    push(event: SseEvent): IrStreamPart[] {
      if (finished) return [];
      const chunk = parseEventData(event.data);
      if (chunk === null) return [];
      const parts: IrStreamPart[] = [];
      if (!started) {
        started = true;
        answerId = answerIdOf(chunk);
        parts.push({ type: 'start', id: answerId });
      }
      const candidate = firstCandidate(chunk);
      for (const part of partsOf(candidate)) onPart(part, parts);
      const ended = candidate !== null ? typeof candidate.finishReason === 'string' : promptBlocked(chunk);
      if (!ended) return parts;
      finished = true;
      close(parts);
      const usage: IrUsage | null = decodeGeminiUsage(chunk.usageMetadata);
      parts.push({
        type: 'finish',
        reason: candidate === null ? 'content_filter' : geminiStopReason(candidate.finishReason, calls > 0),
        usage,
      });
      return parts;
    },
  };
}
