import { count, invalidAnswer, isObject, type Json, parseArguments } from '../../fields.ts';
import type { IrAssistantPart, IrResponse, IrStopReason, IrUsage } from '../../ir.ts';
import type { CallerAnswerContext, UpstreamAnswerContext } from '../../protocol.ts';
import { sealProof } from '../../signatures.ts';

/** Responses answers both ways, and Responses usage <-> the representation's (exact). */

/** Responses' input_tokens include cached tokens; reasoning tokens are inside output_tokens. */
export function decodeResponsesUsage(usage: unknown): IrUsage | null {
  if (!isObject(usage)) return null;
  const input = count(usage.input_tokens);
  const output = count(usage.output_tokens);
  if (input === null || output === null) return null;
  const inputDetails = isObject(usage.input_tokens_details) ? usage.input_tokens_details : {};
  const outputDetails = isObject(usage.output_tokens_details) ? usage.output_tokens_details : {};
  return {
    input,
    output,
    cacheRead: count(inputDetails.cached_tokens) ?? 0,
    cacheWrite: 0,
    reasoning: count(outputDetails.reasoning_tokens),
  };
}

export function encodeResponsesUsage(usage: IrUsage): Json {
  return {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: usage.cacheRead },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
    total_tokens: usage.input + usage.output,
  };
}

/** How a response ended: incomplete ones say why; complete ones with calls wait for results. */
export function responsesStopReason(response: Json, sawToolCall: boolean): IrStopReason {
  if (response.status === 'incomplete') {
    const reason = isObject(response.incomplete_details) ? response.incomplete_details.reason : undefined;
    return reason === 'content_filter' ? 'content_filter' : 'length';
  }
  return sawToolCall ? 'tool_calls' : 'stop';
}

export function reasoningSummaryText(summary: unknown): string {
  return Array.isArray(summary)
    ? summary.map((part) => (isObject(part) && typeof part.text === 'string' ? part.text : '')).join('\n\n')
    : '';
}

export function decodeResponsesOutputItem(item: unknown, context: UpstreamAnswerContext): IrAssistantPart[] {
  if (!isObject(item)) throw invalidAnswer();
  switch (item.type) {
    case 'message':
      return (Array.isArray(item.content) ? item.content : []).flatMap((part): IrAssistantPart[] => {
        if (!isObject(part)) return [];
        if (part.type === 'output_text' && typeof part.text === 'string')
          return [{ type: 'text', text: part.text }];
        if (part.type === 'refusal' && typeof part.refusal === 'string')
          return [{ type: 'text', text: part.refusal }];
        return [];
      });
    case 'reasoning':
      return [
        {
          type: 'reasoning',
          text: reasoningSummaryText(item.summary),
          ...(typeof item.encrypted_content === 'string'
            ? {
                proof: {
                  origin: context.providerTag,
                  kind: 'encrypted' as const,
                  value: item.encrypted_content,
                  ...(typeof item.id === 'string' ? { itemId: item.id } : {}),
                },
              }
            : {}),
        },
      ];
    case 'function_call':
      if (typeof item.call_id !== 'string' || typeof item.name !== 'string') throw invalidAnswer();
      return [
        {
          type: 'tool_call',
          callId: item.call_id,
          name: item.name,
          arguments: typeof item.arguments === 'string' ? item.arguments : '{}',
        },
      ];
    default:
      return [];
  }
}

export function decodeResponsesResponse(body: Json, context: UpstreamAnswerContext): IrResponse {
  const usage = decodeResponsesUsage(body.usage);
  if (!Array.isArray(body.output) || usage === null) throw invalidAnswer();
  const content = body.output.flatMap((item) => decodeResponsesOutputItem(item, context));
  return {
    id: typeof body.id === 'string' ? body.id : 'resp_unknown',
    content,
    stopReason: responsesStopReason(
      body,
      content.some((part) => part.type === 'tool_call'),
    ),
    usage,
    ...(typeof body.created_at === 'number' ? { created: body.created_at } : {}),
  };
}

