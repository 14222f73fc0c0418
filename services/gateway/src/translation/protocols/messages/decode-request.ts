import {
  assertKnownKeys,
  isObject,
  type Json,
  malformed,
  readArray,
  readObject,
  readOptionalNumber,
  readString,
  unsupported,
} from '../../fields.ts';
import type { IrMessage, IrRequest, IrTool, IrToolChoice, IrToolResult, IrUserPart } from '../../ir.ts';
import { isEffort } from '../../reasoning.ts';
import { assistantPart, toolResult, userPart } from './decode-content.ts';

/**
 * Messages request -> representation. Every accepted top-level field (request/parameters.ts) is
 * either read here or refused: the tests hold this list to the allow-list. Prompt-caching marks
 * (`cache_control`) are hints about the provider's cache that never change an answer; they have
 * no meaning on another provider and are not carried (docs/translation.md).
 */
export const MESSAGES_TRANSLATED_FIELDS = {
  mapped: [
    'model',
    'messages',
    'max_tokens',
    'cache_control',
    'context_management',
    'metadata',
    'output_config',
    'output_format',
    'service_tier',
    'stop_sequences',
    'stream',
    'system',
    'temperature',
    'thinking',
    'tool_choice',
    'tools',
    'top_k',
    'top_p',
  ],
  refused: [
    'compaction',
    'container',
    'diagnostics',
    'fallback_credit_token',
    'fallbacks',
    'inference_geo',
    'mcp_servers',
    'speed',
    'thread',
  ],
} as const;

const REFUSED: ReadonlySet<string> = new Set(MESSAGES_TRANSLATED_FIELDS.refused);

export function decodeMessagesRequest(body: Json, maxOutputTokens: number): IrRequest {
  for (const key of Object.keys(body)) if (REFUSED.has(key)) throw unsupported(key);
  const request: IrRequest = {
    ...decodeConversation(body),
    tools: decodeTools(body.tools),
    maxOutputTokens,
    stream: body.stream === true,
    extras: [],
  };
  const choice = decodeToolChoice(body.tool_choice);
  if (choice) {
    request.toolChoice = choice.choice;
    if (choice.parallel !== undefined)
      request.parallelToolCalls = { value: choice.parallel, field: 'tool_choice.disable_parallel_tool_use' };
  }
  const temperature = readOptionalNumber(body.temperature, 'temperature');
  if (temperature !== undefined) request.temperature = temperature;
  const topP = readOptionalNumber(body.top_p, 'top_p');
  if (topP !== undefined) request.topP = topP;
  if (body.top_k !== undefined) request.extras.push({ feature: 'top_k', value: body.top_k, field: 'top_k' });
  if (body.service_tier !== undefined)
    request.extras.push({ feature: 'service_tier', value: body.service_tier, field: 'service_tier' });
  if (body.stop_sequences !== undefined) {
    const stops = readArray(body.stop_sequences, 'stop_sequences').map((stop, index) =>
      readString(stop, `stop_sequences[${index}]`),
    );
    if (stops.length > 0) request.stopSequences = { value: stops, field: 'stop_sequences' };
  }
  decodeMetadata(body.metadata, request);
  decodeThinking(body, request);
  decodeOutputFormat(body, request);
  applyContextManagement(body.context_management, request);
  return request;
}

/**
 * The system prompt and the turns. A `system` turn inside `messages` (Claude Code sends the
 * environment that way) joins the instructions in its order, as chat's and Responses' system and
 * developer messages do at any position.
 */
function decodeConversation(body: Json): { system: string[]; messages: IrMessage[] } {
  const system = decodeSystem(body.system, 'system');
  const messages = decodeMessages(readArray(body.messages, 'messages'), system);
  return { system, messages };
}

function decodeSystem(value: unknown, field: string): string[] {
  if (value === undefined) return [];
  if (typeof value === 'string') return value === '' ? [] : [value];
  return readArray(value, field).map((block, index) => {
    const blockField = `${field}[${index}]`;
    const object = readObject(block, blockField);
    if (object.type !== 'text') throw unsupported(`${blockField}.type`, String(object.type));
    assertKnownKeys(object, ['type', 'text', 'cache_control', 'citations'], blockField);
    return readString(object.text, `${blockField}.text`);
  });
}

function decodeMessages(messages: unknown[], system: string[]): IrMessage[] {
  const out: IrMessage[] = [];
  messages.forEach((message, index) => {
    const field = `messages[${index}]`;
    const object = readObject(message, field);
    if (object.role === 'system') {
      system.push(...decodeSystem(object.content, `${field}.content`));
      return;
    }
    const content =
      typeof object.content === 'string' ? [{ type: 'text', text: object.content }] : object.content;
    const blocks = readArray(content, `${field}.content`);
    if (object.role === 'assistant') {
      out.push({
        role: 'assistant',
        content: blocks.map((block, at) => assistantPart(block, `${field}.content[${at}]`)),
      });
      return;
    }
    if (object.role !== 'user') throw malformed(`${field}.role`, '"user", "assistant" or "system"');
    const results: IrToolResult[] = [];
    const parts: IrUserPart[] = [];
    blocks.forEach((block, at) => {
      const blockField = `${field}.content[${at}]`;
      const part = readObject(block, blockField);
      if (part.type === 'tool_result') results.push(toolResult(part, blockField));
      else parts.push(userPart(part, blockField));
    });
    if (results.length > 0) out.push({ role: 'tool', content: results });
    if (parts.length > 0 || results.length === 0) out.push({ role: 'user', content: parts });
  });
  return out;
}

