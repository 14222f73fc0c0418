import { readBase64ImageSize } from './image-size.ts';
import { anthropicImageTokens, inlineDocumentTokens, REFERENCED_DOCUMENT_TOKENS } from './media-tokens.ts';
import {
  arrayOf,
  type Collector,
  isRecord,
  type Json,
  MESSAGE_OVERHEAD_TOKENS,
  TOOL_OVERHEAD_TOKENS,
} from './text-collector.ts';

// Anthropic Messages API: /v1/messages and /v1/messages/count_tokens.

/**
 * The system prompt Anthropic adds when a request carries tools: the largest documented value
 * (Claude 3 Opus with tool_choice auto; current models add 313-346).
 */
export const ANTHROPIC_TOOL_SYSTEM_PROMPT_TOKENS = 530;

function collectAnthropicImage(block: Json, out: Collector): void {
  const source = isRecord(block.source) ? block.source : {};
  out.fixed(anthropicImageTokens(source.type === 'base64' ? readBase64ImageSize(source.data) : null));
}

function collectAnthropicDocument(block: Json, out: Collector): void {
  out.text(block.title);
  out.text(block.context);
  const source = isRecord(block.source) ? block.source : {};
  if (source.type === 'text') out.text(source.data);
  else if (source.type === 'content') collectAnthropicBlocks(source.content, out, 1);
  else if (source.type === 'base64') out.fixed(inlineDocumentTokens(source.data));
  else out.fixed(REFERENCED_DOCUMENT_TOKENS);
}

function collectAnthropicBlock(block: unknown, out: Collector, depth: number): void {
  if (typeof block === 'string') {
    out.text(block);
    return;
  }
  if (!isRecord(block)) return;
  switch (block.type) {
    case 'text':
      out.text(block.text);
      return;
    case 'thinking':
      out.text(block.thinking);
      return;
    case 'image':
      collectAnthropicImage(block, out);
      return;
    case 'document':
      collectAnthropicDocument(block, out);
      return;
    case 'tool_use':
    case 'server_tool_use':
    case 'mcp_tool_use':
      out.text(block.name);
      out.json(block.input);
      return;
    default:
      // tool_result and the server tools' *_tool_result blocks carry their content inside.
      if (typeof block.type === 'string' && block.type.endsWith('_result') && depth < 3) {
        if (typeof block.content === 'string') {
          out.text(block.content);
          return;
        }
        if (Array.isArray(block.content)) {
          collectAnthropicBlocks(block.content, out, depth + 1);
          return;
        }
      }
      out.json(block);
      return;
  }
}

function collectAnthropicBlocks(content: unknown, out: Collector, depth: number): void {
  if (typeof content === 'string') {
    out.text(content);
    return;
  }
  for (const block of arrayOf(content)) collectAnthropicBlock(block, out, depth);
}

function collectAnthropicTool(tool: unknown, out: Collector): void {
  out.fixed(TOOL_OVERHEAD_TOKENS);
  if (!isRecord(tool) || tool.input_schema === undefined) {
    out.json(tool);
    return;
  }
  out.text(tool.name);
  out.text(tool.description);
  out.json(tool.input_schema);
}

/** Anthropic Messages API bodies: /v1/messages and /v1/messages/count_tokens. */
export function collectMessagesRequest(body: Json, out: Collector): void {
  collectAnthropicBlocks(body.system, out, 0);
  for (const message of arrayOf(body.messages)) {
    out.fixed(MESSAGE_OVERHEAD_TOKENS);
    if (isRecord(message)) collectAnthropicBlocks(message.content, out, 0);
  }
  const tools = arrayOf(body.tools);
  if (tools.length > 0) out.fixed(ANTHROPIC_TOOL_SYSTEM_PROMPT_TOKENS);
  for (const tool of tools) collectAnthropicTool(tool, out);
  if (isRecord(body.output_format)) out.json(body.output_format);
  if (isRecord(body.output_config) && body.output_config.format !== undefined)
    out.json(body.output_config.format);
}
