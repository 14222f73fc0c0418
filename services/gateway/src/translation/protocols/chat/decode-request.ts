import {
  assertKnownKeys,
  type Json,
  malformed,
  readArray,
  readObject,
  readString,
  unsupported,
} from '../../fields.ts';
import type { ExtraFeature, IrRequest, IrTool, IrToolChoice } from '../../ir.ts';
import { isEffort } from '../../reasoning.ts';
import { readOpenAiCommonFields } from '../openai-request-fields.ts';
import { decodeMessages } from './decode-messages.ts';

/**
 * Chat completions request -> representation. Every accepted top-level field is read here or
 * refused (the tests hold this list to the allow-list of request/parameters.ts).
 * `prompt_cache_*` are hints about the provider's cache that never change an answer: not carried.
 */
export const CHAT_TRANSLATED_FIELDS = {
  mapped: [
    'model',
    'messages',
    'frequency_penalty',
    'logit_bias',
    'logprobs',
    'max_completion_tokens',
    'max_tokens',
    'metadata',
    'modalities',
    'n',
    'parallel_tool_calls',
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
  ],
  refused: ['audio', 'function_call', 'functions', 'moderation', 'prediction', 'web_search_options'],
} as const;

const REFUSED: ReadonlySet<string> = new Set(CHAT_TRANSLATED_FIELDS.refused);
/** The fields a Messages upstream cannot express and other OpenAI-style upstreams can. */
export const CHAT_EXTRAS = [
  'seed',
  'frequency_penalty',
  'presence_penalty',
  'logit_bias',
  'logprobs',
  'top_logprobs',
  'service_tier',
] as const satisfies readonly ExtraFeature[];

export function decodeChatRequest(body: Json, maxOutputTokens: number): IrRequest {
  for (const key of Object.keys(body)) if (REFUSED.has(key)) throw unsupported(key);
  refuseUnless(body, 'n', (value) => value === 1);
  refuseUnless(body, 'store', (value) => value === false);
  refuseUnless(body, 'verbosity', (value) => value === 'medium');
  refuseUnless(
    body,
    'metadata',
    (value) => typeof value === 'object' && value !== null && Object.keys(value).length === 0,
  );
  refuseUnless(body, 'modalities', (value) => Array.isArray(value) && value.every((item) => item === 'text'));
  const system: string[] = [];
  const request: IrRequest = {
    system,
    messages: decodeMessages(readArray(body.messages, 'messages'), system),
    tools: decodeTools(body.tools),
    maxOutputTokens,
    stream: body.stream === true,
    extras: [],
  };
  for (const feature of CHAT_EXTRAS) {
    if (body[feature] !== undefined && body[feature] !== null && body[feature] !== false)
      request.extras.push({ feature, value: body[feature], field: feature });
  }
  readOpenAiCommonFields(body, request);
  const choice = decodeToolChoice(body.tool_choice);
  if (choice) request.toolChoice = choice;
  if (body.stop !== undefined && body.stop !== null) {
    const stops =
      typeof body.stop === 'string'
        ? [body.stop]
        : readArray(body.stop, 'stop').map((stop, index) => readString(stop, `stop[${index}]`));
    if (stops.length > 0) request.stopSequences = { value: stops, field: 'stop' };
  }
  if (body.reasoning_effort !== undefined && body.reasoning_effort !== null) {
    if (!isEffort(body.reasoning_effort))
      throw unsupported('reasoning_effort', String(body.reasoning_effort));
    request.reasoning = { effort: body.reasoning_effort, field: 'reasoning_effort' };
  }
  decodeResponseFormat(body.response_format, request);
  return request;
}

/** A field whose only expressible value is its default: accepted at that value, else refused. */
function refuseUnless(body: Json, field: string, accepted: (value: unknown) => boolean): void {
  const value = body[field];
  if (value !== undefined && value !== null && !accepted(value))
    throw unsupported(field, JSON.stringify(value).slice(0, 40));
}

function decodeTools(tools: unknown): IrTool[] {
  if (tools === undefined || tools === null) return [];
  return readArray(tools, 'tools').map((raw, index) => {
    const field = `tools[${index}]`;
    const tool = readObject(raw, field);
    if (tool.type !== 'function') throw unsupported(`${field}.type`, String(tool.type));
    const fn = readObject(tool.function, `${field}.function`);
    assertKnownKeys(fn, ['name', 'description', 'parameters', 'strict'], `${field}.function`);
    const declared: IrTool = {
      name: readString(fn.name, `${field}.function.name`),
      parameters:
        fn.parameters === undefined
          ? { type: 'object', properties: {} }
          : readObject(fn.parameters, `${field}.function.parameters`),
    };
    if (typeof fn.description === 'string') declared.description = fn.description;
    if (typeof fn.strict === 'boolean') declared.strict = fn.strict;
    return declared;
  });
}

function decodeToolChoice(value: unknown): IrToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === 'auto' || value === 'none' || value === 'required') return { type: value };
  const choice = readObject(value, 'tool_choice');
  if (choice.type !== 'function') throw unsupported('tool_choice.type', String(choice.type));
  return {
    type: 'tool',
    name: readString(readObject(choice.function, 'tool_choice.function').name, 'tool_choice.function.name'),
  };
}

function decodeResponseFormat(value: unknown, request: IrRequest): void {
  if (value === undefined || value === null) return;
  const format = readObject(value, 'response_format');
  if (format.type === 'text') return;
  if (format.type === 'json_object') {
    request.responseFormat = { type: 'json_object', field: 'response_format' };
    return;
  }
  if (format.type !== 'json_schema')
    throw malformed('response_format.type', '"text", "json_object" or "json_schema"');
  const schema = readObject(format.json_schema, 'response_format.json_schema');
  request.responseFormat = {
    type: 'json_schema',
    ...(typeof schema.name === 'string' ? { name: schema.name } : {}),
    schema: readObject(schema.schema ?? {}, 'response_format.json_schema.schema'),
    ...(typeof schema.strict === 'boolean' ? { strict: schema.strict } : {}),
    field: 'response_format',
  };
}
