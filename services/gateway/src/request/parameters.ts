import { AppError } from '@tollgate/errors';
import type { Surface } from './surface.ts';

/*
 * The top-level body fields each surface accepts (docs/behaviour.md, gateway rule 6). Anything else is
 * refused with unsupported_parameter naming the field; nothing is dropped silently. The lists are
 * generous with documented fields (beta ones included) and strict with unknown ones. Header-only
 * parameters of the SDKs (`betas` -> `anthropic-beta`, user profile and workspace ids) are not body
 * fields and are not listed. Sources, read when these lists were written:
 */

/**
 * POST /v1/messages. Anthropic Messages API "Create a Message", stable and beta
 * (platform.claude.com/docs/en/api/beta/messages/create; `MessageCreateParamsBase` in
 * anthropics/anthropic-sdk-typescript src/resources/beta/messages/messages.ts). Covers what Claude
 * Code sends: context_management, metadata, output_config, thinking, tools, tool_choice, system,
 * stream, temperature, mcp_servers, container, service_tier, top_k, top_p, stop_sequences.
 */
const MESSAGES_PARAMETERS = [
  'model',
  'messages',
  'max_tokens',
  'cache_control',
  'compaction',
  'container',
  'context_management',
  'diagnostics',
  'fallback_credit_token',
  'fallbacks',
  'inference_geo',
  'mcp_servers',
  'metadata',
  'output_config',
  'output_format',
  'service_tier',
  'speed',
  'stop_sequences',
  'stream',
  'system',
  'temperature',
  'thinking',
  'thread',
  'tool_choice',
  'tools',
  'top_k',
  'top_p',
] as const;

/**
 * POST /v1/messages/count_tokens. Anthropic "Count tokens in a Message", stable and beta
 * (platform.claude.com/docs/en/api/beta/messages/count_tokens; `MessageCountTokensParams` in the
 * same SDK file). It takes no max_tokens and no sampling parameters.
 */
const COUNT_TOKENS_PARAMETERS = [
  'model',
  'messages',
  'cache_control',
  'context_management',
  'mcp_servers',
  'output_config',
  'output_format',
  'speed',
  'system',
  'thinking',
  'tool_choice',
  'tools',
] as const;

/**
 * POST /v1/chat/completions. OpenAI API reference, Chat Completions "Create" (developers.openai.com);
 * `ChatCompletionCreateParamsBase` in openai/openai-node src/resources/chat/completions/completions.ts.
 * Deprecated fields (functions, function_call, max_tokens, user) are included: clients still send them.
 */
const CHAT_COMPLETIONS_PARAMETERS = [
  'model',
  'messages',
  'audio',
  'frequency_penalty',
  'function_call',
  'functions',
  'logit_bias',
  'logprobs',
  'max_completion_tokens',
  'max_tokens',
  'metadata',
  'modalities',
  'moderation',
  'n',
  'parallel_tool_calls',
  'prediction',
  'presence_penalty',
  'prompt_cache_key',
  'prompt_cache_options',
  'prompt_cache_retention',
  'reasoning_effort',
  'response_format',
  'safety_identifier',
  'seed',
  'service_tier',
  'stop',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'user',
  'verbosity',
  'web_search_options',
] as const;

/**
 * POST /v1/responses. OpenAI API reference, Responses "Create a model response"
 * (developers.openai.com); `ResponseCreateParamsBase` in openai/openai-node
 * src/resources/responses/responses.ts. `client_metadata` is not in that reference but Codex CLI
 * sends it on every request (openai/codex, codex-rs/codex-api `ResponsesApiRequest`), along with
 * include, prompt_cache_key, reasoning, store, parallel_tool_calls, instructions, input, tools,
 * tool_choice, stream, text, service_tier and prompt_cache_retention.
 */
const RESPONSES_PARAMETERS = [
  'model',
  'input',
  'access_programs',
  'background',
  'client_metadata',
  'context_management',
  'conversation',
  'include',
  'instructions',
  'max_output_tokens',
  'max_tool_calls',
  'metadata',
  'moderation',
  'parallel_tool_calls',
  'previous_response_id',
  'prompt',
  'prompt_cache_key',
  'prompt_cache_options',
  'prompt_cache_retention',
  'reasoning',
  'safety_identifier',
  'service_tier',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'text',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'truncation',
  'user',
] as const;

const SUPPORTED: Record<Surface, ReadonlySet<string>> = {
  messages: new Set(MESSAGES_PARAMETERS),
  count_tokens: new Set(COUNT_TOKENS_PARAMETERS),
  chat_completions: new Set(CHAT_COMPLETIONS_PARAMETERS),
  responses: new Set(RESPONSES_PARAMETERS),
};

/** The accepted top-level fields of a surface (for docs and tests). */
export function listSupportedParameters(surface: Surface): readonly string[] {
  return [...SUPPORTED[surface]];
}

// The names are the client's own text; keep the message short whatever they send.
const MAX_NAMED_FIELDS = 5;
const MAX_FIELD_NAME_LENGTH = 64;

function quoteFieldName(name: string): string {
  return name.length > MAX_FIELD_NAME_LENGTH ? `${name.slice(0, MAX_FIELD_NAME_LENGTH)}...` : name;
}

/**
 * Refuses a body carrying any top-level field outside the surface's accepted set with
 * unsupported_parameter; the message names the field (every such field, up to five).
 */
export function assertSupportedParameters(surface: Surface, body: Record<string, unknown>): void {
  const supported = SUPPORTED[surface];
  const unsupported = Object.keys(body).filter((field) => !supported.has(field));
  if (unsupported.length === 0) return;
  const named = unsupported.slice(0, MAX_NAMED_FIELDS).map(quoteFieldName).join(', ');
  const more =
    unsupported.length > MAX_NAMED_FIELDS ? ` (and ${unsupported.length - MAX_NAMED_FIELDS} more)` : '';
  const label = unsupported.length === 1 ? 'Unsupported parameter' : 'Unsupported parameters';
  throw new AppError('unsupported_parameter', { message: `${label}: ${named}${more}` });
}
