import {
  callId,
  type DeclaredTool,
  MOCK_MODEL,
  type PlannedUsage,
  type ProtocolRequest,
  promptInputTokens,
  type ReplyPlan,
  splitFragments,
} from '../reply-plan.ts';
import { chooseTool, openAiChoice } from '../tool-choice.ts';
import { isBearer, openAiErrorBody, SERVER_ERROR_MESSAGE } from './openai-errors.ts';
import { closingCount, type Protocol, readModel, readNumber, type StreamEvent } from './protocol.ts';

/** OpenAI Responses: POST /v1/responses. */

function usageOf(usage: PlannedUsage) {
  return {
    input_tokens: promptInputTokens(usage),
    input_tokens_details: { cached_tokens: usage.cacheRead },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: promptInputTokens(usage) + usage.outputTokens,
  };
}

function declaredTools(body: Record<string, unknown>): DeclaredTool[] {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  return tools
    .filter((candidate) => candidate?.type === 'function' && typeof candidate.name === 'string')
    .map((tool) => ({ name: tool.name as string, schema: tool.parameters }));
}

/** Final status: a reply cut by max_output_tokens is `incomplete`, as the real API reports it. */
function finalStatus(plan: ReplyPlan): 'completed' | 'incomplete' {
  return plan.stop === 'max' ? 'incomplete' : 'completed';
}

function textPart(text: string) {
  return { type: 'output_text', annotations: [], logprobs: [], text };
}

/** Whether the last input item is a call's output: the application answered a call. */
function afterToolResult(body: Record<string, unknown>): boolean {
  const input = Array.isArray(body.input) ? body.input : [];
  const type = (input.at(-1) as { type?: unknown } | undefined)?.type;
  return type === 'function_call_output' || type === 'custom_tool_call_output';
}

/** The answer's output items: a reasoning item, then the message or each function call. */
function outputItems(plan: ReplyPlan, request: ResponsesRequest, done: boolean) {
  const status = done ? finalStatus(plan) : 'in_progress';
  const items: Record<string, unknown>[] = [];
  if (plan.thinking !== undefined) {
    const reasoning: Record<string, unknown> = {
      id: `rs_${plan.id}`,
      type: 'reasoning',
      summary: done ? [{ type: 'summary_text', text: plan.thinking }] : [],
    };
    // Only asked for (`include`), as the API sends it; opaque, and only this mock reads it.
    if (request.encryptedReasoning) reasoning.encrypted_content = `mockenc_${plan.id}`;
    items.push(reasoning);
  }
  plan.toolCalls.forEach((call, index) => {
    items.push({
      id: `fc_${callId(plan, index)}`,
      type: 'function_call',
      status: done ? 'completed' : 'in_progress',
      arguments: done ? call.arguments : '',
      call_id: `call_${callId(plan, index)}`,
      name: call.name,
    });
  });
  if (plan.toolCalls.length === 0) {
    items.push({
      id: `msg_${plan.id}`,
      type: 'message',
      status,
      role: 'assistant',
      content: done ? [textPart(plan.text)] : [],
    });
  }
  return items;
}

/** The response object; snapshots taken mid-stream have no output yet and `usage: null`. */
function responseOf(plan: ReplyPlan, request: ResponsesRequest, done: boolean) {
  const status = done ? finalStatus(plan) : 'in_progress';
  const response: Record<string, unknown> = {
    id: `resp_${plan.id}`,
    object: 'response',
    created_at: plan.created,
    status,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: null,
    max_output_tokens: request.maxOutput ?? null,
    model: plan.model,
    output: done ? outputItems(plan, request, true) : [],
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: false,
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    truncation: 'disabled',
    metadata: {},
  };
  if (!done) response.usage = null;
  else if (plan.usage) response.usage = usageOf(plan.usage);
  return response;
}

/** The events between one item's `added` and `done`. */
function itemEvents(plan: ReplyPlan, item: Record<string, unknown>, outputIndex: number) {
  const at = { output_index: outputIndex, item_id: item.id };
  if (item.type === 'reasoning') {
    const text = plan.thinking ?? '';
    const part = { ...at, summary_index: 0 };
    return [
      { type: 'response.reasoning_summary_part.added', ...part, part: { type: 'summary_text', text: '' } },
      { type: 'response.reasoning_summary_text.delta', ...part, delta: text },
      { type: 'response.reasoning_summary_text.done', ...part, text },
      { type: 'response.reasoning_summary_part.done', ...part, part: { type: 'summary_text', text } },
    ];
  }
  if (item.type === 'function_call') {
    const args = String(item.arguments);
    return [
      ...splitFragments(args).map((delta) => ({
        type: 'response.function_call_arguments.delta',
        ...at,
        delta,
      })),
      { type: 'response.function_call_arguments.done', ...at, name: item.name, arguments: args },
    ];
  }
  const part = { ...at, content_index: 0 };
  return [
    { type: 'response.content_part.added', ...part, part: textPart('') },
    ...plan.pieces.map((delta) => ({ type: 'response.output_text.delta', ...part, delta, logprobs: [] })),
    { type: 'response.output_text.done', ...part, text: plan.text, logprobs: [] },
    { type: 'response.content_part.done', ...part, part: textPart(plan.text) },
  ];
}

interface ResponsesRequest extends ProtocolRequest {
  /** `include` asks for `reasoning.encrypted_content`. */
  encryptedReasoning?: boolean;
}

export const openAiResponsesProtocol: Protocol = {
  readRequest(body) {
    return {
      model: readModel(body, MOCK_MODEL),
      stream: body.stream === true,
      maxOutput: readNumber(body.max_output_tokens),
      includeUsage: true,
      tools: declaredTools(body),
      afterToolResult: afterToolResult(body),
      encryptedReasoning: Array.isArray(body.include) && body.include.includes('reasoning.encrypted_content'),
      ...chooseTool(declaredTools(body), openAiChoice(body.tool_choice)),
    } satisfies ResponsesRequest;
  },

  isAuthorized: isBearer,

  errorBody: openAiErrorBody,

  reply(plan, request) {
    return responseOf(plan, request, true);
  },

  stream(plan, request) {
    const final = responseOf(plan, request, true);
    const started = outputItems(plan, request, false);
    const finished = outputItems(plan, request, true);
    const payloads: Record<string, unknown>[] = [
      { type: 'response.created', response: responseOf(plan, request, false) },
      { type: 'response.in_progress', response: responseOf(plan, request, false) },
      ...started.flatMap((item, index) => [
        { type: 'response.output_item.added', output_index: index, item },
        ...itemEvents(plan, finished[index]!, index),
        { type: 'response.output_item.done', output_index: index, item: finished[index] },
      ]),
      { type: `response.${final.status}`, response: final },
    ];
    const events: StreamEvent[] = payloads.map((payload, index) => ({
      event: payload.type as string,
      data: { ...payload, sequence_number: index },
    }));
    // created, in_progress, item added, then (text or reasoning) a part added before the first delta.
    const firstIsCall = started[0]?.type === 'function_call';
    const closing = closingCount(events, (event) => event.event?.endsWith('.delta') === true);
    return { events, firstDelta: firstIsCall ? 3 : 4, closing };
  },

  streamError(sequence) {
    return {
      event: 'error',
      data: {
        type: 'error',
        code: 'server_error',
        message: SERVER_ERROR_MESSAGE,
        param: null,
        sequence_number: sequence,
      },
    };
  },
};
