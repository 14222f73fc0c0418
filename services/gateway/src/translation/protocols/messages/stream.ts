import type { SseEvent } from '../../../upstream/sse.ts';
import { isObject, type Json, parseEventData } from '../../fields.ts';
import type { IrStopReason, IrStreamPart } from '../../ir.ts';
import type {
  CallerAnswerContext,
  StreamDecoder,
  StreamEncoder,
  UpstreamAnswerContext,
} from '../../protocol.ts';
import { sequencedEncoder } from '../../sequencer.ts';
import { sealProof } from '../../signatures.ts';
import { sseEvent } from '../../sse-text.ts';
import {
  decodeMessagesUsage,
  encodeMessagesUsage,
  messageId,
  messagesStopReason,
  messagesStopReasonOf,
} from './response.ts';

type BlockKind = 'text' | 'reasoning' | 'tool';

/**
 * Messages events -> parts. Blocks are named by their index; a delta for a block never started
 * opens one of the delta's kind (so a provider that skips content_block_start loses nothing), a
 * delta of another kind than its block is dropped. Usage: message_start's figures, overwritten by
 * whatever message_delta carries; `finish` at message_stop.
 */
export function createMessagesStreamDecoder(context: UpstreamAnswerContext): StreamDecoder {
  const open = new Map<number, BlockKind>();
  let usage: Json = {};
  let stopReason: IrStopReason = 'stop';
  let stopSequence: string | undefined;
  let finished = false;
  const id = (index: number) => `m${index}`;

  function start(index: number, kind: BlockKind, parts: IrStreamPart[], block?: Json): void {
    if (open.has(index)) parts.push({ type: 'block-end', id: id(index) });
    open.set(index, kind);
    if (kind === 'text') parts.push({ type: 'text-start', id: id(index) });
    else if (kind === 'reasoning') parts.push({ type: 'reasoning-start', id: id(index) });
    else
      parts.push({
        type: 'tool-call-start',
        id: id(index),
        callId: String(block?.id ?? ''),
        name: String(block?.name ?? ''),
      });
  }

  function onBlockStart(data: Json, parts: IrStreamPart[]): void {
    const index = Number(data.index);
    const block = isObject(data.content_block) ? data.content_block : {};
    if (block.type === 'text') {
      start(index, 'text', parts);
      if (typeof block.text === 'string' && block.text !== '')
        parts.push({ type: 'text-delta', id: id(index), delta: block.text });
    } else if (block.type === 'thinking') {
      start(index, 'reasoning', parts);
      if (typeof block.thinking === 'string' && block.thinking !== '')
        parts.push({ type: 'reasoning-delta', id: id(index), delta: block.thinking });
    } else if (block.type === 'redacted_thinking') {
      start(index, 'reasoning', parts);
      parts.push({
        type: 'reasoning-proof',
        id: id(index),
        proof: { origin: context.providerTag, kind: 'redacted', value: String(block.data ?? '') },
      });
    } else if (block.type === 'tool_use') {
      start(index, 'tool', parts, block);
      if (isObject(block.input) && Object.keys(block.input).length > 0)
        parts.push({ type: 'tool-call-delta', id: id(index), delta: JSON.stringify(block.input) });
    }
  }

  function onDelta(data: Json, parts: IrStreamPart[]): void {
    const index = Number(data.index);
    const delta = isObject(data.delta) ? data.delta : {};
    const wanted: BlockKind | null =
      delta.type === 'text_delta'
        ? 'text'
        : delta.type === 'thinking_delta' || delta.type === 'signature_delta'
          ? 'reasoning'
          : delta.type === 'input_json_delta'
            ? 'tool'
            : null;
    if (wanted === null) return;
    const kind = open.get(index);
    if (kind === undefined) {
      if (wanted === 'tool') return; // a tool call without its name cannot be started
      start(index, wanted, parts);
    } else if (kind !== wanted) {
      return;
    }
    if (delta.type === 'text_delta' && typeof delta.text === 'string')
      parts.push({ type: 'text-delta', id: id(index), delta: delta.text });
    else if (delta.type === 'thinking_delta' && typeof delta.thinking === 'string')
      parts.push({ type: 'reasoning-delta', id: id(index), delta: delta.thinking });
    else if (delta.type === 'signature_delta' && typeof delta.signature === 'string')
      parts.push({
        type: 'reasoning-proof',
        id: id(index),
        proof: { origin: context.providerTag, kind: 'signature', value: delta.signature },
      });
    else if (
      delta.type === 'input_json_delta' &&
      typeof delta.partial_json === 'string' &&
      delta.partial_json !== ''
    )
      parts.push({ type: 'tool-call-delta', id: id(index), delta: delta.partial_json });
  }

  return {
    push(event: SseEvent): IrStreamPart[] {
      if (finished) return [];
      const data = parseEventData(event.data);
      if (data === null) return [];
      const parts: IrStreamPart[] = [];
      switch (data.type) {
        case 'message_start': {
          const message = isObject(data.message) ? data.message : {};
          if (isObject(message.usage)) usage = { ...message.usage };
          parts.push({ type: 'start', id: String(message.id ?? 'msg') });
          break;
        }
        case 'content_block_start':
          onBlockStart(data, parts);
          break;
        case 'content_block_delta':
          onDelta(data, parts);
          break;
        case 'content_block_stop': {
          const index = Number(data.index);
          if (open.delete(index)) parts.push({ type: 'block-end', id: id(index) });
          break;
        }
        case 'message_delta': {
          const delta = isObject(data.delta) ? data.delta : {};
          if (delta.stop_reason != null) stopReason = messagesStopReason(delta.stop_reason);
          if (typeof delta.stop_sequence === 'string') stopSequence = delta.stop_sequence;
          if (isObject(data.usage)) {
            for (const [key, value] of Object.entries(data.usage)) if (value !== null) usage[key] = value;
          }
          break;
        }
        case 'message_stop':
          finished = true;
          for (const index of open.keys()) parts.push({ type: 'block-end', id: id(index) });
          open.clear();
          parts.push({
            type: 'finish',
            reason: stopReason,
            ...(stopSequence ? { stopSequence } : {}),
            usage: decodeMessagesUsage(usage),
          });
          break;
      }
      return parts;
    },
  };
}

