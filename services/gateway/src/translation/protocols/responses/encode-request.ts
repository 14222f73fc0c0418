import { expressibleExtras, type Json, unsupported } from '../../fields.ts';
import type { IrImage, IrMessage, IrRequest, IrTool, IrUserPart } from '../../ir.ts';
import type { UpstreamRequestContext } from '../../protocol.ts';
import { openAiEffort } from '../../reasoning.ts';
import { mayReplay } from '../../signatures.ts';

/**
 * Representation -> Responses request body (the upstream side). Nothing is stored upstream
 * (`store: false`); reasoning comes back encrypted so a later turn can carry it, and goes back
 * only to the provider that issued it.
 */
export function encodeResponsesRequest(request: IrRequest, context: UpstreamRequestContext): Json {
  const extras = expressibleExtras(request.extras, ['top_logprobs', 'service_tier'] as const);
  const body: Json = {
    model: context.upstreamModel,
    input: request.messages.flatMap((message) => encodeMessage(message, context)),
    max_output_tokens: request.maxOutputTokens,
    store: false,
  };
  if (request.system.length > 0) body.instructions = request.system.join('\n\n');
  if (request.tools.length > 0) body.tools = request.tools.map((tool) => encodeTool(tool, context));
  const choice = request.toolChoice;
  if (choice) {
    body.tool_choice =
      choice.type === 'tool'
        ? { type: 'function', name: context.toolNames.upstream(choice.name, choice.namespace) }
        : choice.type;
  }
  if (request.parallelToolCalls) body.parallel_tool_calls = request.parallelToolCalls.value;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  for (const [feature, value] of extras)
    body[feature] = feature === 'service_tier' && value === 'standard_only' ? 'default' : value;
  if (request.stopSequences) throw unsupported(request.stopSequences.field);
  if (request.user !== undefined) body.safety_identifier = request.user;
  const reasoning = request.reasoning;
  if (reasoning) {
    const effort = openAiEffort(reasoning);
    body.reasoning = {
      ...(effort !== undefined ? { effort } : {}),
      ...(reasoning.summary !== false ? { summary: 'auto' } : {}),
    };
    body.include = ['reasoning.encrypted_content'];
  }
  const format = request.responseFormat;
  if (format) {
    body.text = {
      format:
        format.type === 'json_object'
          ? { type: 'json_object' }
          : {
              type: 'json_schema',
              name: format.name ?? 'response',
              schema: format.schema ?? {},
              ...(format.strict !== undefined ? { strict: format.strict } : {}),
            },
    };
  }
  if (request.stream) body.stream = true;
  return body;
}

function encodeTool(tool: IrTool, context: UpstreamRequestContext): Json {
  const name = context.toolNames.upstream(tool.name, tool.namespace);
  if (tool.custom)
    return {
      type: 'custom',
      name,
      ...(tool.description ? { description: tool.description } : {}),
      ...(tool.custom.format ? { format: tool.custom.format } : {}),
    };
  // Responses makes function tools strict unless told otherwise; other protocols do not.
  return {
    type: 'function',
    name,
    ...(tool.description !== undefined ? { description: tool.description } : {}),
    parameters: tool.parameters,
    strict: tool.strict ?? false,
  };
}

function dataUrl(mediaType: string, data: string): string {
  return `data:${mediaType};base64,${data}`;
}

function imagePart(part: IrImage): Json {
  const url =
    part.source.kind === 'base64' ? dataUrl(part.source.mediaType, part.source.data) : part.source.url;
  return { type: 'input_image', image_url: url, detail: 'auto' };
}

function userPart(part: IrUserPart): Json {
  if (part.type === 'text') return { type: 'input_text', text: part.text };
  if (part.type === 'image') return imagePart(part);
  const source = part.source;
  const filename = part.title ?? 'document.pdf';
  if (source.kind === 'text')
    return { type: 'input_text', text: part.title ? `${part.title}\n\n${source.text}` : source.text };
  if (source.kind === 'url') return { type: 'input_file', file_url: source.url };
  return { type: 'input_file', filename, file_data: dataUrl(source.mediaType, source.data) };
}

function encodeMessage(message: IrMessage, context: UpstreamRequestContext): Json[] {
  if (message.role === 'user') return [{ role: 'user', content: message.content.map(userPart) }];
  if (message.role === 'tool') {
    return message.content.map((result) => {
      const onlyText = result.content.every((part) => part.type === 'text');
      const text = result.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
      const output = onlyText
        ? result.isError
          ? `Error: ${text}`
          : text
        : result.content.map((part) =>
            part.type === 'text' ? { type: 'input_text', text: part.text } : imagePart(part),
          );
      return { type: 'function_call_output', call_id: result.callId, output };
    });
  }
  const items: Json[] = [];
  for (const part of message.content) {
    if (part.type === 'text') {
      if (part.text !== '')
        items.push({
          type: 'message',
          role: 'assistant',
          content: [{ type: 'output_text', text: part.text }],
        });
    } else if (part.type === 'tool_call') {
      items.push({
        type: 'function_call',
        call_id: part.callId,
        name: context.toolNames.upstream(part.name, part.namespace),
        arguments: part.arguments,
      });
    } else if (part.proof?.kind === 'encrypted' && mayReplay(part.proof, context.providerTag)) {
      items.push({
        type: 'reasoning',
        ...(part.proof.itemId ? { id: part.proof.itemId } : {}),
        summary: part.text === '' ? [] : [{ type: 'summary_text', text: part.text }],
        encrypted_content: part.proof.value,
      });
    }
  }
  return items;
}
