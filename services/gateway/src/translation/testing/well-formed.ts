import type { WireProtocol } from '../protocol.ts';
import { type ParsedEvent, parseSse } from './streams.ts';

/** What a caller's stream said, once checked to be well formed. */
export interface StreamSummary {
  text: string;
  reasoning: string;
  /** Tool calls in order of their start: name and complete arguments. */
  toolCalls: Array<{ id: string; name: string; arguments: string }>;
  usage: Record<string, unknown> | null;
  stop: string;
}

function fail(message: string): never {
  throw new Error(`malformed stream: ${message}`);
}

/**
 * Checks a stream as its protocol's official client reads it: every block opened before a delta,
 * closed once, deltas of the open block's kind only, one terminal event (last), usage at most
 * once. Returns what it said. Throws on the first violation.
 */
export function checkStream(protocol: WireProtocol, text: string): StreamSummary {
  const events = parseSse(text);
  if (protocol === 'messages') return checkMessages(events);
  if (protocol === 'chat_completions') return checkChat(events);
  return checkResponses(events);
}

function checkMessages(events: ParsedEvent[]): StreamSummary {
  const summary: StreamSummary = { text: '', reasoning: '', toolCalls: [], usage: null, stop: '' };
  if (events[0]?.event !== 'message_start') fail('first event is not message_start');
  let open: { index: number; type: string } | null = null;
  let nextIndex = 0;
  let ended = false;
  for (const { event, data } of events.slice(1)) {
    if (ended) fail('event after message_stop');
    if (data === '[DONE]' || data.type !== event) fail(`event name ${event} does not match its type`);
    const index = data.index as number;
    switch (event) {
      case 'content_block_start': {
        if (open) fail('a block starts while another is open');
        if (index !== nextIndex) fail(`block index ${index}, expected ${nextIndex}`);
        const block = data.content_block as Record<string, string>;
        open = { index, type: block.type! };
        nextIndex += 1;
        if (block.type === 'tool_use')
          summary.toolCalls.push({ id: block.id!, name: block.name!, arguments: '' });
        break;
      }
      case 'content_block_delta': {
        if (!open || open.index !== index) fail('delta for a block that is not open');
        const delta = data.delta as Record<string, string>;
        const expected: Record<string, string> = {
          text_delta: 'text',
          thinking_delta: 'thinking',
          signature_delta: 'thinking',
          input_json_delta: 'tool_use',
        };
        if (expected[delta.type!] !== open.type) fail(`${delta.type} in a ${open.type} block`);
        if (delta.type === 'text_delta') summary.text += delta.text;
        if (delta.type === 'thinking_delta') summary.reasoning += delta.thinking;
        if (delta.type === 'input_json_delta') summary.toolCalls.at(-1)!.arguments += delta.partial_json;
        break;
      }
      case 'content_block_stop':
        if (!open || open.index !== index) fail('stop for a block that is not open');
        open = null;
        break;
      case 'message_delta':
        if (summary.usage) fail('usage twice');
        if (open) fail('message_delta with a block open');
        summary.usage = data.usage as Record<string, unknown>;
        summary.stop = (data.delta as Record<string, string>).stop_reason!;
        break;
      case 'message_stop':
        if (!summary.usage) fail('message_stop without message_delta');
        ended = true;
        break;
      case 'ping':
        break;
      default:
        fail(`unexpected event ${event}`);
    }
  }
  if (!ended) fail('no message_stop');
  return summary;
}

