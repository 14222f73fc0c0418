import { count, invalidAnswer, isObject, type Json } from '../../fields.ts';
import type { IrAssistantPart, IrResponse, IrStopReason, IrUsage } from '../../ir.ts';
import type { CallerAnswerContext, UpstreamAnswerContext } from '../../protocol.ts';

/** Chat completions answers both ways, and chat usage <-> the representation's (exact). */

const FINISH_FROM: Record<string, IrStopReason> = {
  stop: 'stop',
  length: 'length',
  tool_calls: 'tool_calls',
  function_call: 'tool_calls',
  content_filter: 'content_filter',
};

const FINISH_TO: Record<IrStopReason, string> = {
  stop: 'stop',
  stop_sequence: 'stop',
  length: 'length',
  context_window: 'length',
  tool_calls: 'tool_calls',
  content_filter: 'content_filter',
  refusal: 'content_filter',
  pause: 'stop',
};

export function chatFinishReason(value: unknown): IrStopReason {
  return (typeof value === 'string' && FINISH_FROM[value]) || 'stop';
}

export function chatFinishReasonOf(reason: IrStopReason): string {
  return FINISH_TO[reason];
}

/** OpenAI's prompt_tokens already include cached tokens; reasoning tokens are inside completion. */
export function decodeChatUsage(usage: unknown): IrUsage | null {
  if (!isObject(usage)) return null;
  const input = count(usage.prompt_tokens);
  const output = count(usage.completion_tokens);
  if (input === null || output === null) return null;
  const prompt = isObject(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
  const completion = isObject(usage.completion_tokens_details) ? usage.completion_tokens_details : {};
  return {
    input,
    output,
    cacheRead: count(prompt.cached_tokens) ?? 0,
    cacheWrite: 0,
    reasoning: count(completion.reasoning_tokens),
  };
}

export function encodeChatUsage(usage: IrUsage): Json {
  const encoded: Json = {
    prompt_tokens: usage.input,
    completion_tokens: usage.output,
    total_tokens: usage.input + usage.output,
    prompt_tokens_details: { cached_tokens: usage.cacheRead },
  };
  if (usage.reasoning !== null) encoded.completion_tokens_details = { reasoning_tokens: usage.reasoning };
  return encoded;
}

/** Reasoning text some OpenAI-compatible servers return (DeepSeek, vLLM: reasoning_content). */
export function chatReasoningText(message: Json): string | null {
  const value = message.reasoning_content ?? message.reasoning;
  return typeof value === 'string' && value !== '' ? value : null;
}

export function decodeChatResponse(body: Json, _context: UpstreamAnswerContext): IrResponse {
  const usage = decodeChatUsage(body.usage);
  const choice = Array.isArray(body.choices) ? body.choices[0] : undefined;
  if (!isObject(choice) || !isObject(choice.message) || usage === null) throw invalidAnswer();
  const message = choice.message;
  const content: IrAssistantPart[] = [];
  const reasoning = chatReasoningText(message);
  if (reasoning !== null) content.push({ type: 'reasoning', text: reasoning });
  if (typeof message.content === 'string' && message.content !== '')
    content.push({ type: 'text', text: message.content });
  if (typeof message.refusal === 'string' && message.refusal !== '')
    content.push({ type: 'text', text: message.refusal });
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      if (!isObject(call) || !isObject(call.function) || typeof call.function.name !== 'string')
        throw invalidAnswer();
      content.push({
        type: 'tool_call',
        callId: typeof call.id === 'string' ? call.id : `call_${content.length}`,
        name: call.function.name,
        arguments: typeof call.function.arguments === 'string' ? call.function.arguments : '{}',
      });
    }
  }
  const refused = typeof message.refusal === 'string' && message.refusal !== '';
  return {
    id: typeof body.id === 'string' ? body.id : 'chatcmpl-unknown',
    content,
    stopReason: refused ? 'refusal' : chatFinishReason(choice.finish_reason),
    usage,
    ...(typeof body.created === 'number' ? { created: body.created } : {}),
  };
}

export function completionId(id: string): string {
  return id.startsWith('chatcmpl-') ? id : `chatcmpl-${id.replace(/^(msg_|resp_)/, '')}`;
}

export function encodeChatResponse(response: IrResponse, context: CallerAnswerContext): Json {
  const text = response.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
  const reasoning = response.content
    .flatMap((part) => (part.type === 'reasoning' ? [part.text] : []))
    .join('');
  const calls = response.content.flatMap((part) =>
    part.type === 'tool_call'
      ? [
          {
            id: part.callId,
            type: 'function',
            function: { name: context.toolNames.caller(part.name).name, arguments: part.arguments },
          },
        ]
      : [],
  );
  const message: Json = {
    role: 'assistant',
    content: text === '' && calls.length > 0 ? null : text,
    refusal: null,
    annotations: [],
  };
  if (reasoning !== '') message.reasoning_content = reasoning;
  if (calls.length > 0) message.tool_calls = calls;
  return {
    id: completionId(response.id),
    object: 'chat.completion',
    created: context.created,
    model: context.alias,
    choices: [{ index: 0, message, logprobs: null, finish_reason: chatFinishReasonOf(response.stopReason) }],
    usage: encodeChatUsage(response.usage),
  };
}
