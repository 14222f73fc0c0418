import {
  assertKnownKeys,
  type Json,
  parseDataUrl,
  readArray,
  readObject,
  readString,
  unsupported,
} from '../../fields.ts';
import type { IrAssistantPart, IrImage, IrMessage, IrText, IrToolResult, IrUserPart } from '../../ir.ts';

/** Chat messages -> representation turns (the caller's side). */

export function textOf(content: unknown, field: string): string {
  if (typeof content === 'string') return content;
  return readArray(content, field)
    .map((part, index) => {
      const object = readObject(part, `${field}[${index}]`);
      if (object.type !== 'text') throw unsupported(`${field}[${index}].type`, String(object.type));
      return readString(object.text, `${field}[${index}].text`);
    })
    .join('');
}

export function image(part: Json, field: string): IrImage {
  const imageUrl = readObject(part.image_url, `${field}.image_url`);
  assertKnownKeys(imageUrl, ['url', 'detail'], `${field}.image_url`);
  // `detail: low` asks for a cheaper, coarser reading that other providers do not offer.
  if (imageUrl.detail !== undefined && imageUrl.detail !== 'auto' && imageUrl.detail !== 'high')
    throw unsupported(`${field}.image_url.detail`, String(imageUrl.detail));
  const url = readString(imageUrl.url, `${field}.image_url.url`);
  const data = parseDataUrl(url);
  return { type: 'image', source: data ? { kind: 'base64', ...data } : { kind: 'url', url }, field };
}

export function userPart(raw: unknown, field: string): IrUserPart {
  const part = readObject(raw, field);
  switch (part.type) {
    case 'text':
      return { type: 'text', text: readString(part.text, `${field}.text`) };
    case 'image_url':
      return image(part, field);
    case 'file': {
      const file = readObject(part.file, `${field}.file`);
      if (typeof file.file_data !== 'string') throw unsupported(`${field}.file.file_id`);
      const data = parseDataUrl(file.file_data) ?? { mediaType: 'application/pdf', data: file.file_data };
      return {
        type: 'document',
        source: { kind: 'base64', ...data },
        field,
        ...(typeof file.filename === 'string' ? { title: file.filename } : {}),
      };
    }
    default:
      throw unsupported(`${field}.type`, String(part.type));
  }
}

export function decodeMessages(messages: unknown[], system: string[]): IrMessage[] {
  const out: IrMessage[] = [];
  messages.forEach((raw, index) => {
    const field = `messages[${index}]`;
    const message = readObject(raw, field);
    if (message.name !== undefined) throw unsupported(`${field}.name`);
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(textOf(message.content, `${field}.content`));
        return;
      case 'user': {
        const content =
          typeof message.content === 'string'
            ? [{ type: 'text', text: message.content }]
            : readArray(message.content, `${field}.content`);
        out.push({
          role: 'user',
          content: content.map((part, at) => userPart(part, `${field}.content[${at}]`)),
        });
        return;
      }
      case 'assistant':
        out.push({ role: 'assistant', content: assistantParts(message, field) });
        return;
      case 'tool': {
        const result: IrToolResult = {
          type: 'tool_result',
          callId: readString(message.tool_call_id, `${field}.tool_call_id`),
          content: [{ type: 'text', text: textOf(message.content, `${field}.content`) }],
          isError: false,
        };
        const last = out.at(-1);
        if (last?.role === 'tool') last.content.push(result);
        else out.push({ role: 'tool', content: [result] });
        return;
      }
      default:
        throw unsupported(`${field}.role`, String(message.role));
    }
  });
  return out;
}

export function assistantParts(message: Json, field: string): IrAssistantPart[] {
  assertKnownKeys(message, ['role', 'content', 'tool_calls', 'refusal', 'reasoning_content'], field);
  const parts: IrAssistantPart[] = [];
  // reasoning_content (shown by some servers) carries no proof: never sent back upstream.
  if (message.content !== undefined && message.content !== null) {
    const text = textOf(message.content, `${field}.content`);
    if (text !== '') parts.push({ type: 'text', text } satisfies IrText);
  }
  if (message.tool_calls !== undefined && message.tool_calls !== null) {
    readArray(message.tool_calls, `${field}.tool_calls`).forEach((raw, index) => {
      const callField = `${field}.tool_calls[${index}]`;
      const call = readObject(raw, callField);
      if (call.type !== undefined && call.type !== 'function')
        throw unsupported(`${callField}.type`, String(call.type));
      const fn = readObject(call.function, `${callField}.function`);
      parts.push({
        type: 'tool_call',
        callId: readString(call.id, `${callField}.id`),
        name: readString(fn.name, `${callField}.function.name`),
        arguments: typeof fn.arguments === 'string' ? fn.arguments : '{}',
      });
    });
  }
  return parts;
}
