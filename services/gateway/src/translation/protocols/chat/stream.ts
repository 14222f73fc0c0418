import type { SseEvent } from '../../../upstream/sse.ts';
import { generatedId, isObject, type Json, parseEventData } from '../../fields.ts';
import type { IrStopReason, IrStreamPart, IrUsage } from '../../ir.ts';
import type {
  CallerAnswerContext,
  StreamDecoder,
  StreamEncoder,
  UpstreamAnswerContext,
} from '../../protocol.ts';
import {
  chatFinishReason,
  chatFinishReasonOf,
  chatReasoningText,
  completionId,
  decodeChatUsage,
  encodeChatUsage,
} from './response.ts';

interface ToolBlock {
  id: string;
  callId: string;
}

/**
 * Chat chunks -> parts. What the providers get wrong, handled: usage in a chunk after the one
 * with finish_reason (the finish waits for `[DONE]`); content and finish in one chunk; chunks
 * after the usage (metadata) ignored; tool calls by index, a new id on a used index starting a new
 * call, a call without id given one; reasoning then text in one chunk (both kept).
 */
export function createChatStreamDecoder(_context: UpstreamAnswerContext): StreamDecoder {
  let started = false;
  let finished = false;
  let reason: IrStopReason | null = null;
  let usage: IrUsage | null = null;
  let textBlock: string | null = null;
  let reasoningBlock: string | null = null;
  let blocks = 0;
  const tools = new Map<number, ToolBlock>();
  const nextId = () => `c${blocks++}`;

  function closeText(parts: IrStreamPart[]): void {
    if (textBlock !== null) parts.push({ type: 'block-end', id: textBlock });
    textBlock = null;
  }
  function closeReasoning(parts: IrStreamPart[]): void {
    if (reasoningBlock !== null) parts.push({ type: 'block-end', id: reasoningBlock });
    reasoningBlock = null;
  }

  function onDelta(delta: Json, parts: IrStreamPart[]): void {
    const reasoning = chatReasoningText(delta);
    if (reasoning !== null) {
      closeText(parts);
      if (reasoningBlock === null) {
        reasoningBlock = nextId();
        parts.push({ type: 'reasoning-start', id: reasoningBlock });
      }
      parts.push({ type: 'reasoning-delta', id: reasoningBlock, delta: reasoning });
    }
    if (typeof delta.content === 'string' && delta.content !== '') {
      closeReasoning(parts);
      if (textBlock === null) {
        textBlock = nextId();
        parts.push({ type: 'text-start', id: textBlock });
      }
      parts.push({ type: 'text-delta', id: textBlock, delta: delta.content });
    }
    if (!Array.isArray(delta.tool_calls)) return;
    delta.tool_calls.forEach((raw, position) => {
      if (!isObject(raw)) return;
      const index = typeof raw.index === 'number' ? raw.index : position;
      const fn = isObject(raw.function) ? raw.function : {};
      let block = tools.get(index);
      const newId = typeof raw.id === 'string' && raw.id !== '' && raw.id !== block?.callId;
      if (!block || newId) {
        closeText(parts);
        closeReasoning(parts);
        if (block) parts.push({ type: 'block-end', id: block.id });
        block = {
          id: nextId(),
          callId: typeof raw.id === 'string' && raw.id !== '' ? raw.id : generatedId('call_'),
        };
        tools.set(index, block);
        parts.push({
          type: 'tool-call-start',
          id: block.id,
          callId: block.callId,
          name: typeof fn.name === 'string' ? fn.name : '',
        });
      }
      if (typeof fn.arguments === 'string' && fn.arguments !== '')
        parts.push({ type: 'tool-call-delta', id: block.id, delta: fn.arguments });
    });
  }

  function closeAll(parts: IrStreamPart[]): void {
    closeReasoning(parts);
    closeText(parts);
    for (const block of tools.values()) parts.push({ type: 'block-end', id: block.id });
    tools.clear();
  }

  return {
    push(event: SseEvent): IrStreamPart[] {
      if (finished) return [];
      const parts: IrStreamPart[] = [];
      if (event.data === '[DONE]') {
        finished = true;
        if (!started) parts.push({ type: 'start', id: 'chatcmpl' });
        closeAll(parts);
        parts.push({ type: 'finish', reason: reason ?? 'stop', usage });
        return parts;
      }
      const chunk = parseEventData(event.data);
      if (chunk === null) return [];
      if (!started) {
        started = true;
        parts.push({ type: 'start', id: String(chunk.id ?? 'chatcmpl') });
      }
      const decodedUsage = decodeChatUsage(chunk.usage);
      if (decodedUsage) usage = decodedUsage;
      const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
      if (!isObject(choice) || reason !== null) return parts;
      if (isObject(choice.delta)) onDelta(choice.delta, parts);
      if (choice.finish_reason != null) {
        reason = chatFinishReason(choice.finish_reason);
        closeAll(parts);
      }
      return parts;
    },
  };
}

/** Parts -> chat chunks for the caller; the usage chunk only when the caller asked for it. */
export function createChatStreamEncoder(context: CallerAnswerContext): StreamEncoder {
  let count = 0;
  let id = 'chatcmpl-translated';
  let started = false;
  let toolIndex = 0;
  const toolIndexes = new Map<string, number>();
  const chunk = (choices: unknown[], usage?: Json): string => {
    count += 1;
    const data: Json = {
      id,
      object: 'chat.completion.chunk',
      created: context.created,
      model: context.alias,
      choices,
    };
    if (usage) data.usage = usage;
    return `data: ${JSON.stringify(data)}\n\n`;
  };
  const delta = (value: Json, finishReason: string | null = null) =>
    chunk([{ index: 0, delta: value, logprobs: null, finish_reason: finishReason }]);
  const ensureStarted = () => {
    if (started) return '';
    started = true;
    return delta({ role: 'assistant', content: '' });
  };

  function encode(part: IrStreamPart): string {
    switch (part.type) {
      case 'start':
        id = completionId(part.id);
        return ensureStarted();
      case 'text-delta':
        return ensureStarted() + delta({ content: part.delta });
      case 'reasoning-delta':
        return ensureStarted() + delta({ reasoning_content: part.delta });
      case 'tool-call-start': {
        const index = toolIndex++;
        toolIndexes.set(part.id, index);
        const name = context.toolNames.caller(part.name).name;
        return (
          ensureStarted() +
          delta({
            tool_calls: [{ index, id: part.callId, type: 'function', function: { name, arguments: '' } }],
          })
        );
      }
      case 'tool-call-delta': {
        const index = toolIndexes.get(part.id);
        return index === undefined
          ? ''
          : delta({ tool_calls: [{ index, function: { arguments: part.delta } }] });
      }
      case 'finish': {
        let text = ensureStarted() + delta({}, chatFinishReasonOf(part.reason));
        if (context.includeUsage && part.usage) text += chunk([], encodeChatUsage(part.usage));
        count += 1;
        return `${text}data: [DONE]\n\n`;
      }
      default:
        return '';
    }
  }

  return {
    encode,
    get eventCount() {
      return count;
    },
  };
}
