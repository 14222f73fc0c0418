import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type RunningMockUpstream, startMockUpstream } from './server.ts';
import { PROTOCOL_CASES, postJson } from './test-support.ts';

let mock: RunningMockUpstream;
beforeAll(async () => {
  mock = await startMockUpstream();
});
beforeEach(() => mock.reset());
afterAll(() => mock.close());

const [messages, chat] = PROTOCOL_CASES;

async function getJson(path: string): Promise<unknown> {
  const response = await fetch(`${mock.url}${path}`);
  expect(response.status).toBe(200);
  return response.json();
}

describe('introspection', () => {
  it('answers /health', async () => {
    expect(await getJson('/health')).toEqual({ status: 'ok' });
  });

  it('counts calls by path and by tag, over HTTP and in-process', async () => {
    await postJson(mock.url, messages.path, messages.request('@mock(tag=alpha)'));
    await postJson(mock.url, messages.path, messages.request('@mock(tag=alpha,status=500)'));
    await postJson(mock.url, chat.path, chat.request('untagged'), { 'x-mock': 'tag=beta' });
    await postJson(mock.url, '/v1/unknown', {});
    const expected = {
      calls: 4,
      byPath: { '/v1/messages': 2, '/v1/chat/completions': 1, '/v1/unknown': 1 },
      byTag: { alpha: 2, beta: 1 },
    };
    expect(mock.stats()).toEqual(expected);
    // Introspection and health calls are not counted.
    expect(await getJson('/__mock/stats')).toEqual(expected);
  });

  it('returns the recorded requests of a tag with method, path, headers and raw body', async () => {
    const body = JSON.stringify(messages.request('first @mock(tag=gamma)'));
    await postJson(mock.url, messages.path, body, { 'anthropic-version': '2023-06-01', 'x-trace': 'one' });
    await postJson(mock.url, chat.path, chat.request('other @mock(tag=delta)'));
    const recorded = (await getJson('/__mock/requests?tag=gamma')) as { requests: unknown[] };
    expect(recorded.requests).toEqual([
      {
        method: 'POST',
        path: '/v1/messages',
        headers: expect.objectContaining({ 'x-trace': 'one', 'content-type': 'application/json' }),
        body,
        bodyBytes: Buffer.byteLength(body),
        tag: 'gamma',
        anthropicVersion: '2023-06-01',
        receivedAt: expect.any(Number),
      },
    ]);
    expect(mock.requests().map((request) => request.tag)).toEqual(['gamma', 'delta']);
    expect(mock.requests('nobody')).toEqual([]);
  });

  it('clears counts and recordings on POST /__mock/reset', async () => {
    await postJson(mock.url, chat.path, chat.request('@mock(tag=eps)'));
    const reset = await fetch(`${mock.url}/__mock/reset`, { method: 'POST' });
    expect(reset.status).toBe(204);
    expect(mock.stats()).toEqual({ calls: 0, byPath: {}, byTag: {} });
    expect(await getJson('/__mock/requests')).toEqual({ requests: [] });
  });

  it('keeps at most 1 MiB of a large body', async () => {
    const big = 'x'.repeat(1_200_000);
    await postJson(mock.url, chat.path, chat.request(`@mock(tag=big) ${big}`));
    const [recorded] = mock.requests('big');
    expect(recorded?.body).toHaveLength(1 << 20);
    expect(recorded).toMatchObject({ bodyTruncated: true, bodyBytes: expect.any(Number) });
    expect(recorded?.bodyBytes).toBeGreaterThan(1_200_000);
  });

  it('keeps only the most recent requests, oldest first', async () => {
    const small = await startMockUpstream({ recordCapacity: 3 });
    try {
      for (let index = 1; index <= 5; index += 1) {
        await postJson(small.url, chat.path, chat.request(`@mock(tag=n${index})`));
      }
      expect(small.requests().map((request) => request.tag)).toEqual(['n3', 'n4', 'n5']);
      expect(small.stats().calls).toBe(5);
    } finally {
      await small.close();
    }
  });
});
