import {
  isObject,
  type Json,
  malformed,
  parseDataUrl,
  readArray,
  readObject,
  readString,
  unsupported,
} from '../../fields.ts';
import type { IrAssistantPart, IrImage, IrMessage, IrText, IrToolResult, IrUserPart } from '../../ir.ts';
import { openProof } from '../../signatures.ts';

/** Responses input items -> representation turns (the caller's side). */

export function contentParts(content: unknown, field: string): unknown[] {
  return typeof content === 'string' ? [{ type: 'input_text', text: content }] : readArray(content, field);
}

export function image(part: Json, field: string): IrImage {
  if (part.detail !== undefined && part.detail !== null && part.detail !== 'auto' && part.detail !== 'high')
    throw unsupported(`${field}.detail`, String(part.detail));
  if (typeof part.image_url !== 'string') throw unsupported(`${field}.file_id`);
  const data = parseDataUrl(part.image_url);
  return {
    type: 'image',
    source: data ? { kind: 'base64', ...data } : { kind: 'url', url: part.image_url },
    field,
  };
}

export function userPart(raw: unknown, field: string): IrUserPart {
  const part = readObject(raw, field);
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: readString(part.text, `${field}.text`) };
    case 'input_image':
      return image(part, field);
    case 'input_file': {
      const title = typeof part.filename === 'string' ? { title: part.filename } : {};
      if (typeof part.file_data === 'string') {
        const data = parseDataUrl(part.file_data) ?? { mediaType: 'application/pdf', data: part.file_data };
        return { type: 'document', source: { kind: 'base64', ...data }, field, ...title };
      }
      if (typeof part.file_url === 'string')
        return { type: 'document', source: { kind: 'url', url: part.file_url }, field, ...title };
      throw unsupported(`${field}.file_id`);
    }
    default:
      throw unsupported(`${field}.type`, String(part.type));
  }
}

export function textOf(content: unknown, field: string): string {
  return contentParts(content, field)
    .map((raw, index) => {
      const part = readObject(raw, `${field}[${index}]`);
      if (part.type !== 'input_text' && part.type !== 'output_text' && part.type !== 'refusal')
        throw unsupported(`${field}[${index}].type`, String(part.type));
      return readString(part.text ?? part.refusal, `${field}[${index}].text`);
    })
    .join('');
}

export function resultContent(output: unknown, field: string): Array<IrText | IrImage> {
  if (typeof output === 'string') return [{ type: 'text', text: output }];
  return readArray(output, field).map((raw, index) => {
    const itemField = `${field}[${index}]`;
    const part = readObject(raw, itemField);
    if (part.type === 'input_text') return { type: 'text', text: readString(part.text, `${itemField}.text`) };
    if (part.type === 'input_image') return image(part, itemField);
    throw unsupported(`${itemField}.type`, String(part.type));
  });
}

/** Input items as turns: consecutive assistant items (reasoning, text, calls) form one turn. */
export function decodeInput(items: unknown[], system: string[]): IrMessage[] {
  const out: IrMessage[] = [];
  const assistant = (part: IrAssistantPart) => {
    const last = out.at(-1);
    if (last?.role === 'assistant') last.content.push(part);
    else out.push({ role: 'assistant', content: [part] });
  };
  const result = (part: IrToolResult) => {
    const last = out.at(-1);
    if (last?.role === 'tool') last.content.push(part);
    else out.push({ role: 'tool', content: [part] });
  };
  items.forEach((raw, index) => {
    const field = `input[${index}]`;
    const item = readObject(raw, field);
    const type = item.type ?? 'message';
    switch (type) {
      case 'message':
        if (item.role === 'system' || item.role === 'developer')
          system.push(textOf(item.content, `${field}.content`));
        else if (item.role === 'assistant') {
          const text = textOf(item.content, `${field}.content`);
          if (text !== '') assistant({ type: 'text', text });
        } else if (item.role === 'user') {
          const parts = contentParts(item.content, `${field}.content`);
          out.push({
            role: 'user',
            content: parts.map((part, at) => userPart(part, `${field}.content[${at}]`)),
          });
        } else throw malformed(`${field}.role`, '"user", "assistant", "system" or "developer"');
        return;
      case 'function_call':
        assistant({
          type: 'tool_call',
          callId: readString(item.call_id, `${field}.call_id`),
          name: readString(item.name, `${field}.name`),
          ...(typeof item.namespace === 'string' ? { namespace: item.namespace } : {}),
          arguments: typeof item.arguments === 'string' ? item.arguments : '{}',
        });
        return;
      case 'custom_tool_call':
        assistant({
          type: 'tool_call',
          callId: readString(item.call_id, `${field}.call_id`),
          name: readString(item.name, `${field}.name`),
          ...(typeof item.namespace === 'string' ? { namespace: item.namespace } : {}),
          arguments: JSON.stringify({ input: readString(item.input, `${field}.input`) }),
        });
        return;
      case 'function_call_output':
      case 'custom_tool_call_output':
        result({
          type: 'tool_result',
          callId: readString(item.call_id, `${field}.call_id`),
          content: resultContent(item.output, `${field}.output`),
          isError: false,
        });
        return;
      case 'reasoning': {
        const summary = Array.isArray(item.summary) ? item.summary : [];
        const text = summary
          .map((part) => (isObject(part) && typeof part.text === 'string' ? part.text : ''))
          .join('\n\n');
        const proof =
          typeof item.encrypted_content === 'string'
            ? openProof(item.encrypted_content, 'encrypted')
            : undefined;
        if (proof && proof.itemId === undefined && typeof item.id === 'string') proof.itemId = item.id;
        assistant({ type: 'reasoning', text, ...(proof ? { proof } : {}) });
        return;
      }
      default:
        throw unsupported(`${field}.type`, String(type));
    }
  });
  return out;
}
