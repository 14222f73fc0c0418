import { expressibleExtras, type Json, malformed, parseArguments } from '../../fields.ts';
import type { IrImage, IrMessage, IrRequest, IrText, IrTool, IrUserPart } from '../../ir.ts';
import type { UpstreamRequestContext } from '../../protocol.ts';
import { budgetForEffort } from '../../reasoning.ts';
import { mayReplay } from '../../signatures.ts';
import { asFunction } from '../../tool-names.ts';

/**
 * Representation -> Gemini generateContent body (the upstream side). The model is in the URL
 * (the adapter's), not in the body; so is streaming (`:streamGenerateContent?alt=sse`).
 */
export function encodeGeminiRequest(request: IrRequest, context: UpstreamRequestContext): Json {
  const extras = expressibleExtras(request.extras, [
    'top_k',
    'seed',
    'frequency_penalty',
    'presence_penalty',
  ] as const);
  const body: Json = { contents: encodeContents(request.messages, context) };
  if (request.system.length > 0) body.systemInstruction = { parts: request.system.map((text) => ({ text })) };
  if (request.tools.length > 0)
    body.tools = [{ functionDeclarations: request.tools.map((tool) => encodeTool(tool, context)) }];
  const toolConfig = encodeToolConfig(request, context);
  if (toolConfig) body.toolConfig = toolConfig;
  const config: Json = { maxOutputTokens: request.maxOutputTokens };
  if (request.temperature !== undefined) config.temperature = request.temperature;
  if (request.topP !== undefined) config.topP = request.topP;
  if (extras.has('top_k')) config.topK = extras.get('top_k');
  if (extras.has('seed')) config.seed = extras.get('seed');
  if (extras.has('frequency_penalty')) config.frequencyPenalty = extras.get('frequency_penalty');
  if (extras.has('presence_penalty')) config.presencePenalty = extras.get('presence_penalty');
  if (request.stopSequences) config.stopSequences = request.stopSequences.value;
  const format = request.responseFormat;
  if (format) {
    config.responseMimeType = 'application/json';
    if (format.type === 'json_schema' && format.schema) config.responseJsonSchema = format.schema;
  }
  const thinking = encodeThinking(request);
  if (thinking) config.thinkingConfig = thinking;
  body.generationConfig = config;
  // The caller's end-user id has no Gemini field; it changes no answer, so it is not carried.
  return body;
}

/**
 * An effort becomes Gemini's thinking budget (the same table as Anthropic's); `none` turns
 * thinking off (budget 0). Thoughts are shown when reasoning was asked for: Gemini returns them
 * as summaries (`thought: true` parts).
 */
function encodeThinking(request: IrRequest): Json | undefined {
  const reasoning = request.reasoning;
  if (!reasoning) return undefined;
  if (reasoning.effort === 'none') return { thinkingBudget: 0 };
  if (reasoning.effort === undefined && reasoning.budgetTokens === undefined)
    return reasoning.summary ? { includeThoughts: true } : undefined;
  const wanted = reasoning.budgetTokens ?? budgetForEffort(reasoning.effort ?? 'medium');
  return {
    thinkingBudget: Math.min(wanted, request.maxOutputTokens),
    includeThoughts: reasoning.summary ?? true,
  };
}

/** Full JSON Schema goes in `parametersJsonSchema`; `parameters` takes only OpenAPI's subset. */
function encodeTool(tool: IrTool, context: UpstreamRequestContext): Json {
  const { parameters, description } = asFunction(tool);
  return {
    name: context.toolNames.upstream(tool.name, tool.namespace),
    ...(description !== undefined ? { description } : {}),
    parametersJsonSchema: parameters,
  };
}

/**
 * auto/required/none are AUTO/ANY/NONE; a named tool is ANY limited to that one. Gemini has no
 * switch for parallel calls: a caller's `parallel_tool_calls: false` is a preference it cannot
 * enforce, and the call proceeds (docs/translation.md).
 */
