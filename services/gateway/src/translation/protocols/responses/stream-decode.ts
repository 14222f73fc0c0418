import type { SseEvent } from '../../../upstream/sse.ts';
import { isObject, type Json, parseEventData } from '../../fields.ts';
import type { IrStreamPart, ReasoningProof } from '../../ir.ts';
import type { StreamDecoder, UpstreamAnswerContext } from '../../protocol.ts';
import { decodeResponsesUsage, reasoningSummaryText, responsesStopReason } from './response.ts';

interface OpenBlock {
  id: string;
  kind: 'text' | 'reasoning' | 'tool';
  /** Whether any delta was seen (arguments or text given only in the `.done` event are used then). */
  sawDelta: boolean;
}

/**
 * Responses events -> parts. Blocks are keyed by output index (text also by content index).
 * Arguments or text that arrive only in a `.done` event (or only in output_item.done) are used
 * then. The end is response.completed or response.incomplete (length, with its usage).
 */
export function createResponsesStreamDecoder(context: UpstreamAnswerContext): StreamDecoder {
  const open = new Map<string, OpenBlock>();
  const closed = new Set<string>();
  let started = false;
  let finished = false;
  let sawToolCall = false;

  function openBlock(
    key: string,
    kind: OpenBlock['kind'],
    parts: IrStreamPart[],
    call?: { callId: string; name: string },
  ): OpenBlock {
    const existing = open.get(key);
    if (existing) return existing;
    const block: OpenBlock = { id: key, kind, sawDelta: false };
    open.set(key, block);
    if (kind === 'text') parts.push({ type: 'text-start', id: key });
    else if (kind === 'reasoning') parts.push({ type: 'reasoning-start', id: key });
    else parts.push({ type: 'tool-call-start', id: key, callId: call?.callId ?? '', name: call?.name ?? '' });
    return block;
  }

  function close(key: string, parts: IrStreamPart[]): void {
    closed.add(key);
    if (open.delete(key)) parts.push({ type: 'block-end', id: key });
  }

  function text(
    outputIndex: unknown,
    contentIndex: unknown,
    delta: string,
    parts: IrStreamPart[],
    done: boolean,
  ): void {
    const key = `t${String(outputIndex)}_${String(contentIndex ?? 0)}`;
    // output_item.done repeats text already given by deltas and output_text.done.
    if (closed.has(key)) return;
    const block = open.get(key);
    if (done && block?.sawDelta) {
      close(key, parts);
      return;
    }
    const target = block ?? openBlock(key, 'text', parts);
    if (delta !== '') parts.push({ type: 'text-delta', id: key, delta });
    target.sawDelta = true;
    if (done) close(key, parts);
  }

  function onItem(data: Json, added: boolean, parts: IrStreamPart[]): void {
    const item = isObject(data.item) ? data.item : {};
    const index = String(data.output_index);
    if (item.type === 'function_call') {
      sawToolCall = true;
      const key = `f${index}`;
      const block = openBlock(key, 'tool', parts, {
        callId: String(item.call_id ?? ''),
        name: String(item.name ?? ''),
      });
      if (!added) {
        if (!block.sawDelta && typeof item.arguments === 'string' && item.arguments !== '')
          parts.push({ type: 'tool-call-delta', id: key, delta: item.arguments });
        close(key, parts);
      }
    } else if (item.type === 'reasoning') {
      const key = `r${index}`;
      const block = openBlock(key, 'reasoning', parts);
      if (added) return;
      const summary = reasoningSummaryText(item.summary);
      if (!block.sawDelta && summary !== '') parts.push({ type: 'reasoning-delta', id: key, delta: summary });
      if (typeof item.encrypted_content === 'string') {
        const proof: ReasoningProof = {
          origin: context.providerTag,
          kind: 'encrypted',
          value: item.encrypted_content,
          ...(typeof item.id === 'string' ? { itemId: item.id } : {}),
        };
        parts.push({ type: 'reasoning-proof', id: key, proof });
      }
      close(key, parts);
    } else if (item.type === 'message' && !added) {
      const content = Array.isArray(item.content) ? item.content : [];
      content.forEach((part, contentIndex) => {
        if (!isObject(part)) return;
        const value =
          part.type === 'output_text' ? part.text : part.type === 'refusal' ? part.refusal : undefined;
        if (typeof value === 'string') text(data.output_index, contentIndex, value, parts, true);
      });
      for (const key of [...open.keys()]) if (key.startsWith(`t${index}_`)) close(key, parts);
    }
  }

  return {
    push(event: SseEvent): IrStreamPart[] {
      if (finished) return [];
      const data = parseEventData(event.data);
      if (data === null) return [];
      const parts: IrStreamPart[] = [];
      if (!started) {
        started = true;
        const response = isObject(data.response) ? data.response : {};
        parts.push({ type: 'start', id: String(response.id ?? 'resp') });
      }
      switch (data.type) {
        case 'response.output_item.added':
        case 'response.output_item.done':
          onItem(data, data.type === 'response.output_item.added', parts);
          break;
        case 'response.output_text.delta':
        case 'response.refusal.delta':
          text(data.output_index, data.content_index, String(data.delta ?? ''), parts, false);
          break;
        case 'response.output_text.done':
          text(data.output_index, data.content_index, String(data.text ?? ''), parts, true);
          break;
        case 'response.reasoning_summary_text.delta':
        case 'response.reasoning_text.delta': {
          const block = openBlock(`r${String(data.output_index)}`, 'reasoning', parts);
          const separator =
            block.sawDelta &&
            data.type === 'response.reasoning_summary_text.delta' &&
            data.summary_index !== (block as { last?: unknown }).last
              ? '\n\n'
              : '';
          (block as { last?: unknown }).last = data.summary_index;
          block.sawDelta = true;
          parts.push({ type: 'reasoning-delta', id: block.id, delta: separator + String(data.delta ?? '') });
          break;
        }
        case 'response.function_call_arguments.delta': {
          const block = open.get(`f${String(data.output_index)}`);
          if (block && typeof data.delta === 'string' && data.delta !== '') {
            block.sawDelta = true;
            parts.push({ type: 'tool-call-delta', id: block.id, delta: data.delta });
          }
          break;
        }
        case 'response.function_call_arguments.done': {
          const block = open.get(`f${String(data.output_index)}`);
          if (block && !block.sawDelta && typeof data.arguments === 'string' && data.arguments !== '') {
            block.sawDelta = true;
            parts.push({ type: 'tool-call-delta', id: block.id, delta: data.arguments });
          }
          break;
        }
        case 'response.completed':
        case 'response.incomplete': {
          finished = true;
          for (const key of [...open.keys()]) close(key, parts);
          const response = isObject(data.response) ? data.response : {};
          parts.push({
            type: 'finish',
            reason: responsesStopReason(response, sawToolCall),
            usage: decodeResponsesUsage(response.usage),
          });
          break;
        }
      }
      return parts;
    },
  };
}
