import { expressibleExtras, type Json, unsupported } from '../../fields.ts';
import type { IrImage, IrMessage, IrRequest, IrTool, IrUserPart } from '../../ir.ts';
import type { UpstreamRequestContext } from '../../protocol.ts';
import { openAiEffort } from '../../reasoning.ts';
import { asFunction } from '../../tool-names.ts';
import { CHAT_EXTRAS } from './decode-request.ts';

/**
 * Representation -> chat completions request body (the upstream side). The max output goes in
 * `max_completion_tokens`, OpenAI's current field (reasoning models refuse `max_tokens`).
 * Reasoning from earlier turns is not sent: chat completions takes none back.
 */
export function encodeChatRequest(request: IrRequest, context: UpstreamRequestContext): Json {
  const extras = expressibleExtras(request.extras, CHAT_EXTRAS);
  const messages: Json[] = request.system.map((content) => ({ role: 'system', content }));
  for (const message of request.messages) messages.push(...encodeMessage(message, context));
  const body: Json = {
    model: context.upstreamModel,
    messages,
    max_completion_tokens: request.maxOutputTokens,
  };
  if (request.tools.length > 0) body.tools = request.tools.map((tool) => encodeTool(tool, context));
  const choice = request.toolChoice;
  if (choice) {
    body.tool_choice =
      choice.type === 'tool'
        ? { type: 'function', function: { name: context.toolNames.upstream(choice.name, choice.namespace) } }
        : choice.type;
  }
  if (request.parallelToolCalls && request.tools.length > 0)
    body.parallel_tool_calls = request.parallelToolCalls.value;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  for (const [feature, value] of extras)
    body[feature] = feature === 'service_tier' ? serviceTier(value) : value;
  if (request.stopSequences) body.stop = request.stopSequences.value;
  if (request.user !== undefined) body.user = request.user;
  const reasoning = request.reasoning;
  if (reasoning) {
    const effort = openAiEffort(reasoning);
    if (effort !== undefined) body.reasoning_effort = effort;
  }
  const format = request.responseFormat;
  if (format) {
    body.response_format =
      format.type === 'json_object'
        ? { type: 'json_object' }
        : {
            type: 'json_schema',
            json_schema: {
              name: format.name ?? 'response',
              schema: format.schema ?? {},
              ...(format.strict !== undefined ? { strict: format.strict } : {}),
            },
          };
  }
  if (request.stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return body;
}

/** Anthropic's `standard_only` is OpenAI's `default`. */
function serviceTier(value: unknown): unknown {
  return value === 'standard_only' ? 'default' : value;
}

function encodeTool(tool: IrTool, context: UpstreamRequestContext): Json {
  return {
    type: 'function',
    function: { name: context.toolNames.upstream(tool.name, tool.namespace), ...asFunction(tool) },
  };
}

function dataUrl(mediaType: string, data: string): string {
  return `data:${mediaType};base64,${data}`;
}

function imagePart(part: IrImage): Json {
  const url =
    part.source.kind === 'base64' ? dataUrl(part.source.mediaType, part.source.data) : part.source.url;
  return { type: 'image_url', image_url: { url } };
}

function userPart(part: IrUserPart): Json {
  if (part.type === 'text') return { type: 'text', text: part.text };
  if (part.type === 'image') return imagePart(part);
  const source = part.source;
  if (source.kind === 'text')
    return { type: 'text', text: part.title ? `${part.title}\n\n${source.text}` : source.text };
  // Chat completions takes files as inline data only.
  if (source.kind === 'url') throw unsupported(`${part.field}.source`, 'a document by URL');
  return {
    type: 'file',
    file: { file_data: dataUrl(source.mediaType, source.data), filename: part.title ?? 'document.pdf' },
  };
}

/**
 * One turn as chat messages. Tool results become `tool` messages (an error marked in the text,
 * chat having no error flag); images a tool returned follow in a user message, since tool
 * messages carry text only.
 */
function encodeMessage(message: IrMessage, context: UpstreamRequestContext): Json[] {
  if (message.role === 'user') {
    const only = message.content[0];
    const content =
      message.content.length === 1 && only?.type === 'text' ? only.text : message.content.map(userPart);
    return [{ role: 'user', content }];
  }
  if (message.role === 'tool') {
    const out: Json[] = [];
    const images: Json[] = [];
    for (const result of message.content) {
      const text = result.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
      out.push({
        role: 'tool',
        tool_call_id: result.callId,
        content: result.isError ? `Error: ${text}` : text,
      });
      for (const part of result.content) if (part.type === 'image') images.push(imagePart(part));
    }
    if (images.length > 0)
      out.push({
        role: 'user',
        content: [{ type: 'text', text: 'Images returned by the tool calls above:' }, ...images],
      });
    return out;
  }
  const text = message.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
  const calls = message.content.flatMap((part) =>
    part.type === 'tool_call'
      ? [
          {
            id: part.callId,
            type: 'function',
            function: {
              name: context.toolNames.upstream(part.name, part.namespace),
              arguments: part.arguments,
            },
          },
        ]
      : [],
  );
  const encoded: Json = { role: 'assistant', content: text === '' && calls.length > 0 ? null : text };
  if (calls.length > 0) encoded.tool_calls = calls;
  return [encoded];
}
