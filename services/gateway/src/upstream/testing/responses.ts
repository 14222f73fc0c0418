import type { UpstreamResponse } from '../client.ts';

/** An upstream response held in memory: the body yields `chunks` in order, then `ending`. */
export function memoryResponse(
  status: number,
  headers: Record<string, string>,
  chunks: Array<string | Buffer>,
  ending: Error | null = null,
): UpstreamResponse {
  async function* body(): AsyncGenerator<Buffer> {
    for (const chunk of chunks) yield typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (ending) throw ending;
  }
  return { status, headers, body: body() };
}

export const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8' };
export const JSON_HEADERS = { 'content-type': 'application/json' };

/** Splits a text into pieces of at most `size` characters. */
export function piecesOf(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size));
  return pieces;
}

/** Everything a client would read from a relayed body. */
export async function readAll(body: ReadableStream<Uint8Array>): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of body) text += decoder.decode(chunk, { stream: true });
  return text + decoder.decode();
}
