import {
  callId,
  type DeclaredTool,
  MOCK_MODEL,
  type PlannedUsage,
  promptInputTokens,
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
    prompt_tokens: promptInputTokens(usage),
    completion_tokens: usage.outputTokens,
    total_tokens: promptInputTokens(usage) + usage.outputTokens,
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

function toolCallId(plan: ReplyPlan, index: number): string {
  return `call_${callId(plan, index)}`;
}

/** Whether the last message is a tool's result: the application answered a call. */
function afterToolResult(body: Record<string, unknown>): boolean {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  return (messages.at(-1) as { role?: unknown } | undefined)?.role === 'tool';
}

/**
 * OpenAI's own chat models show no reasoning; the compatible servers that do (DeepSeek, vLLM,
 * Qwen) send it as `reasoning_content`, which is what the `thinking` directive renders.
 */
function messageOf(plan: ReplyPlan) {
  const reasoning = plan.thinking === undefined ? {} : { reasoning_content: plan.thinking };
  if (plan.toolCalls.length === 0) {
    return { role: 'assistant', content: plan.text, ...reasoning, refusal: null, annotations: [] };
  }
  return {
    role: 'assistant',
    content: null,
    ...reasoning,
    refusal: null,
    annotations: [],
    tool_calls: plan.toolCalls.map(({ name, arguments: args }, index) => ({
      id: toolCallId(plan, index),
      type: 'function',
      function: { name, arguments: args },
    })),
  };
}

/** Deltas after the role chunk: reasoning, then text pieces or each call's head and fragments. */
function deltasOf(plan: ReplyPlan): Record<string, unknown>[] {
  const reasoning = plan.thinking === undefined ? [] : [{ reasoning_content: plan.thinking }];
  if (plan.toolCalls.length === 0) return [...reasoning, ...plan.pieces.map((content) => ({ content }))];
  return [
    ...reasoning,
    ...plan.toolCalls.flatMap(({ name, arguments: args }, index) => [
      {
        tool_calls: [
          { index, id: toolCallId(plan, index), type: 'function', function: { name, arguments: '' } },
        ],
      },
      ...splitFragments(args).map((fragment) => ({
        tool_calls: [{ index, function: { arguments: fragment } }],
      })),
    ]),
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
      tools: declaredTools(body),
      afterToolResult: afterToolResult(body),
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
    const roleDelta =
      plan.toolCalls.length > 0
        ? { role: 'assistant', content: null, refusal: null }
        : { role: 'assistant', content: '', refusal: null };
    const events: StreamEvent[] = [
      chunk([choice(roleDelta)]),
      ...deltasOf(plan).map((delta) => chunk([choice(delta)])),
      chunk([choice({}, FINISH_REASONS[plan.stop])]),
    ];
    if (withUsage && plan.usage) events.push(chunk([], usageOf(plan.usage)));
    // Closing: the finish chunk and the usage chunk.
    const closing = withUsage && plan.usage ? 2 : 1;
    return { events, firstDelta: 1, terminator: 'data: [DONE]\n\n', closing };
  },

  streamError() {
    return {
      data: { error: { message: SERVER_ERROR_MESSAGE, type: 'server_error', param: null, code: null } },
    };
  },
};
