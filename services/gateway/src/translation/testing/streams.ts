import type { MeteredSurface } from '@tollgate/schemas';
import { SseParser } from '../../upstream/sse.ts';
import type { IrRequest } from '../ir.ts';
import type { WireProtocol } from '../protocol.ts';
import { ToolNames } from '../tool-names.ts';
import { createStreamTranslator, type Translation } from '../translate.ts';

/** A minimal decoded request, with these tools declared. */
export function requestWith(overrides: Partial<IrRequest> = {}): IrRequest {
  return {
    system: [],
    messages: [],
    tools: [],
    maxOutputTokens: 1000,
    stream: true,
    extras: [],
    ...overrides,
  };
}

export function translationOf(
  caller: MeteredSurface,
  upstream: WireProtocol,
  request: IrRequest = requestWith(),
): Translation {
  return { caller, upstream, request, toolNames: new ToolNames(request.tools) };
}

/** Runs an upstream SSE text (cut into `chunkSize` pieces when given) through the translator. */
export function translateSse(
  caller: MeteredSurface,
  upstream: WireProtocol,
  text: string,
  options: { request?: IrRequest; includeUsage?: boolean; chunkSize?: number } = {},
): string {
  const translator = createStreamTranslator(translationOf(caller, upstream, options.request), {
    alias: 'alias-x',
    providerId: 'provider-x',
    includeUsage: options.includeUsage ?? true,
    created: 1_700_000_000,
  });
  const parser = new SseParser();
  const size = options.chunkSize ?? text.length;
  let out = '';
  for (let at = 0; at < text.length; at += size)
    for (const event of parser.push(text.slice(at, at + size))) out += translator.push(event);
  for (const event of parser.flush()) out += translator.push(event);
  return out;
}

export interface ParsedEvent {
  event: string | undefined;
  data: Record<string, unknown> | '[DONE]';
}

export function parseSse(text: string): ParsedEvent[] {
  return new SseParser().push(`${text}\n\n`).map((event) => ({
    event: event.event,
    data: event.data === '[DONE]' ? '[DONE]' : (JSON.parse(event.data) as Record<string, unknown>),
  }));
}

/** SSE text from (event name, data) pairs, as a provider writes them. */
export function sse(events: Array<[string | undefined, unknown]>): string {
  return events
    .map(
      ([name, data]) =>
        `${name ? `event: ${name}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`,
    )
    .join('');
}