function decodeTools(tools: unknown): IrTool[] {
  if (tools === undefined) return [];
  return readArray(tools, 'tools').map((raw, index) => {
    const field = `tools[${index}]`;
    const tool = readObject(raw, field);
    // Server tools (web search, code execution...) run at Anthropic: nothing else can run them.
    if (tool.type !== undefined && tool.type !== 'custom')
      throw unsupported(`${field}.type`, String(tool.type));
    // defer_loading: tool search is Anthropic's; elsewhere the tool is declared in full.
    assertKnownKeys(
      tool,
      ['type', 'name', 'description', 'input_schema', 'cache_control', 'strict', 'defer_loading'],
      field,
    );
    const declared: IrTool = {
      name: readString(tool.name, `${field}.name`),
      parameters: readObject(tool.input_schema, `${field}.input_schema`),
    };
    if (typeof tool.description === 'string') declared.description = tool.description;
    if (typeof tool.strict === 'boolean') declared.strict = tool.strict;
    return declared;
  });
}

function decodeToolChoice(value: unknown): { choice: IrToolChoice; parallel?: boolean } | undefined {
  if (value === undefined) return undefined;
  const choice = readObject(value, 'tool_choice');
  assertKnownKeys(choice, ['type', 'name', 'disable_parallel_tool_use'], 'tool_choice');
  const parallel =
    typeof choice.disable_parallel_tool_use === 'boolean'
      ? { parallel: !choice.disable_parallel_tool_use }
      : {};
  switch (choice.type) {
    case 'auto':
      return { choice: { type: 'auto' }, ...parallel };
    case 'any':
      return { choice: { type: 'required' }, ...parallel };
    case 'none':
      return { choice: { type: 'none' }, ...parallel };
    case 'tool':
      return { choice: { type: 'tool', name: readString(choice.name, 'tool_choice.name') }, ...parallel };
    default:
      throw unsupported('tool_choice.type', String(choice.type));
  }
}

function decodeMetadata(metadata: unknown, request: IrRequest): void {
  if (metadata === undefined || metadata === null) return;
  const object = readObject(metadata, 'metadata');
  assertKnownKeys(object, ['user_id'], 'metadata');
  if (typeof object.user_id === 'string') request.user = object.user_id;
}

function decodeThinking(body: Json, request: IrRequest): void {
  const config = isObject(body.output_config) ? body.output_config : undefined;
  if (config) assertKnownKeys(config, ['effort', 'format'], 'output_config');
  const effort = config?.effort;
  if (effort !== undefined && !isEffort(effort)) throw unsupported('output_config.effort', String(effort));
  if (body.thinking === undefined || body.thinking === null) {
    if (effort !== undefined) request.reasoning = { effort, field: 'output_config.effort' };
    return;
  }
  const thinking = readObject(body.thinking, 'thinking');
  assertKnownKeys(thinking, ['type', 'budget_tokens', 'display'], 'thinking');
  const summary = thinking.display === 'omitted' ? { summary: false } : { summary: true };
  switch (thinking.type) {
    case 'disabled':
      if (effort !== undefined) request.reasoning = { effort, field: 'output_config.effort' };
      return;
    case 'enabled': {
      const budget = readOptionalNumber(thinking.budget_tokens, 'thinking.budget_tokens');
      request.reasoning = {
        ...(budget !== undefined ? { budgetTokens: budget } : {}),
        ...(effort !== undefined ? { effort } : {}),
        ...summary,
        field: 'thinking',
      };
      return;
    }
    case 'adaptive':
      request.reasoning = { ...(effort !== undefined ? { effort } : {}), ...summary, field: 'thinking' };
      return;
    default:
      throw unsupported('thinking.type', String(thinking.type));
  }
}

function decodeOutputFormat(body: Json, request: IrRequest): void {
  const fromConfig = isObject(body.output_config) ? body.output_config.format : undefined;
  const [format, field] =
    fromConfig !== undefined ? [fromConfig, 'output_config.format'] : [body.output_format, 'output_format'];
  if (format === undefined || format === null) return;
  const object = readObject(format, field);
  if (object.type !== 'json_schema') throw unsupported(`${field}.type`, String(object.type));
  request.responseFormat = {
    type: 'json_schema',
    schema: readObject(object.schema, `${field}.schema`),
    field,
  };
}

/**
 * Context editing is Anthropic's server-side pruning. Clearing old thinking is done here (the
 * upstream never sees reasoning it did not issue anyway); clearing old tool results is refused.
 */
function applyContextManagement(value: unknown, request: IrRequest): void {
  if (value === undefined || value === null) return;
  const config = readObject(value, 'context_management');
  assertKnownKeys(config, ['edits'], 'context_management');
  readArray(config.edits ?? [], 'context_management.edits').forEach((raw, index) => {
    const field = `context_management.edits[${index}]`;
    const edit = readObject(raw, field);
    if (typeof edit.type !== 'string' || !edit.type.startsWith('clear_thinking_')) {
      throw unsupported(`${field}.type`, String(edit.type));
    }
    if (edit.keep === undefined || edit.keep === 'all') return;
    const keep = readObject(edit.keep, `${field}.keep`);
    if (keep.type !== 'thinking_turns' || typeof keep.value !== 'number') throw unsupported(`${field}.keep`);
    keepThinkingTurns(request, keep.value);
  });
}

function keepThinkingTurns(request: IrRequest, turns: number): void {
  let seen = 0;
  for (let index = request.messages.length - 1; index >= 0; index--) {
    const message = request.messages[index]!;
    if (message.role !== 'assistant' || !message.content.some((part) => part.type === 'reasoning')) continue;
    seen += 1;
    if (seen > turns) message.content = message.content.filter((part) => part.type !== 'reasoning');
  }
}