export function responseId(id: string): string {
  return id.startsWith('resp_') ? id : `resp_${id.replace(/^(msg_|chatcmpl-)/, '')}`;
}

/** One caller-side output item for a part; custom tools answer as custom_tool_call. */
export function outputItem(part: IrAssistantPart, itemId: string, context: CallerAnswerContext): Json {
  if (part.type === 'text') {
    return {
      id: itemId,
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: part.text, annotations: [], logprobs: [] }],
    };
  }
  if (part.type === 'reasoning') {
    return {
      id: itemId,
      type: 'reasoning',
      summary: part.text === '' ? [] : [{ type: 'summary_text', text: part.text }],
      ...(part.proof ? { encrypted_content: sealProof(part.proof) } : {}),
    };
  }
  const tool = context.toolNames.caller(part.name);
  const namespace = tool.namespace ? { namespace: tool.namespace } : {};
  if (tool.custom) {
    const input = parseArguments(part.arguments).input;
    return {
      id: itemId,
      type: 'custom_tool_call',
      status: 'completed',
      call_id: part.callId,
      name: tool.name,
      ...namespace,
      input: typeof input === 'string' ? input : part.arguments,
    };
  }
  return {
    id: itemId,
    type: 'function_call',
    status: 'completed',
    call_id: part.callId,
    name: tool.name,
    ...namespace,
    arguments: part.arguments,
  };
}

const ITEM_PREFIX: Record<IrAssistantPart['type'], string> = {
  text: 'msg',
  reasoning: 'rs',
  tool_call: 'fc',
};

export function itemIdFor(base: string, index: number, type: IrAssistantPart['type']): string {
  return `${ITEM_PREFIX[type]}_${base.replace(/^resp_/, '')}_${index}`;
}

/** The response object as the caller's protocol shows it, with what the request asked echoed. */
export function responseObject(
  id: string,
  status: 'in_progress' | 'completed' | 'incomplete',
  output: Json[],
  usage: IrUsage | null,
  stopReason: IrStopReason | null,
  context: CallerAnswerContext,
): Json {
  const request = context.request;
  const incomplete =
    status === 'incomplete'
      ? { reason: stopReason === 'content_filter' ? 'content_filter' : 'max_output_tokens' }
      : null;
  return {
    id: responseId(id),
    object: 'response',
    created_at: context.created,
    status,
    error: null,
    incomplete_details: incomplete,
    instructions: null,
    max_output_tokens: request.maxOutputTokens,
    model: context.alias,
    output,
    parallel_tool_calls: request.parallelToolCalls?.value ?? true,
    previous_response_id: null,
    reasoning: {
      effort: request.reasoning?.effort ?? null,
      summary: request.reasoning?.summary ? 'auto' : null,
    },
    store: false,
    temperature: request.temperature ?? 1,
    text: { format: { type: 'text' } },
    tool_choice:
      request.toolChoice?.type === 'tool'
        ? { type: 'function', name: request.toolChoice.name }
        : (request.toolChoice?.type ?? 'auto'),
    tools: [],
    top_p: request.topP ?? 1,
    truncation: 'disabled',
    usage: usage ? encodeResponsesUsage(usage) : null,
    metadata: {},
  };
}

export function statusFor(reason: IrStopReason): 'completed' | 'incomplete' {
  return reason === 'length' || reason === 'context_window' || reason === 'content_filter'
    ? 'incomplete'
    : 'completed';
}

export function encodeResponsesResponse(response: IrResponse, context: CallerAnswerContext): Json {
  // Consecutive text parts are one message item.
  const parts: IrAssistantPart[] = [];
  for (const part of response.content) {
    const last = parts.at(-1);
    if (part.type === 'text' && last?.type === 'text')
      parts[parts.length - 1] = { type: 'text', text: last.text + part.text };
    else parts.push(part);
  }
  const output = parts.map((part, index) =>
    outputItem(part, itemIdFor(responseId(response.id), index, part.type), context),
  );
  return responseObject(
    response.id,
    statusFor(response.stopReason),
    output,
    response.usage,
    response.stopReason,
    context,
  );
}
