import type { Json } from '../../fields.ts';
import type { IrAssistantPart, IrStreamPart } from '../../ir.ts';
import type { CallerAnswerContext, StreamEncoder } from '../../protocol.ts';
import { sequencedEncoder } from '../../sequencer.ts';
import { sseEvent } from '../../sse-text.ts';
import { itemIdFor, outputItem, responseId, responseObject, statusFor } from './response.ts';

interface EncodedItem {
  itemId: string;
  outputIndex: number;
  part: IrAssistantPart;
  custom: boolean;
  summaryOpened: boolean;
}

/**
 * Parts -> Responses events for the caller: every event has its `type` and an increasing
 * `sequence_number`; item ids (`msg_`, `rs_`, `fc_`) are never call ids; items come whole, one
 * after another. A custom tool's input is sent once its arguments are complete.
 */
export function createResponsesStreamEncoder(context: CallerAnswerContext): StreamEncoder {
  let sequence = 0;
  let id = 'resp_translated';
  let started = false;
  const items = new Map<string, EncodedItem>();
  const output: Json[] = [];
  const emit = (type: string, data: Json) => sseEvent(type, { type, sequence_number: sequence++, ...data });
  const ensureStarted = () => {
    if (started) return '';
    started = true;
    const response = responseObject(id, 'in_progress', [], null, null, context);
    return emit('response.created', { response }) + emit('response.in_progress', { response });
  };
  const startItem = (blockId: string, part: IrAssistantPart, custom = false): string => {
    const outputIndex = output.length + items.size;
    const itemId = itemIdFor(responseId(id), outputIndex, part.type);
    items.set(blockId, { itemId, outputIndex, part, custom, summaryOpened: false });
    const shell = outputItem(part, itemId, context);
    // As the API announces items: a message without content yet (its part follows), reasoning
    // without its proof (it comes with the finished item).
    const inProgress =
      part.type === 'reasoning'
        ? { ...shell, encrypted_content: undefined }
        : part.type === 'text'
          ? { ...shell, status: 'in_progress', content: [] }
          : { ...shell, status: 'in_progress' };
    let text =
      ensureStarted() + emit('response.output_item.added', { output_index: outputIndex, item: inProgress });
    if (part.type === 'text') {
      text += emit('response.content_part.added', {
        item_id: itemId,
        output_index: outputIndex,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      });
    }
    return text;
  };

  function endItem(item: EncodedItem): string {
    const ref = { item_id: item.itemId, output_index: item.outputIndex };
    const part = item.part;
    const final = outputItem(part, item.itemId, context);
    let text = '';
    if (part.type === 'text') {
      text += emit('response.output_text.done', { ...ref, content_index: 0, text: part.text, logprobs: [] });
      text += emit('response.content_part.done', {
        ...ref,
        content_index: 0,
        part: { type: 'output_text', text: part.text, annotations: [], logprobs: [] },
      });
    } else if (part.type === 'reasoning' && item.summaryOpened) {
      const summaryPart = { type: 'summary_text', text: part.text };
      text += emit('response.reasoning_summary_text.done', { ...ref, summary_index: 0, text: part.text });
      text += emit('response.reasoning_summary_part.done', { ...ref, summary_index: 0, part: summaryPart });
    } else if (part.type === 'tool_call' && item.custom) {
      const input = String(final.input ?? '');
      text += emit('response.custom_tool_call_input.delta', { ...ref, delta: input });
      text += emit('response.custom_tool_call_input.done', { ...ref, input });
    } else if (part.type === 'tool_call') {
      text += emit('response.function_call_arguments.done', { ...ref, arguments: part.arguments });
    }
    output.push(final);
    return text + emit('response.output_item.done', { output_index: item.outputIndex, item: final });
  }

  function encodeOne(part: IrStreamPart): string {
    switch (part.type) {
      case 'start':
        id = responseId(part.id);
        return ensureStarted();
      case 'text-start':
        return startItem(part.id, { type: 'text', text: '' });
      case 'reasoning-start':
        return startItem(part.id, { type: 'reasoning', text: '' });
      case 'tool-call-start': {
        const custom = context.toolNames.caller(part.name).custom;
        return startItem(
          part.id,
          { type: 'tool_call', callId: part.callId, name: part.name, arguments: '' },
          custom,
        );
      }
      case 'text-delta': {
        const item = items.get(part.id);
        if (item?.part.type !== 'text') return '';
        item.part.text += part.delta;
        return emit('response.output_text.delta', {
          item_id: item.itemId,
          output_index: item.outputIndex,
          content_index: 0,
          delta: part.delta,
          logprobs: [],
        });
      }
      case 'reasoning-delta': {
        const item = items.get(part.id);
        if (item?.part.type !== 'reasoning') return '';
        item.part.text += part.delta;
        const ref = { item_id: item.itemId, output_index: item.outputIndex, summary_index: 0 };
        let text = '';
        if (!item.summaryOpened) {
          item.summaryOpened = true;
          text += emit('response.reasoning_summary_part.added', {
            ...ref,
            part: { type: 'summary_text', text: '' },
          });
        }
        return text + emit('response.reasoning_summary_text.delta', { ...ref, delta: part.delta });
      }
      case 'reasoning-proof': {
        const item = items.get(part.id);
        if (item?.part.type === 'reasoning') item.part.proof = part.proof;
        return '';
      }
      case 'tool-call-delta': {
        const item = items.get(part.id);
        if (item?.part.type !== 'tool_call') return '';
        item.part.arguments += part.delta;
        if (item.custom) return '';
        return emit('response.function_call_arguments.delta', {
          item_id: item.itemId,
          output_index: item.outputIndex,
          delta: part.delta,
        });
      }
      case 'block-end': {
        const item = items.get(part.id);
        if (!item) return '';
        items.delete(part.id);
        return endItem(item);
      }
      case 'finish': {
        const status = statusFor(part.reason);
        const response = responseObject(id, status, output, part.usage, part.reason, context);
        return ensureStarted() + emit(`response.${status}`, { response });
      }
    }
  }

  return sequencedEncoder(encodeOne, () => sequence);
}
