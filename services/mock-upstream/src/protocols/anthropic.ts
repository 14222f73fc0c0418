import {
  callId,
  type DeclaredTool,
  MOCK_MODEL,
  type PlannedUsage,
  type ReplyPlan,
  splitFragments,
} from '../reply-plan.ts';
import { anthropicChoice, chooseTool } from '../tool-choice.ts';
import { closingCount, type Protocol, readModel, readNumber, type StreamEvent } from './protocol.ts';

/** Anthropic Messages API: POST /v1/messages. */

const STOP_REASONS = { end: 'end_turn', max: 'max_tokens', tool: 'tool_use' } as const;

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

function errorType(status: number): string {
  return ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

function usageOf(usage: PlannedUsage, outputTokens: number) {
  return {
    input_tokens: usage.inputTokens,
    // Cache tokens beside input_tokens; writes in total and by lifetime, as the API reports them.
    cache_creation_input_tokens: usage.cacheWrite + usage.cacheWrite1h,
    cache_read_input_tokens: usage.cacheRead,
    cache_creation: {
      ephemeral_5m_input_tokens: usage.cacheWrite,
      ephemeral_1h_input_tokens: usage.cacheWrite1h,
    },
    output_tokens: outputTokens,
  };
}

function declaredTools(body: Record<string, unknown>): DeclaredTool[] {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  return tools
    .filter((candidate) => typeof candidate?.name === 'string')
    .map((tool) => ({ name: tool.name as string, schema: tool.input_schema }));
}

/** A thinking block's signature: opaque, as Anthropic's are; only this mock issues it. */
const signatureOf = (plan: ReplyPlan) => `mocksig_${plan.id}`;

/** Whether the last turn is the user's with a tool_result: the agent answered a call. */
function afterToolResult(body: Record<string, unknown>): boolean {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const last = messages.at(-1) as { role?: unknown; content?: unknown } | undefined;
  return (
    last?.role === 'user' &&
    Array.isArray(last.content) &&
    last.content.some((block) => (block as { type?: unknown })?.type === 'tool_result')
  );
}

function contentOf(plan: ReplyPlan) {
  const content: Record<string, unknown>[] = [];
  if (plan.thinking !== undefined) {
    content.push({ type: 'thinking', thinking: plan.thinking, signature: signatureOf(plan) });
  }
  plan.toolCalls.forEach((call, index) => {
    const input = JSON.parse(call.arguments) as unknown;
    content.push({ type: 'tool_use', id: `toolu_${callId(plan, index)}`, name: call.name, input });
  });
  if (plan.toolCalls.length === 0) content.push({ type: 'text', text: plan.text });
  return content;
}

function messageOf(plan: ReplyPlan, content: unknown[], stopReason: string | null, outputTokens: number) {
  const message: Record<string, unknown> = {
    id: `msg_${plan.id}`,
    type: 'message',
    role: 'assistant',
    model: plan.model,
    content,
    stop_reason: stopReason,
    stop_sequence: null,
  };
  if (plan.usage) message.usage = usageOf(plan.usage, outputTokens);
  return message;
}

/** One content block as streamed: start, deltas, stop. */
function blockOf(index: number, start: unknown, deltas: unknown[]): StreamEvent[] {
  return [
    { event: 'content_block_start', data: { type: 'content_block_start', index, content_block: start } },
    ...deltas.map((delta) => ({
      event: 'content_block_delta',
      data: { type: 'content_block_delta', index, delta },
    })),
    { event: 'content_block_stop', data: { type: 'content_block_stop', index } },
  ];
}

function blockEvents(plan: ReplyPlan): StreamEvent[] {
  const blocks: StreamEvent[][] = [];
  if (plan.thinking !== undefined) {
    blocks.push(
      blockOf(blocks.length, { type: 'thinking', thinking: '', signature: '' }, [
        { type: 'thinking_delta', thinking: plan.thinking },
        { type: 'signature_delta', signature: signatureOf(plan) },
      ]),
    );
  }
  plan.toolCalls.forEach((call, index) => {
    const start = { type: 'tool_use', id: `toolu_${callId(plan, index)}`, name: call.name, input: {} };
    const deltas = splitFragments(call.arguments).map((partial_json) => ({
      type: 'input_json_delta',
      partial_json,
    }));
    blocks.push(blockOf(blocks.length, start, deltas));
  });
  if (plan.toolCalls.length === 0) {
    const deltas = plan.pieces.map((text) => ({ type: 'text_delta', text }));
    blocks.push(blockOf(blocks.length, { type: 'text', text: '' }, deltas));
  }
  // A ping after the first block's start, as the API sends one.
  const [first = [], ...rest] = blocks;
  return [first[0]!, { event: 'ping', data: { type: 'ping' } }, ...first.slice(1), ...rest.flat()];
}

export const anthropicProtocol: Protocol = {
  readRequest(body) {
    return {
      model: readModel(body, MOCK_MODEL),
      stream: body.stream === true,
      maxOutput: readNumber(body.max_tokens),
      includeUsage: true,
      tools: declaredTools(body),
      afterToolResult: afterToolResult(body),
      ...chooseTool(declaredTools(body), anthropicChoice(body.tool_choice)),
    };
  },

  isAuthorized(headers, expectedApiKey) {
    return headers['x-api-key'] === expectedApiKey;
  },

  errorBody(status, message) {
    return { type: 'error', error: { type: errorType(status), message } };
  },

  reply(plan) {
    return messageOf(plan, contentOf(plan), STOP_REASONS[plan.stop], plan.usage?.outputTokens ?? 0);
  },

  stream(plan) {
    // message_start reports a token or so of output; message_delta carries the cumulative figure.
    const startOutput = Math.min(1, plan.usage?.outputTokens ?? 0);
    const messageDelta: Record<string, unknown> = {
      type: 'message_delta',
      delta: { stop_reason: STOP_REASONS[plan.stop], stop_sequence: null },
    };
    if (plan.usage) messageDelta.usage = { output_tokens: plan.usage.outputTokens };
    const events: StreamEvent[] = [
      {
        event: 'message_start',
        data: { type: 'message_start', message: messageOf(plan, [], null, startOutput) },
      },
      ...blockEvents(plan),
      { event: 'message_delta', data: messageDelta },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ];
    // message_start, content_block_start, ping, then the first delta; closing: the last block's
    // content_block_stop, message_delta and message_stop.
    const closing = closingCount(events, (event) => event.event === 'content_block_delta');
    return { events, firstDelta: 3, closing };
  },

  streamError() {
    return {
      event: 'error',
      data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
    };
  },
};
