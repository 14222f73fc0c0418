import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningMockUpstream, startMockUpstream } from './server.ts';
import { dataOf, PROTOCOL_CASES, postJson, readSse } from './test-support.ts';

let mock: RunningMockUpstream;
beforeAll(async () => {
  mock = await startMockUpstream();
});
afterAll(() => mock.close());

type Json = Record<string, unknown>;

/** Every usage object found anywhere in a value (stream events nest them at different depths). */
function usagesIn(value: unknown): unknown[] {
  if (typeof value !== 'object' || value === null) return [];
  const found: unknown[] = [];
  for (const [key, child] of Object.entries(value)) {
    if (key === 'usage' && child !== null) found.push(child);
    else found.push(...usagesIn(child));
  }
  return found;
}

function hasUsageKey(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  return Object.entries(value).some(([key, child]) => key === 'usage' || hasUsageKey(child));
}

async function streamedEvents(path: string, body: unknown): Promise<Json[]> {
  const frames = await readSse(await postJson(mock.url, path, body));
  return dataOf(frames.filter((frame) => frame.data !== '[DONE]'));
}

describe('no_usage', () => {
  it.each(PROTOCOL_CASES)('leaves usage out of a $name answer', async ({ path, request }) => {
    const answer = (await (await postJson(mock.url, path, request('@mock(no_usage)'))).json()) as Json;
    expect(answer).not.toHaveProperty('usage');
    expect(answer.model).toBe('m');
  });

  it.each(PROTOCOL_CASES)('leaves usage out of every $name stream event', async ({ path, request }) => {
    const events = await streamedEvents(path, request('@mock(no_usage)', { stream: true }));
    expect(events.length).toBeGreaterThan(3);
    expect(events.flatMap(usagesIn)).toEqual([]);
  });

  it('sends no usage chunk and no usage fields on chat even with include_usage', async () => {
    const events = await streamedEvents(
      '/v1/chat/completions',
      PROTOCOL_CASES[1].request('@mock(no_usage)', { stream: true }),
    );
    expect(events.some(hasUsageKey)).toBe(false);
    expect(events.every((event) => (event.choices as unknown[]).length === 1)).toBe(true);
  });
});

describe('explicit usage figures', () => {
  // input_tokens is the input neither read from nor written to a cache, on every protocol.
  const directive =
    '@mock(input_tokens=1234,output_tokens=56,cache_read=100,cache_write=20,cache_write_1h=30,reasoning_tokens=7)';

  it('reports them on Messages beside the input, writes by lifetime, streamed and not', async () => {
    const expected = {
      input_tokens: 1234,
      output_tokens: 56,
      cache_read_input_tokens: 100,
      cache_creation_input_tokens: 50,
      cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 30 },
    };
    const answer = await (
      await postJson(mock.url, '/v1/messages', PROTOCOL_CASES[0].request(directive))
    ).json();
    expect(answer).toHaveProperty('usage', expected);
    const events = await streamedEvents(
      '/v1/messages',
      PROTOCOL_CASES[0].request(directive, { stream: true }),
    );
    expect(events[0]).toHaveProperty('message.usage', { ...expected, output_tokens: 1 });
    expect(events.at(-2)).toHaveProperty('usage', { output_tokens: 56 });
  });

  // OpenAI counts cached tokens inside the prompt and reports no writes (it bills them as input).
  it('reports them on chat completions inside the prompt count, streamed and not', async () => {
    const expected = {
      prompt_tokens: 1384,
      completion_tokens: 56,
      total_tokens: 1440,
      prompt_tokens_details: { cached_tokens: 100, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 7,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    };
    const answer = await (
      await postJson(mock.url, '/v1/chat/completions', PROTOCOL_CASES[1].request(directive))
    ).json();
    expect(answer).toHaveProperty('usage', expected);
    const events = await streamedEvents(
      '/v1/chat/completions',
      PROTOCOL_CASES[1].request(directive, { stream: true }),
    );
    expect(events.flatMap(usagesIn)).toEqual([expected]);
  });

  it('reports them on responses inside the input count, streamed and not', async () => {
    const expected = {
      input_tokens: 1384,
      input_tokens_details: { cached_tokens: 100 },
      output_tokens: 56,
      output_tokens_details: { reasoning_tokens: 7 },
      total_tokens: 1440,
    };
    const answer = await (
      await postJson(mock.url, '/v1/responses', PROTOCOL_CASES[2].request(directive))
    ).json();
    expect(answer).toHaveProperty('usage', expected);
    const events = await streamedEvents(
      '/v1/responses',
      PROTOCOL_CASES[2].request(directive, { stream: true }),
    );
    expect(events.flatMap(usagesIn)).toEqual([expected]);
    expect(events.at(-1)?.type).toBe('response.completed');
  });

  it.each(PROTOCOL_CASES)(
    'makes the $name reply text as long as output_tokens',
    async ({ path, request }) => {
      const events = await streamedEvents(path, request('@mock(output_tokens=9)', { stream: true }));
      const text = events
        .map((event) => {
          const delta = event.delta as { text?: string } | string | undefined;
          const choice = (event.choices as { delta: { content?: string } }[] | undefined)?.[0];
          if (event.type === 'response.output_text.delta') return delta as string;
          return (typeof delta === 'object' ? delta.text : undefined) ?? choice?.delta.content ?? '';
        })
        .join('');
      expect(text.split(' ')).toHaveLength(9);
    },
  );
});

describe('words', () => {
  it.each(PROTOCOL_CASES)(
    'replies with N words on $name and counts them as output',
    async ({ path, request }) => {
      const answer = await (await postJson(mock.url, path, request('@mock(words=12)'))).json();
      expect(JSON.stringify(answer)).toContain(
        '"Hello from the mock upstream. Hello from the mock upstream. Hello from"',
      );
      expect(usagesIn(answer)[0]).toMatchObject(
        path === '/v1/chat/completions' ? { completion_tokens: 12 } : { output_tokens: 12 },
      );
    },
  );
});
