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

/** OpenAI Chat Completions: POST /v1/chat/completions. */

const FINISH_REASONS = { end: 'stop', max: 'length', tool: 'tool_calls' } as const;

function usageOf(usage: PlannedUsage) {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cacheRead, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: usage.reasoningTokens,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

function declaredTools(body: Record<string, unknown>): DeclaredTool[] {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  return tools
    .filter((candidate) => candidate?.type === 'function' && typeof candidate.function?.name === 'string')
    .map((tool) => ({ name: tool.function.name as string, schema: tool.function.parameters }));
}

function toolCallId(plan: ReplyPlan): string {
  return `call_${plan.id}`;
}

function messageOf(plan: ReplyPlan) {
  if (!plan.toolCall) return { role: 'assistant', content: plan.text, refusal: null, annotations: [] };
  const { name, arguments: args } = plan.toolCall;
  return {
    role: 'assistant',
    content: null,
    refusal: null,
    annotations: [],
    tool_calls: [{ id: toolCallId(plan), type: 'function', function: { name, arguments: args } }],
  };
}

/** Deltas after the role chunk: text pieces, or the tool call's head then argument fragments. */
function deltasOf(plan: ReplyPlan): Record<string, unknown>[] {
  if (!plan.toolCall) return plan.pieces.map((content) => ({ content }));
  const { name, arguments: args } = plan.toolCall;
  return [
    { tool_calls: [{ index: 0, id: toolCallId(plan), type: 'function', function: { name, arguments: '' } }] },
    ...splitFragments(args).map((fragment) => ({
      tool_calls: [{ index: 0, function: { arguments: fragment } }],
    })),
  ];
}

export const openAiChatProtocol: Protocol = {
  readRequest(body) {
    const options = body.stream_options as { include_usage?: unknown } | null | undefined;
    return {
      model: readModel(body, MOCK_MODEL),
      stream: body.stream === true,
      maxOutput: readNumber(body.max_completion_tokens) ?? readNumber(body.max_tokens),
      includeUsage: options?.include_usage === true,
      ...chooseTool(declaredTools(body), openAiChoice(body.tool_choice)),
    };
  },

  isAuthorized: isBearer,

  errorBody: openAiErrorBody,

  reply(plan) {
    const completion: Record<string, unknown> = {
      id: `chatcmpl-${plan.id}`,
      object: 'chat.completion',
      created: plan.created,
      model: plan.model,
      choices: [
        { index: 0, message: messageOf(plan), logprobs: null, finish_reason: FINISH_REASONS[plan.stop] },
      ],
      service_tier: 'default',
      system_fingerprint: 'fp_mock',
    };
    if (plan.usage) completion.usage = usageOf(plan.usage);
    return completion;
  },

  stream(plan, request) {
    // With include_usage every chunk carries `usage: null` and one extra chunk the figures.
    const withUsage = plan.usage !== undefined && request.includeUsage;
    const chunk = (choices: unknown[], usage?: unknown): StreamEvent => {
      const data: Record<string, unknown> = {
        id: `chatcmpl-${plan.id}`,
        object: 'chat.completion.chunk',
        created: plan.created,
        model: plan.model,
        service_tier: 'default',
        system_fingerprint: 'fp_mock',
        choices,
      };
      if (withUsage) data.usage = usage ?? null;
      return { data };
    };
    const choice = (delta: unknown, finishReason: string | null = null) => ({
      index: 0,
      delta,
      logprobs: null,
      finish_reason: finishReason,
    });
    const roleDelta = plan.toolCall
      ? { role: 'assistant', content: null, refusal: null }
      : { role: 'assistant', content: '', refusal: null };
    const events: StreamEvent[] = [
      chunk([choice(roleDelta)]),
      ...deltasOf(plan).map((delta) => chunk([choice(delta)])),
      chunk([choice({}, FINISH_REASONS[plan.stop])]),
    ];
    if (withUsage && plan.usage) events.push(chunk([], usageOf(plan.usage)));
    return { events, firstDelta: 1, terminator: 'data: [DONE]\n\n' };
  },

  streamError() {
    return {
      data: { error: { message: SERVER_ERROR_MESSAGE, type: 'server_error', param: null, code: null } },
    };
  },
};