function encodeToolConfig(request: IrRequest, context: UpstreamRequestContext): Json | undefined {
  const choice = request.toolChoice;
  if (!choice) return undefined;
  switch (choice.type) {
    case 'required':
      return { functionCallingConfig: { mode: 'ANY' } };
    case 'none':
      return { functionCallingConfig: { mode: 'NONE' } };
    case 'tool':
      return {
        functionCallingConfig: {
          mode: 'ANY',
          allowedFunctionNames: [context.toolNames.upstream(choice.name, choice.namespace)],
        },
      };
    default:
      return { functionCallingConfig: { mode: 'AUTO' } };
  }
}

const MEDIA_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  heic: 'image/heic',
  heif: 'image/heif',
  pdf: 'application/pdf',
};

/** The media type a URL's extension names; Gemini needs one with every file reference. */
function mediaTypeOf(url: string, fallback: string): string {
  const extension = /\.([a-z0-9]{2,5})(?:$|[?#])/i.exec(url)?.[1]?.toLowerCase();
  return (extension && MEDIA_TYPES[extension]) || fallback;
}

/**
 * Data goes inline; a URL is handed to Gemini as a file reference (`fileData`), which Gemini
 * fetches itself (the gateway fetches nothing for a caller); one Gemini cannot read is its refusal.
 */
function inlinePart(part: IrImage | (IrUserPart & { type: 'document' })): Json {
  const source = part.source;
  if (source.kind === 'base64') return { inlineData: { mimeType: source.mediaType, data: source.data } };
  if (source.kind === 'text') return { text: source.text };
  const fallback = part.type === 'image' ? 'image/jpeg' : 'application/pdf';
  return { fileData: { mimeType: mediaTypeOf(source.url, fallback), fileUri: source.url } };
}

function userPart(part: IrUserPart): Json {
  return part.type === 'text' ? { text: part.text } : inlinePart(part);
}

function resultParts(content: Array<IrText | IrImage>): { text: string; images: Json[] } {
  const text = content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
  const images = content.flatMap((part) => (part.type === 'image' ? [inlinePart(part)] : []));
  return { text, images };
}

/**
 * Turns alternate `user` and `model`; consecutive turns of one role are merged. A tool result is
 * a `functionResponse` naming the function (Gemini matches results by name, and by id when it
 * gave one), its output under `output` or, for an error, `error`; images a tool returned follow
 * as inline parts of the same turn. A thought signature goes back on the part that followed it,
 * and only to the provider that issued it (signatures.ts); thought text is never sent back.
 */
function encodeContents(messages: IrMessage[], context: UpstreamRequestContext): Json[] {
  const out: Array<{ role: 'user' | 'model'; parts: Json[] }> = [];
  const push = (role: 'user' | 'model', parts: Json[]) => {
    if (parts.length === 0) return;
    const last = out.at(-1);
    if (last && last.role === role) last.parts.push(...parts);
    else out.push({ role, parts });
  };
  const callNames = new Map<string, string>();
  for (const message of messages) {
    if (message.role === 'user') {
      push('user', message.content.map(userPart));
    } else if (message.role === 'tool') {
      const parts: Json[] = [];
      for (const result of message.content) {
        const { text, images } = resultParts(result.content);
        const name = callNames.get(result.callId);
        if (name === undefined)
          throw malformed('A tool result', 'the answer to a tool call of the conversation');
        parts.push({
          functionResponse: { name, response: result.isError ? { error: text } : { output: text } },
        });
        parts.push(...images);
      }
      push('user', parts);
    } else {
      const parts: Json[] = [];
      let signature: string | undefined;
      for (const part of message.content) {
        if (part.type === 'reasoning') {
          if (part.proof?.kind === 'signature' && mayReplay(part.proof, context.providerTag))
            signature = part.proof.value;
          continue;
        }
        let encoded: Json;
        if (part.type === 'text') {
          if (part.text === '') continue;
          encoded = { text: part.text };
        } else {
          const name = context.toolNames.upstream(part.name, part.namespace);
          callNames.set(part.callId, name);
          encoded = { functionCall: { name, args: parseArguments(part.arguments) } };
        }
        if (signature !== undefined) encoded.thoughtSignature = signature;
        signature = undefined;
        parts.push(encoded);
      }
      push('model', parts);
    }
  }
  return out;
}
