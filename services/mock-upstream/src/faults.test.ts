import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningMockUpstream, startMockUpstream } from './server.ts';
import {
  dataOf,
  PROTOCOL_CASES,
  parseSse,
  postJson,
  readSse,
  readUntilBroken,
  type SseFrame,
} from './test-support.ts';

let mock: RunningMockUpstream;
beforeAll(async () => {
  mock = await startMockUpstream();
});
afterAll(() => mock.close());

/** Each frame of a stream with the time it arrived (ms). */
async function timedFrames(response: Response): Promise<Array<{ frame: SseFrame; at: number }>> {
  const frames: Array<{ frame: SseFrame; at: number }> = [];
  const decoder = new TextDecoder();
  let pending = '';
  for await (const chunk of response.body!) {
    const at = performance.now();
    pending += decoder.decode(chunk, { stream: true });
    const end = pending.lastIndexOf('\n\n') + 2;
    for (const frame of parseSse(pending.slice(0, end))) frames.push({ frame, at });
    pending = pending.slice(end);
  }
  return frames;
}

/** A chat chunk's name for the test: its finish reason, `usage`, `[DONE]`, or `delta`. */
function chatFrameName(data: string): string {
  if (data === '[DONE]') return data;
  const chunk = JSON.parse(data) as { choices: Array<{ finish_reason: string | null }> };
  if (chunk.choices.length === 0) return 'usage';
  return chunk.choices[0]!.finish_reason ?? 'delta';
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

describe('status directive', () => {
  it('answers the Messages error body, with Retry-After', async () => {
    const response = await postJson(
      mock.url,
      '/v1/messages',
      PROTOCOL_CASES[0].request('@mock(status=529,retry_after=3)'),
    );
    expect(response.status).toBe(529);
    expect(response.headers.get('retry-after')).toBe('3');
    expect(await response.json()).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: expect.any(String) },
    });
    const limited = await postJson(mock.url, '/v1/messages', PROTOCOL_CASES[0].request('@mock(status=429)'));
    expect(limited.headers.get('retry-after')).toBeNull();
    expect(await limited.json()).toMatchObject({ error: { type: 'rate_limit_error' } });
  });

  it.each(PROTOCOL_CASES.slice(1))(
    'answers the OpenAI error body on $name, streamed or not',
    async ({ path, request }) => {
      for (const stream of [false, true]) {
        const response = await postJson(mock.url, path, request('@mock(status=503)', { stream }));
        expect(response.status).toBe(503);
        expect(response.headers.get('content-type')).toBe('application/json');
        expect(await response.json()).toEqual({
          error: { message: expect.any(String), type: 'server_error', param: null, code: null },
        });
      }
    },
  );

  it('comes from the x-mock header as well', async () => {
    const response = await postJson(mock.url, '/v1/chat/completions', PROTOCOL_CASES[1].request('hi'), {
      'x-mock': 'status=429,retry_after=1',
    });
    expect(response.status).toBe(429);
    expect(await response.json()).toMatchObject({ error: { code: 'rate_limit_exceeded' } });
  });

  it('refuses a malformed directive with a 400 naming it', async () => {
    const response = await postJson(mock.url, '/v1/messages', PROTOCOL_CASES[0].request('@mock(stauts=503)'));
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { message: 'unknown mock directive stauts' } });
  });
});

