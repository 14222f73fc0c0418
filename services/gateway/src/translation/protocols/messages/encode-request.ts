import { expressibleExtras, type Json, parseArguments, unsupported } from '../../fields.ts';
import type { IrImage, IrMessage, IrRequest, IrText, IrTool, IrUserPart } from '../../ir.ts';
import type { UpstreamRequestContext } from '../../protocol.ts';
import { budgetForEffort, MIN_THINKING_BUDGET } from '../../reasoning.ts';
import { mayReplay } from '../../signatures.ts';
import { asFunction } from '../../tool-names.ts';

/** Representation -> Messages request body (the upstream side). */
export function encodeMessagesRequest(request: IrRequest, context: UpstreamRequestContext): Json {
  const extras = expressibleExtras(request.extras, ['top_k', 'service_tier'] as const);
  const body: Json = {
    model: context.upstreamModel,
    max_tokens: request.maxOutputTokens,
    messages: encodeMessages(request.messages, context),
  };
  if (request.system.length > 0) body.system = request.system.map((text) => ({ type: 'text', text }));
  if (request.tools.length > 0) body.tools = request.tools.map((tool) => encodeTool(tool, context));
  const choice = encodeToolChoice(request, context);
  if (choice) body.tool_choice = choice;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  if (extras.has('top_k')) body.top_k = extras.get('top_k');
  if (extras.has('service_tier')) body.service_tier = serviceTier(extras.get('service_tier'));
  if (request.stopSequences) body.stop_sequences = request.stopSequences.value;
  if (request.user !== undefined) body.metadata = { user_id: request.user };
  const thinking = encodeThinking(request);
  if (thinking) body.thinking = thinking;
  if (request.responseFormat) {
    const format = request.responseFormat;
    if (format.type !== 'json_schema' || !format.schema) throw unsupported(format.field, 'json_object');
    body.output_config = { format: { type: 'json_schema', schema: format.schema } };
  }
  if (request.stream) body.stream = true;
  return body;
}

/** OpenAI's tiers: `auto` is Anthropic's `auto`, `default` its `standard_only`; no others. */
function serviceTier(value: unknown): string {
  if (value === 'auto') return 'auto';
  if (value === 'default' || value === 'standard_only') return 'standard_only';
  throw unsupported('service_tier', String(value));
}

function encodeThinking(request: IrRequest): Json | undefined {
  const reasoning = request.reasoning;
  // Reasoning without an effort or a budget (Responses `summary` alone) leaves the model's default.
  if (!reasoning || reasoning.effort === 'none') return undefined;
  if (reasoning.effort === undefined && reasoning.budgetTokens === undefined) return undefined;
  const wanted = reasoning.budgetTokens ?? budgetForEffort(reasoning.effort ?? 'medium');
  // Anthropic takes a budget of at least 1,024 tokens, below max_tokens.
  const budget = Math.min(wanted, request.maxOutputTokens - 1);
  if (budget < MIN_THINKING_BUDGET) {
    throw unsupported(
      reasoning.field,
      `reasoning needs a maximum output above ${MIN_THINKING_BUDGET} tokens on this model`,
    );
  }
  return { type: 'enabled', budget_tokens: budget };
}

function encodeTool(tool: IrTool, context: UpstreamRequestContext): Json {
  const { parameters, ...rest } = asFunction(tool);
  return { name: context.toolNames.upstream(tool.name, tool.namespace), input_schema: parameters, ...rest };
}

function encodeToolChoice(request: IrRequest, context: UpstreamRequestContext): Json | undefined {
  const choice = request.toolChoice;
  const parallel = request.parallelToolCalls?.value;
  if (!choice && parallel !== false) return undefined;
  let encoded: Json;
  switch (choice?.type ?? 'auto') {
    case 'required':
      encoded = { type: 'any' };
      break;
    case 'none':
      encoded = { type: 'none' };
      break;
    case 'tool': {
      const named = choice as { name: string; namespace?: string };
      encoded = { type: 'tool', name: context.toolNames.upstream(named.name, named.namespace) };
      break;
    }
    default:
      encoded = { type: 'auto' };
  }
  if (parallel === false && encoded.type !== 'none') encoded.disable_parallel_tool_use = true;
  return encoded;
}

function imageBlock(part: IrImage): Json {
  const source = part.source;
  return source.kind === 'base64'
    ? { type: 'image', source: { type: 'base64', media_type: source.mediaType, data: source.data } }
    : { type: 'image', source: { type: 'url', url: source.url } };
}

function userBlock(part: IrUserPart): Json {
  if (part.type === 'text') return { type: 'text', text: part.text };
  if (part.type === 'image') return imageBlock(part);
  const title = part.title === undefined ? {} : { title: part.title };
  const source = part.source;
  if (source.kind === 'base64')
    return {
      type: 'document',
      source: { type: 'base64', media_type: source.mediaType, data: source.data },
      ...title,
    };
  if (source.kind === 'url') return { type: 'document', source: { type: 'url', url: source.url }, ...title };
  return {
    type: 'document',
    source: { type: 'text', media_type: 'text/plain', data: source.text },
    ...title,
  };
}

function resultBlock(part: IrText | IrImage): Json {
  return part.type === 'text' ? { type: 'text', text: part.text } : imageBlock(part);
}

/**
 * Tool results become tool_result blocks at the head of a user turn; consecutive turns of one
 * role are merged (Anthropic wants alternating turns). Reasoning goes back only with a proof its
 * own provider issued (signatures.ts); anything else is left out.
 */
function encodeMessages(messages: IrMessage[], context: UpstreamRequestContext): Json[] {
  const out: Array<{ role: 'user' | 'assistant'; content: Json[] }> = [];
  const push = (role: 'user' | 'assistant', blocks: Json[]) => {
    const last = out.at(-1);
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const message of messages) {
    if (message.role === 'tool') {
      push(
        'user',
        message.content.map((result) => ({
          type: 'tool_result',
          tool_use_id: result.callId,
          content: result.content.map(resultBlock),
          ...(result.isError ? { is_error: true } : {}),
        })),
      );
    } else if (message.role === 'user') {
      push('user', message.content.map(userBlock));
    } else {
      const blocks: Json[] = [];
      for (const part of message.content) {
        if (part.type === 'text') {
          if (part.text !== '') blocks.push({ type: 'text', text: part.text });
        } else if (part.type === 'tool_call') {
          blocks.push({
            type: 'tool_use',
            id: part.callId,
            name: context.toolNames.upstream(part.name, part.namespace),
            input: parseArguments(part.arguments),
          });
        } else if (part.proof && mayReplay(part.proof, context.providerTag)) {
          if (part.proof.kind === 'signature')
            blocks.push({ type: 'thinking', thinking: part.text, signature: part.proof.value });
          else if (part.proof.kind === 'redacted')
            blocks.push({ type: 'redacted_thinking', data: part.proof.value });
        }
      }
      push('assistant', blocks);
    }
  }
  return out.filter((message) => message.content.length > 0);
}
