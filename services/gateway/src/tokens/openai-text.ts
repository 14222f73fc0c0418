import { readBase64ImageSize } from './image-size.ts';
import { inlineDocumentTokens, openaiImageTokens, REFERENCED_DOCUMENT_TOKENS } from './media-tokens.ts';
import {
  AUDIO_TOKENS,
  arrayOf,
  type Collector,
  ENCRYPTED_CHARS_PER_TOKEN,
  isRecord,
  type Json,
  MESSAGE_OVERHEAD_TOKENS,
  TOOL_OVERHEAD_TOKENS,
} from './text-collector.ts';

// OpenAI parts shared by chat completions and responses.

/** An image part: `image_url` is `{url, detail}` on chat completions, a string beside `detail` on responses. */
function imageTokens(part: Json): number {
  const image = isRecord(part.image_url) ? part.image_url : { url: part.image_url, detail: part.detail };
  const url = typeof image.url === 'string' && image.url.startsWith('data:') ? image.url : null;
  return openaiImageTokens(url ? readBase64ImageSize(url) : null, image.detail);
}

/** A file part: inline `file_data` by its content, a `file_id` or `file_url` at the most a request may carry. */
function fileTokens(part: Json): number {
  const file = isRecord(part.file) ? part.file : part;
  return typeof file.file_data === 'string'
    ? inlineDocumentTokens(file.file_data)
    : REFERENCED_DOCUMENT_TOKENS;
}

function collectOpenAIPart(part: unknown, out: Collector): void {
  if (typeof part === 'string') {
    out.text(part);
    return;
  }
  if (!isRecord(part)) return;
  switch (part.type) {
    case 'text':
    case 'input_text':
    case 'output_text':
    case 'summary_text':
    case 'reasoning_text':
      out.text(part.text);
      return;
    case 'refusal':
      out.text(part.refusal);
      return;
    case 'image_url':
    case 'input_image':
      out.fixed(imageTokens(part));
      return;
    case 'file':
    case 'input_file':
      out.fixed(fileTokens(part));
      return;
    case 'input_audio':
      out.fixed(AUDIO_TOKENS);
      return;
    default:
      out.json(part);
      return;
  }
}

function collectOpenAIContent(content: unknown, out: Collector): void {
  if (typeof content === 'string') {
    out.text(content);
    return;
  }
  for (const part of arrayOf(content)) collectOpenAIPart(part, out);
}

function collectOpenAIFunction(definition: Json, out: Collector): void {
  out.text(definition.name);
  out.text(definition.description);
  out.json(definition.parameters);
}

function collectOpenAITool(tool: unknown, out: Collector): void {
  out.fixed(TOOL_OVERHEAD_TOKENS);
  if (!isRecord(tool)) return;
  if (isRecord(tool.function)) {
    collectOpenAIFunction(tool.function, out);
    return;
  }
  if (tool.type === 'function' && typeof tool.name === 'string') {
    collectOpenAIFunction(tool, out);
    return;
  }
  out.json(tool);
}

// OpenAI Chat Completions: /v1/chat/completions.

function collectChatMessage(message: unknown, out: Collector): void {
  out.fixed(MESSAGE_OVERHEAD_TOKENS);
  if (!isRecord(message)) return;
  out.text(message.name);
  collectOpenAIContent(message.content, out);
  for (const call of arrayOf(message.tool_calls)) {
    if (!isRecord(call)) continue;
    const invoked = isRecord(call.function) ? call.function : isRecord(call.custom) ? call.custom : {};
    out.text(invoked.name);
    out.text(invoked.arguments ?? invoked.input);
  }
  if (isRecord(message.function_call)) {
    out.text(message.function_call.name);
    out.text(message.function_call.arguments);
  }
}

/** OpenAI Chat Completions bodies. */
export function collectChatRequest(body: Json, out: Collector): void {
  for (const message of arrayOf(body.messages)) collectChatMessage(message, out);
  for (const tool of arrayOf(body.tools)) collectOpenAITool(tool, out);
  for (const definition of arrayOf(body.functions)) {
    out.fixed(TOOL_OVERHEAD_TOKENS);
    if (isRecord(definition)) collectOpenAIFunction(definition, out);
  }
  if (isRecord(body.response_format) && body.response_format.type === 'json_schema')
    out.json(body.response_format);
  if (isRecord(body.prediction)) collectOpenAIContent(body.prediction.content, out);
}

// OpenAI Responses: /v1/responses.

function collectResponsesItem(item: unknown, out: Collector): void {
  out.fixed(MESSAGE_OVERHEAD_TOKENS);
  if (typeof item === 'string') {
    out.text(item);
    return;
  }
  if (!isRecord(item)) return;
  switch (item.type ?? 'message') {
    case 'message':
      collectOpenAIContent(item.content, out);
      return;
    case 'function_call':
      out.text(item.name);
      out.text(item.arguments);
      return;
    case 'custom_tool_call':
      out.text(item.name);
      out.text(item.input);
      return;
    case 'function_call_output':
    case 'custom_tool_call_output':
      collectOpenAIContent(item.output, out);
      return;
    case 'reasoning':
      for (const part of [...arrayOf(item.summary), ...arrayOf(item.content)]) collectOpenAIPart(part, out);
      if (typeof item.encrypted_content === 'string') {
        out.fixed(Math.ceil(item.encrypted_content.length / ENCRYPTED_CHARS_PER_TOKEN));
      }
      return;
    default:
      out.json(item);
      return;
  }
}

/** OpenAI Responses bodies. */
export function collectResponsesRequest(body: Json, out: Collector): void {
  out.text(body.instructions);
  if (typeof body.input === 'string') {
    out.fixed(MESSAGE_OVERHEAD_TOKENS);
    out.text(body.input);
  } else {
    for (const item of arrayOf(body.input)) collectResponsesItem(item, out);
  }
  for (const tool of arrayOf(body.tools)) collectOpenAITool(tool, out);
  if (isRecord(body.text) && isRecord(body.text.format) && body.text.format.type === 'json_schema') {
    out.json(body.text.format);
  }
}