describe('timing directives', () => {
  it('delay holds the response headers back', async () => {
    const started = performance.now();
    const response = await postJson(mock.url, '/v1/responses', PROTOCOL_CASES[2].request('@mock(delay=150)'));
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    expect(response.status).toBe(200);
  });

  it('first_byte_delay sends headers at once and the first event later', async () => {
    const started = performance.now();
    const response = await postJson(
      mock.url,
      '/v1/messages',
      PROTOCOL_CASES[0].request('@mock(first_byte_delay=300)', { stream: true }),
    );
    const headersAt = performance.now() - started;
    const frames = await readSse(response);
    expect(performance.now() - started - headersAt).toBeGreaterThanOrEqual(250);
    expect(frames.at(-1)?.event).toBe('message_stop');
  });

  it.each([
    {
      name: 'messages',
      path: '/v1/messages',
      closing: ['content_block_stop', 'message_delta', 'message_stop'],
    },
    { name: 'chat completions', path: '/v1/chat/completions', closing: ['stop', 'usage', '[DONE]'] },
    {
      name: 'responses',
      path: '/v1/responses',
      closing: [
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ],
    },
  ])('chunk_delay spaces the events of $name, and its closing events come back to back', async (surface) => {
    const protocol = PROTOCOL_CASES.find((item) => item.name === surface.name)!;
    const response = await postJson(
      mock.url,
      surface.path,
      protocol.request('@mock(words=3,chunk_delay=80)', { stream: true }),
    );
    const frames = await timedFrames(response);
    const names = frames.map(({ frame }) => frame.event ?? chatFrameName(frame.data));
    const firstClosing = frames.length - surface.closing.length;
    expect(names.slice(firstClosing)).toEqual(surface.closing);
    // Every event up to the first closing one waits its gap; the rest leave with it.
    const gaps = frames.slice(1).map((item, index) => item.at - frames[index]!.at);
    const waited = gaps.slice(0, firstClosing);
    expect(waited.filter((gap) => gap >= 70).length).toBeGreaterThanOrEqual(4);
    expect(gaps.slice(firstClosing).every((gap) => gap < 40)).toBe(true);
  });

  it('keeps serving after clients leave during a delay and during a slow stream', async () => {
    const leave = async (content: string, stream: boolean) => {
      const controller = new AbortController();
      const before = mock.requests().length;
      const sending = fetch(`${mock.url}/v1/messages`, {
        method: 'POST',
        body: JSON.stringify(PROTOCOL_CASES[0].request(content, { stream })),
        signal: controller.signal,
      }).catch((error: unknown) => error);
      // Recorded as it arrives: the client leaves once the mock is delaying or streaming it.
      await expect.poll(() => mock.requests().length).toBe(before + 1);
      controller.abort();
      const response = await sending;
      const outcome =
        response instanceof Response ? await response.text().catch((error: unknown) => error) : response;
      expect(outcome).toBeInstanceOf(Error);
    };
    await leave('@mock(delay=5000)', false);
    await leave('@mock(chunk_delay=20,words=50)', true);
    // Give the slow stream time to try writing to the closed connection.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await postJson(mock.url, '/v1/messages', PROTOCOL_CASES[0].request('hi'))).status).toBe(200);
  });

  it('close() ends connections held by a long delay', async () => {
    const own = await startMockUpstream();
    const pending = postJson(own.url, '/v1/messages', PROTOCOL_CASES[0].request('@mock(delay=20000)')).catch(
      (error: unknown) => error,
    );
    // Recorded as it arrives, before its delay starts: from then on the mock is holding it.
    await expect.poll(() => own.requests().length).toBe(1);
    const started = performance.now();
    await own.close();
    expect(performance.now() - started).toBeLessThan(1000);
    expect(await pending).toBeInstanceOf(Error);
  });
});

describe('invalid_json', () => {
  it.each(PROTOCOL_CASES)('gives $name a 200 body that is not JSON', async ({ path, request }) => {
    const response = await postJson(mock.url, path, request('@mock(invalid_json)'));
    expect(response.status).toBe(200);
    expect(isJson(await response.text())).toBe(false);
  });

  it.each(PROTOCOL_CASES)('puts one non-JSON event into a $name stream', async ({ path, request }) => {
    const frames = await readSse(
      await postJson(mock.url, path, request('@mock(invalid_json)', { stream: true })),
    );
    const broken = frames.filter((frame) => frame.data !== '[DONE]' && !isJson(frame.data));
    expect(broken).toHaveLength(1);
    expect(frames.indexOf(broken[0]!)).toBeGreaterThan(0);
  });
});

describe('cut_after', () => {
  it.each(PROTOCOL_CASES)(
    'drops a $name stream after N events without a proper end',
    async ({ path, request }) => {
      const response = await postJson(mock.url, path, request('@mock(cut_after=3)', { stream: true }));
      expect(response.status).toBe(200);
      const { text, broken } = await readUntilBroken(response);
      expect(broken).toBe(true);
      expect(parseSse(text)).toHaveLength(3);
    },
  );

  it('drops a non-streamed body after N bytes', async () => {
    const response = await postJson(
      mock.url,
      '/v1/chat/completions',
      PROTOCOL_CASES[1].request('@mock(cut_after=10)'),
    );
    expect(response.status).toBe(200);
    const { text, broken } = await readUntilBroken(response);
    expect(broken).toBe(true);
    expect(text).toHaveLength(10);
  });
});

describe('stream_error', () => {
  it('ends a Messages stream with an error event after the first delta', async () => {
    const frames = await readSse(
      await postJson(
        mock.url,
        '/v1/messages',
        PROTOCOL_CASES[0].request('@mock(stream_error)', { stream: true }),
      ),
    );
    expect(frames.map((frame) => frame.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'error',
    ]);
    expect(dataOf(frames).at(-1)).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
    });
  });

  it('ends a chat stream with an error object and no [DONE]', async () => {
    const frames = await readSse(
      await postJson(
        mock.url,
        '/v1/chat/completions',
        PROTOCOL_CASES[1].request('@mock(stream_error)', { stream: true }),
      ),
    );
    expect(frames).toHaveLength(3);
    expect(dataOf(frames).at(-1)).toMatchObject({ error: { type: 'server_error' } });
  });

  it('ends a Responses stream with a numbered error event', async () => {
    const frames = await readSse(
      await postJson(
        mock.url,
        '/v1/responses',
        PROTOCOL_CASES[2].request('@mock(stream_error)', { stream: true }),
      ),
    );
    expect(frames.at(-2)?.event).toBe('response.output_text.delta');
    expect(frames.at(-1)?.event).toBe('error');
    expect(dataOf(frames).at(-1)).toMatchObject({
      type: 'error',
      code: 'server_error',
      sequence_number: frames.length - 1,
    });
  });
});
