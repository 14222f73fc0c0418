import {
  type DeclaredTool,
  MOCK_MODEL,
  type PlannedUsage,
  type ReplyPlan,
  splitFragments,
} from '../reply-plan.ts';
import { chooseTool, openAiChoice } from '../tool-choice.ts';
import { isBearer, openAiErrorBody, SERVER_ERROR_MESSAGE } from './openai-errors.ts';
import { type Protocol, readModel, readNumber, type StreamEvent } from './protocol.ts';

/** OpenAI Responses: POST /v1/responses. */

function usageOf(usage: PlannedUsage) {
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: usage.cacheRead },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: usage.inputTokens + usage.outputTokens,
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

function outputItem(plan: ReplyPlan, done: boolean) {
  const status = done ? finalStatus(plan) : 'in_progress';
  if (plan.toolCall) {
    return {
      id: `fc_${plan.id}`,
      type: 'function_call',
      status: done ? 'completed' : 'in_progress',
      arguments: done ? plan.toolCall.arguments : '',
      call_id: `call_${plan.id}`,
      name: plan.toolCall.name,
    };
  }
  return {
    id: `msg_${plan.id}`,
    type: 'message',
    status,
    role: 'assistant',
    content: done ? [textPart(plan.text)] : [],
  };
}

/** The response object; snapshots taken mid-stream have no output yet and `usage: null`. */
function responseOf(plan: ReplyPlan, request: { maxOutput?: number }, done: boolean) {
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
    output: done ? [outputItem(plan, true)] : [],
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

function itemEvents(plan: ReplyPlan): Record<string, unknown>[] {
  const item = { output_index: 0, item_id: outputItem(plan, false).id };
  if (plan.toolCall) {
    const { arguments: args, name } = plan.toolCall;
    return [
      ...splitFragments(args).map((delta) => ({
        type: 'response.function_call_arguments.delta',
        ...item,
        delta,
      })),
      { type: 'response.function_call_arguments.done', ...item, name, arguments: args },
    ];
  }
  const part = { ...item, content_index: 0 };
  return [
    { type: 'response.content_part.added', ...part, part: textPart('') },
    ...plan.pieces.map((delta) => ({ type: 'response.output_text.delta', ...part, delta, logprobs: [] })),
    { type: 'response.output_text.done', ...part, text: plan.text, logprobs: [] },
    { type: 'response.content_part.done', ...part, part: textPart(plan.text) },
  ];
}

export const openAiResponsesProtocol: Protocol = {
  readRequest(body) {
    return {
      model: readModel(body, MOCK_MODEL),
      stream: body.stream === true,
      maxOutput: readNumber(body.max_output_tokens),
      includeUsage: true,
      ...chooseTool(declaredTools(body), openAiChoice(body.tool_choice)),
    };
  },

  isAuthorized: isBearer,

  errorBody: openAiErrorBody,

  reply(plan, request) {
    return responseOf(plan, request, true);
  },

  stream(plan, request) {
    const final = responseOf(plan, request, true);
    const payloads: Record<string, unknown>[] = [
      { type: 'response.created', response: responseOf(plan, request, false) },
      { type: 'response.in_progress', response: responseOf(plan, request, false) },
      { type: 'response.output_item.added', output_index: 0, item: outputItem(plan, false) },
      ...itemEvents(plan),
      { type: 'response.output_item.done', output_index: 0, item: outputItem(plan, true) },
      { type: `response.${final.status}`, response: final },
    ];
    const events: StreamEvent[] = payloads.map((payload, index) => ({
      event: payload.type as string,
      data: { ...payload, sequence_number: index },
    }));
    // created, in_progress, item added, then a text part added before the first text delta.
    return { events, firstDelta: plan.toolCall ? 3 : 4 };
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