function checkChat(events: ParsedEvent[]): StreamSummary {
  const summary: StreamSummary = { text: '', reasoning: '', toolCalls: [], usage: null, stop: '' };
  if (events.at(-1)?.data !== '[DONE]') fail('does not end with [DONE]');
  if (events.filter((event) => event.data === '[DONE]').length !== 1) fail('[DONE] twice');
  const byIndex = new Map<number, StreamSummary['toolCalls'][number]>();
  for (const { data } of events.slice(0, -1)) {
    if (data === '[DONE]') continue;
    if (data.object !== 'chat.completion.chunk') fail('not a chunk');
    const choices = data.choices as Array<{ delta: Record<string, unknown>; finish_reason: string | null }>;
    if (choices.length === 0) {
      if (summary.usage) fail('usage twice');
      if (!summary.stop) fail('usage before the finish');
      summary.usage = data.usage as Record<string, unknown>;
      continue;
    }
    const choice = choices[0]!;
    if (summary.stop) fail('content after the finish');
    if (typeof choice.delta.content === 'string') summary.text += choice.delta.content;
    if (typeof choice.delta.reasoning_content === 'string')
      summary.reasoning += choice.delta.reasoning_content;
    for (const call of (choice.delta.tool_calls as Array<Record<string, unknown>> | undefined) ?? []) {
      const fn = call.function as Record<string, string>;
      const known = byIndex.get(call.index as number);
      if (!known) {
        if (typeof call.id !== 'string' || typeof fn.name !== 'string')
          fail('first delta of a call without id and name');
        const entry = { id: call.id as string, name: fn.name!, arguments: fn.arguments ?? '' };
        byIndex.set(call.index as number, entry);
        summary.toolCalls.push(entry);
      } else {
        known.arguments += fn.arguments ?? '';
      }
    }
    if (choice.finish_reason) summary.stop = choice.finish_reason;
  }
  if (!summary.stop) fail('no finish_reason');
  return summary;
}

function checkResponses(events: ParsedEvent[]): StreamSummary {
  const summary: StreamSummary = { text: '', reasoning: '', toolCalls: [], usage: null, stop: '' };
  const open = new Map<string, string>();
  const done = new Set<string>();
  /** Content parts added so far, by item: a text delta needs its part added first. */
  const parts = new Map<string, number>();
  let terminal = 0;
  events.forEach(({ event, data }, position) => {
    if (data === '[DONE]') fail('[DONE] in a responses stream');
    if (data.type !== event) fail(`event name ${event} does not match its type`);
    if (data.sequence_number !== position)
      fail(`sequence_number ${String(data.sequence_number)} at ${position}`);
    if (terminal > 0) fail('event after the terminal event');
    const itemId = data.item_id as string | undefined;
    if (itemId !== undefined && !open.has(itemId)) fail(`${event} for an item not open`);
    switch (event) {
      case 'response.output_item.added': {
        const item = data.item as Record<string, string>;
        if (open.has(item.id!) || done.has(item.id!)) fail('item added twice');
        if (item.type === 'function_call' || item.type === 'custom_tool_call') {
          if (item.id === item.call_id) fail('item id equals call id');
          summary.toolCalls.push({ id: item.call_id!, name: item.name!, arguments: '' });
        }
        // The API announces a message without content; each part comes with content_part.added
        // (the openai client's stream helper fails on a delta for a part it was not given).
        if (item.type === 'message' && (data.item as { content?: unknown[] }).content?.length !== 0)
          fail('message item announced with content');
        open.set(item.id!, item.type!);
        parts.set(item.id!, 0);
        break;
      }
      case 'response.content_part.added': {
        const count = parts.get(itemId!) ?? 0;
        if (data.content_index !== count)
          fail(`content part ${String(data.content_index)} added out of order`);
        parts.set(itemId!, count + 1);
        break;
      }
      case 'response.output_item.done': {
        const item = data.item as Record<string, string>;
        if (!open.has(item.id!)) fail('done for an item not open');
        open.delete(item.id!);
        done.add(item.id!);
        if (item.type === 'function_call') summary.toolCalls.at(-1)!.arguments = item.arguments!;
        if (item.type === 'custom_tool_call')
          summary.toolCalls.at(-1)!.arguments = JSON.stringify({ input: item.input });
        break;
      }
      case 'response.output_text.delta':
        if ((data.content_index as number) >= (parts.get(itemId!) ?? 0))
          fail('text delta for a part not added');
        summary.text += data.delta as string;
        break;
      case 'response.reasoning_summary_text.delta':
        summary.reasoning += data.delta as string;
        break;
      case 'response.completed':
      case 'response.incomplete': {
        terminal += 1;
        if (open.size > 0) fail('terminal event with items open');
        const response = data.response as Record<string, unknown>;
        summary.usage = response.usage as Record<string, unknown>;
        summary.stop = response.status as string;
        break;
      }
    }
  });
  if (terminal !== 1) fail('no terminal event');
  return summary;
}
