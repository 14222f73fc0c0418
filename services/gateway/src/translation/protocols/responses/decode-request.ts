import {
  assertKnownKeys,
  isObject,
  type Json,
  readArray,
  readObject,
  readString,
  unsupported,
} from '../../fields.ts';
import type { IrRequest, IrTool, IrToolChoice } from '../../ir.ts';
import { isEffort } from '../../reasoning.ts';
import { readOpenAiCommonFields } from '../openai-request-fields.ts';
import { decodeInput } from './decode-input.ts';

/**
 * Responses request -> representation. Every accepted top-level field is read here or refused
 * (the tests hold this list to the allow-list of request/parameters.ts). Nothing is stored, so
 * `previous_response_id`, `conversation` and `prompt` (server-side state) are refused;
 * `client_metadata` and `prompt_cache_*` are client and cache hints that never change an answer.
 */
export const RESPONSES_TRANSLATED_FIELDS = {
  mapped: [
    'model',
    'input',
    'background',
    'client_metadata',
    'include',
    'instructions',
    'max_output_tokens',
    'metadata',
    'parallel_tool_calls',
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
  ],
  refused: [
    'access_programs',
    'context_management',
    'conversation',
    'max_tool_calls',
    'moderation',
    'previous_response_id',
    'prompt',
  ],
} as const;

const REFUSED: ReadonlySet<string> = new Set(RESPONSES_TRANSLATED_FIELDS.refused);
const INCLUDABLE = ['reasoning.encrypted_content'];

export function decodeResponsesRequest(body: Json, maxOutputTokens: number): IrRequest {
  for (const key of Object.keys(body)) {
    if (!REFUSED.has(key) || body[key] === null || body[key] === undefined) continue;
    throw key === 'previous_response_id'
      ? unsupported(key, 'nothing is stored on this model: send the whole conversation in input')
      : unsupported(key);
  }
  for (const [field, accepted] of [
    ['store', false],
    ['background', false],
    ['truncation', 'disabled'],
  ] as const) {
    if (body[field] !== undefined && body[field] !== null && body[field] !== accepted)
      throw unsupported(field, String(body[field]));
  }
  if (isObject(body.metadata) && Object.keys(body.metadata).length > 0) throw unsupported('metadata');
  if (body.include !== undefined && body.include !== null) {
    readArray(body.include, 'include').forEach((value, index) => {
      if (!INCLUDABLE.includes(value as string)) throw unsupported(`include[${index}]`, String(value));
    });
  }
  const system: string[] = [];
  if (typeof body.instructions === 'string' && body.instructions !== '') system.push(body.instructions);
  const input =
    typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : readArray(body.input, 'input');
  const request: IrRequest = {
    system,
    messages: decodeInput(input, system),
    tools: decodeTools(body.tools),
    maxOutputTokens,
    stream: body.stream === true,
    extras: [],
  };
  for (const feature of ['top_logprobs', 'service_tier'] as const) {
    if (body[feature] !== undefined && body[feature] !== null)
      request.extras.push({ feature, value: body[feature], field: feature });
  }
  readOpenAiCommonFields(body, request);
  const choice = decodeToolChoice(body.tool_choice);
  if (choice) request.toolChoice = choice;
  decodeReasoning(body.reasoning, request);
  decodeText(body.text, request);
  return request;
}

function functionTool(tool: Json, field: string, namespace?: string): IrTool {
  // Hosted tools (web search, file search, code interpreter...) run at OpenAI only.
  if (tool.type !== 'function' && tool.type !== 'custom')
    throw unsupported(`${field}.type`, String(tool.type));
  const declared: IrTool = { name: readString(tool.name, `${field}.name`), parameters: {} };
  if (namespace) declared.namespace = namespace;
  if (typeof tool.description === 'string') declared.description = tool.description;
  if (tool.type === 'custom') {
    assertKnownKeys(tool, ['type', 'name', 'description', 'format', 'defer_loading'], field);
    declared.custom = { format: tool.format };
    return declared;
  }
  assertKnownKeys(tool, ['type', 'name', 'description', 'parameters', 'strict', 'defer_loading'], field);
  declared.parameters =
    tool.parameters == null
      ? { type: 'object', properties: {} }
      : readObject(tool.parameters, `${field}.parameters`);
  if (typeof tool.strict === 'boolean') declared.strict = tool.strict;
  return declared;
}

function decodeTools(tools: unknown): IrTool[] {
  if (tools === undefined || tools === null) return [];
  return readArray(tools, 'tools').flatMap((raw, index) => {
    const field = `tools[${index}]`;
    const tool = readObject(raw, field);
    if (tool.type !== 'namespace') return [functionTool(tool, field)];
    const namespace = readString(tool.name, `${field}.name`);
    return readArray(tool.tools, `${field}.tools`).map((inner, at) =>
      functionTool(readObject(inner, `${field}.tools[${at}]`), `${field}.tools[${at}]`, namespace),
    );
  });
}

function decodeToolChoice(value: unknown): IrToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === 'auto' || value === 'none' || value === 'required') return { type: value };
  const choice = readObject(value, 'tool_choice');
  if (choice.type !== 'function' && choice.type !== 'custom')
    throw unsupported('tool_choice.type', String(choice.type));
  return { type: 'tool', name: readString(choice.name, 'tool_choice.name') };
}

function decodeReasoning(value: unknown, request: IrRequest): void {
  if (value === undefined || value === null) return;
  const reasoning = readObject(value, 'reasoning');
  assertKnownKeys(reasoning, ['effort', 'summary', 'generate_summary'], 'reasoning');
  const effort = reasoning.effort;
  if (effort !== undefined && effort !== null && !isEffort(effort))
    throw unsupported('reasoning.effort', String(effort));
  const summary = (reasoning.summary ?? reasoning.generate_summary) != null;
  if ((effort === undefined || effort === null) && !summary) return;
  request.reasoning = { ...(isEffort(effort) ? { effort } : {}), summary, field: 'reasoning' };
}

function decodeText(value: unknown, request: IrRequest): void {
  if (value === undefined || value === null) return;
  const text = readObject(value, 'text');
  assertKnownKeys(text, ['format', 'verbosity'], 'text');
  if (text.verbosity !== undefined && text.verbosity !== null && text.verbosity !== 'medium')
    throw unsupported('text.verbosity', String(text.verbosity));
  if (text.format === undefined || text.format === null) return;
  const format = readObject(text.format, 'text.format');
  if (format.type === 'text') return;
  if (format.type === 'json_object') {
    request.responseFormat = { type: 'json_object', field: 'text.format' };
    return;
  }
  if (format.type !== 'json_schema') throw unsupported('text.format.type', String(format.type));
  request.responseFormat = {
    type: 'json_schema',
    ...(typeof format.name === 'string' ? { name: format.name } : {}),
    schema: readObject(format.schema ?? {}, 'text.format.schema'),
    ...(typeof format.strict === 'boolean' ? { strict: format.strict } : {}),
    field: 'text.format',
  };
}
