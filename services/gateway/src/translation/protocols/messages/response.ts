import { count, invalidAnswer, isObject, type Json, parseArguments } from '../../fields.ts';
import type { IrAssistantPart, IrResponse, IrStopReason, IrUsage } from '../../ir.ts';
import type { CallerAnswerContext, UpstreamAnswerContext } from '../../protocol.ts';
import { sealProof } from '../../signatures.ts';

/** Messages answers both ways, and Messages usage <-> the representation's (exact). */

const STOP_FROM: Record<string, IrStopReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop_sequence',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  refusal: 'refusal',
  pause_turn: 'pause',
  model_context_window_exceeded: 'context_window',
};

const STOP_TO: Record<IrStopReason, string> = {
  stop: 'end_turn',
  stop_sequence: 'stop_sequence',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  content_filter: 'refusal',
  refusal: 'refusal',
  context_window: 'model_context_window_exceeded',
  pause: 'pause_turn',
};

export function messagesStopReason(value: unknown): IrStopReason {
  return (typeof value === 'string' && STOP_FROM[value]) || 'stop';
}

export function messagesStopReasonOf(reason: IrStopReason): string {
  return STOP_TO[reason];
}

/** Anthropic's input excludes cache reads and writes; the representation's includes them. */
export function decodeMessagesUsage(usage: unknown): IrUsage | null {
  if (!isObject(usage)) return null;
  const input = count(usage.input_tokens);
  const output = count(usage.output_tokens);
  if (input === null || output === null) return null;
  const cacheWrite = count(usage.cache_creation_input_tokens) ?? 0;
  const cacheRead = count(usage.cache_read_input_tokens) ?? 0;
  return { input: input + cacheWrite + cacheRead, output, cacheRead, cacheWrite, reasoning: null };
}

export function encodeMessagesUsage(usage: IrUsage): Json {
  return {
    input_tokens: usage.input - usage.cacheRead - usage.cacheWrite,
    cache_creation_input_tokens: usage.cacheWrite,
    cache_read_input_tokens: usage.cacheRead,
    output_tokens: usage.output,
  };
}

export function decodeMessagesResponse(body: Json, context: UpstreamAnswerContext): IrResponse {
  const usage = decodeMessagesUsage(body.usage);
  if (!Array.isArray(body.content) || usage === null) throw invalidAnswer();
  const content: IrAssistantPart[] = [];
  for (const block of body.content) {
    if (!isObject(block)) throw invalidAnswer();
    if (block.type === 'text' && typeof block.text === 'string')
      content.push({ type: 'text', text: block.text });
    else if (block.type === 'thinking' && typeof block.thinking === 'string') {
      content.push({
        type: 'reasoning',
        text: block.thinking,
        ...(typeof block.signature === 'string' && block.signature !== ''
          ? { proof: { origin: context.providerTag, kind: 'signature' as const, value: block.signature } }
          : {}),
      });
    } else if (block.type === 'redacted_thinking' && typeof block.data === 'string') {
      content.push({
        type: 'reasoning',
        text: '',
        proof: { origin: context.providerTag, kind: 'redacted', value: block.data },
      });
    } else if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
      content.push({
        type: 'tool_call',
        callId: block.id,
        name: block.name,
        arguments: JSON.stringify(block.input ?? {}),
      });
    }
  }
  return {
    id: typeof body.id === 'string' ? body.id : 'msg_unknown',
    content,
    stopReason: messagesStopReason(body.stop_reason),
    ...(typeof body.stop_sequence === 'string' ? { stopSequence: body.stop_sequence } : {}),
    usage,
  };
}

/** A reasoning part as the caller's thinking block: its proof sealed with its issuer's tag. */
export function thinkingBlock(part: Extract<IrAssistantPart, { type: 'reasoning' }>): Json {
  if (part.proof?.kind === 'redacted') return { type: 'redacted_thinking', data: sealProof(part.proof) };
  return { type: 'thinking', thinking: part.text, signature: part.proof ? sealProof(part.proof) : '' };
}

export function messageId(id: string): string {
  return id.startsWith('msg_') ? id : `msg_${id.replace(/^(chatcmpl-|resp_)/, '')}`;
}

export function encodeMessagesResponse(response: IrResponse, context: CallerAnswerContext): Json {
  const content = response.content.map((part): Json => {
    if (part.type === 'text') return { type: 'text', text: part.text };
    if (part.type === 'reasoning') return thinkingBlock(part);
    return {
      type: 'tool_use',
      id: part.callId,
      name: context.toolNames.caller(part.name).name,
      input: parseArguments(part.arguments),
    };
  });
  return {
    id: messageId(response.id),
    type: 'message',
    role: 'assistant',
    model: context.alias,
    content,
    stop_reason: messagesStopReasonOf(response.stopReason),
    stop_sequence: response.stopReason === 'stop_sequence' ? (response.stopSequence ?? null) : null,
    usage: encodeMessagesUsage(response.usage),
  };
}
