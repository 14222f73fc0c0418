import {
  assertKnownKeys,
  isObject,
  type Json,
  readArray,
  readObject,
  readString,
  unsupported,
} from '../../fields.ts';
import type { IrAssistantPart, IrDocument, IrImage, IrText, IrToolResult, IrUserPart } from '../../ir.ts';
import { openProof } from '../../signatures.ts';

/** Messages content blocks -> representation parts (the caller's side). */

export function text(block: Json, field: string): IrText {
  assertKnownKeys(block, ['type', 'text', 'cache_control', 'citations'], field);
  if (Array.isArray(block.citations) && block.citations.length > 0) throw unsupported(`${field}.citations`);
  return { type: 'text', text: readString(block.text, `${field}.text`) };
}

export function image(block: Json, field: string): IrImage {
  assertKnownKeys(block, ['type', 'source', 'cache_control'], field);
  const source = readObject(block.source, `${field}.source`);
  if (source.type === 'base64') {
    return {
      type: 'image',
      source: {
        kind: 'base64',
        mediaType: readString(source.media_type, `${field}.source.media_type`),
        data: readString(source.data, `${field}.source.data`),
      },
      field,
    };
  }
  if (source.type === 'url')
    return {
      type: 'image',
      source: { kind: 'url', url: readString(source.url, `${field}.source.url`) },
      field,
    };
  throw unsupported(`${field}.source.type`, String(source.type));
}

export function documentPart(block: Json, field: string): IrDocument {
  assertKnownKeys(block, ['type', 'source', 'title', 'context', 'citations', 'cache_control'], field);
  if (isObject(block.citations) && block.citations.enabled === true) throw unsupported(`${field}.citations`);
  if (block.context !== undefined && block.context !== null) throw unsupported(`${field}.context`);
  const source = readObject(block.source, `${field}.source`);
  const title = typeof block.title === 'string' ? { title: block.title } : {};
  switch (source.type) {
    case 'base64':
      return {
        type: 'document',
        source: {
          kind: 'base64',
          mediaType: readString(source.media_type, `${field}.source.media_type`),
          data: readString(source.data, `${field}.source.data`),
        },
        field,
        ...title,
      };
    case 'url':
      return {
        type: 'document',
        source: { kind: 'url', url: readString(source.url, `${field}.source.url`) },
        field,
        ...title,
      };
    case 'text':
      return {
        type: 'document',
        source: { kind: 'text', text: readString(source.data, `${field}.source.data`) },
        field,
        ...title,
      };
    default:
      throw unsupported(`${field}.source.type`, String(source.type));
  }
}

export function userPart(block: Json, field: string): IrUserPart {
  switch (block.type) {
    case 'text':
      return text(block, field);
    case 'image':
      return image(block, field);
    case 'document':
      return documentPart(block, field);
    default:
      throw unsupported(`${field}.type`, String(block.type));
  }
}

export function toolResult(block: Json, field: string): IrToolResult {
  assertKnownKeys(block, ['type', 'tool_use_id', 'content', 'is_error', 'cache_control'], field);
  const raw =
    block.content === undefined
      ? []
      : typeof block.content === 'string'
        ? [{ type: 'text', text: block.content }]
        : block.content;
  const content = readArray(raw, `${field}.content`).map((item, index) => {
    const itemField = `${field}.content[${index}]`;
    const part = readObject(item, itemField);
    if (part.type === 'text') return text(part, itemField);
    if (part.type === 'image') return image(part, itemField);
    throw unsupported(`${itemField}.type`, String(part.type));
  });
  return {
    type: 'tool_result',
    callId: readString(block.tool_use_id, `${field}.tool_use_id`),
    content,
    isError: block.is_error === true,
  };
}

export function assistantPart(raw: unknown, field: string): IrAssistantPart {
  const block = readObject(raw, field);
  switch (block.type) {
    case 'text':
      return text(block, field);
    case 'thinking':
      return {
        type: 'reasoning',
        text: readString(block.thinking, `${field}.thinking`),
        ...(typeof block.signature === 'string' && block.signature !== ''
          ? { proof: openProof(block.signature, 'signature') }
          : {}),
      };
    case 'redacted_thinking':
      return {
        type: 'reasoning',
        text: '',
        proof: openProof(readString(block.data, `${field}.data`), 'redacted'),
      };
    case 'tool_use':
      assertKnownKeys(block, ['type', 'id', 'name', 'input', 'cache_control', 'caller'], field);
      return {
        type: 'tool_call',
        callId: readString(block.id, `${field}.id`),
        name: readString(block.name, `${field}.name`),
        arguments: JSON.stringify(block.input ?? {}),
      };
    default:
      throw unsupported(`${field}.type`, String(block.type));
  }
}