/** Parts -> Messages events for the caller, one block at a time, usage in message_delta. */
export function createMessagesStreamEncoder(context: CallerAnswerContext): StreamEncoder {
  let count = 0;
  let index = -1;
  let started = false;
  /** A reasoning block whose start waits for its first content (it may turn out redacted). */
  let pendingReasoning: string | null = null;
  const emit = (name: string, data: Json) => {
    count += 1;
    return sseEvent(name, { type: name, ...data });
  };
  const blockStart = (block: Json) => {
    index += 1;
    return emit('content_block_start', { index, content_block: block });
  };
  const ensureStarted = (messageIdText = 'msg_translated') => {
    if (started) return '';
    started = true;
    const usage = {
      input_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: 0,
    };
    const message = {
      id: messageId(messageIdText),
      type: 'message',
      role: 'assistant',
      model: context.alias,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage,
    };
    return emit('message_start', { message });
  };
  const openReasoning = () => {
    if (pendingReasoning === null) return '';
    pendingReasoning = null;
    return blockStart({ type: 'thinking', thinking: '', signature: '' });
  };

  function encodeOne(part: IrStreamPart): string {
    switch (part.type) {
      case 'start':
        return ensureStarted(part.id);
      case 'text-start':
        return ensureStarted() + blockStart({ type: 'text', text: '' });
      case 'text-delta':
        return emit('content_block_delta', { index, delta: { type: 'text_delta', text: part.delta } });
      case 'reasoning-start':
        pendingReasoning = part.id;
        return ensureStarted();
      case 'reasoning-delta':
        return (
          openReasoning() +
          emit('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: part.delta } })
        );
      case 'reasoning-proof':
        if (part.proof.kind === 'redacted' && pendingReasoning !== null) {
          pendingReasoning = null;
          return blockStart({ type: 'redacted_thinking', data: sealProof(part.proof) });
        }
        return (
          openReasoning() +
          emit('content_block_delta', {
            index,
            delta: { type: 'signature_delta', signature: sealProof(part.proof) },
          })
        );
      case 'tool-call-start':
        return (
          ensureStarted() +
          blockStart({
            type: 'tool_use',
            id: part.callId,
            name: context.toolNames.caller(part.name).name,
            input: {},
          })
        );
      case 'tool-call-delta':
        return emit('content_block_delta', {
          index,
          delta: { type: 'input_json_delta', partial_json: part.delta },
        });
      case 'block-end':
        return openReasoning() + emit('content_block_stop', { index });
      case 'finish': {
        const usage = part.usage ? encodeMessagesUsage(part.usage) : { output_tokens: 0 };
        const stopSequence = part.reason === 'stop_sequence' ? (part.stopSequence ?? null) : null;
        return (
          ensureStarted() +
          emit('message_delta', {
            delta: { stop_reason: messagesStopReasonOf(part.reason), stop_sequence: stopSequence },
            usage,
          }) +
          emit('message_stop', {})
        );
      }
    }
  }

  return sequencedEncoder(encodeOne, () => count);
}
