/** Helpers shared by the mock's tests: raw HTTP calls and a strict SSE reader. */

export interface SseFrame {
  event?: string;
  data: string;
}

export async function postJson(
  baseUrl: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/**
 * Parses an SSE body strictly: every frame ends with a blank line and has only `event:` and
 * `data:` lines, at most one `event:` and exactly one `data:` (as the three providers send).
 */
export function parseSse(text: string): SseFrame[] {
  if (text.length > 0 && !text.endsWith('\n\n')) throw new Error('stream does not end with a blank line');
  const blocks = text.split('\n\n').slice(0, -1);
  return blocks.map((block) => {
    const frame: Partial<SseFrame> = {};
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ') && frame.event === undefined) frame.event = line.slice(7);
      else if (line.startsWith('data: ') && frame.data === undefined) frame.data = line.slice(6);
      else throw new Error(`unexpected SSE line: ${line}`);
    }
    if (frame.data === undefined) throw new Error(`SSE frame without data: ${block}`);
    return frame as SseFrame;
  });
}

/** Parses each frame's data as JSON (throws on a frame that is not JSON). */
export function dataOf(frames: SseFrame[]): Record<string, unknown>[] {
  return frames.map((frame) => JSON.parse(frame.data) as Record<string, unknown>);
}

export async function readSse(response: Response): Promise<SseFrame[]> {
  return parseSse(await response.text());
}

/** Reads a body until it ends or breaks; returns what arrived and whether it broke. */
export async function readUntilBroken(response: Response): Promise<{ text: string; broken: boolean }> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, broken: false };
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return { text, broken: true };
  }
}

/** Input tokens the README documents: a quarter of the request bytes, rounded up. */
export function expectedInputTokens(body: unknown): number {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return Math.max(1, Math.ceil(Buffer.byteLength(text) / 4));
}

/** The three protocols, with a request builder for each, for tests run over all of them. */
export const PROTOCOL_CASES = [
  {
    name: 'messages',
    path: '/v1/messages',
    request: (content: string, extra: Record<string, unknown> = {}) => ({
      model: 'm',
      max_tokens: 1000,
      messages: [{ role: 'user', content }],
      ...extra,
    }),
  },
  {
    name: 'chat completions',
    path: '/v1/chat/completions',
    request: (content: string, extra: Record<string, unknown> = {}) => ({
      model: 'm',
      messages: [{ role: 'user', content }],
      ...(extra.stream ? { stream_options: { include_usage: true } } : {}),
      ...extra,
    }),
  },
  {
    name: 'responses',
    path: '/v1/responses',
    request: (content: string, extra: Record<string, unknown> = {}) => ({
      model: 'm',
      input: content,
      ...extra,
    }),
  },
] as const;
