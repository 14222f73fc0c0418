/**
 * Translated calls through the whole gateway (control plane, Redis, mock upstream): every surface
 * on an alias of the other provider kind, streamed and not. Each asserts the answer in the
 * caller's protocol, what reached the upstream in its own, and that the usage the caller was told
 * is exactly what the ledger charged.
 */
import { describe, expect, it } from 'vitest';
import { bodyFor, type Reply, sseData, toldUsage, uniqueTag, useStack } from './support.ts';

const t = useStack('gw-translation');
const CREDITS = 10_000_000n;
const PRICES: Record<string, [bigint, bigint]> = { 'claude-all': [3n, 15n], 'gpt-all': [2n, 8n] };

/** The usage a streamed answer told the caller, read the way each official client reads it. */
function streamedUsage(path: string, text: string): Record<string, number> {
  const events = sseData(text);
  if (path === '/v1/messages') {
    const delta = events.find((event) => event.type === 'message_delta')!;
    return delta.usage as Record<string, number>;
  }
  if (path === '/v1/chat/completions') {
    return events.find((event) => event.usage && (event.choices as unknown[]).length === 0)!.usage as Record<
      string,
      number
    >;
  }
  const done = events.find((event) => event.type === 'response.completed')!;
  return (done.response as { usage: Record<string, number> }).usage;
}

function streamedText(path: string, text: string): string {
  const events = sseData(text);
  if (path === '/v1/messages') {
    return events
      .filter((event) => event.type === 'content_block_delta')
      .map((event) => (event.delta as { text?: string }).text ?? '')
      .join('');
  }
  if (path === '/v1/chat/completions') {
    return events
      .map((event) => (event.choices as Array<{ delta: { content?: string } }>)[0]?.delta.content ?? '')
      .join('');
  }
  return events
    .filter((event) => event.type === 'response.output_text.delta')
    .map((event) => event.delta as string)
    .join('');
}

function answerText(path: string, reply: Reply): string {
  const body = JSON.parse(reply.text);
  if (path === '/v1/messages')
    return body.content.map((block: { text?: string }) => block.text ?? '').join('');
  if (path === '/v1/chat/completions') return body.choices[0].message.content;
  return body.output
    .flatMap((item: { content?: Array<{ text: string }> }) => item.content ?? [])
    .map((part: { text: string }) => part.text)
    .join('');
}

const CASES = [
  { path: '/v1/messages', alias: 'gpt-all', upstreamPath: '/v1/chat/completions' },
  { path: '/v1/chat/completions', alias: 'claude-all', upstreamPath: '/v1/messages' },
  { path: '/v1/responses', alias: 'claude-all', upstreamPath: '/v1/messages' },
] as const;

describe('a call on a surface its provider does not speak', () => {
  it.each(CASES)(
    '$path on $alias: answered in the caller protocol and charged what it was told',
    async ({ path, alias, upstreamPath }) => {
      for (const stream of [false, true]) {
        const key = await t.key({ credits: CREDITS });
        const tag = uniqueTag('tr');
        const reply = await t.post(
          path,
          key.secret,
          bodyFor(
            path,
            alias,
            `tag=${tag},cache_read=5,words=3`,
            stream
              ? {
                  stream: true,
                  ...(path === '/v1/chat/completions' ? { stream_options: { include_usage: true } } : {}),
                }
              : {},
          ),
        );
        expect(reply.status, reply.text).toBe(200);
        const [recorded] = t.stack.mock.requests(tag);
        expect(recorded?.path).toBe(upstreamPath);
        expect(JSON.parse(recorded!.body).model).not.toBe(alias);
        expect(reply.text).not.toContain('upstream-');
        const usage = stream ? streamedUsage(path, reply.text) : JSON.parse(reply.text).usage;
        expect(stream ? streamedText(path, reply.text) : answerText(path, reply)).toBe('Hello from the');
        const told = toldUsage(path, usage);
        expect(told.output).toBe(3);
        await t.stack.settled();
        const [inputPrice, outputPrice] = PRICES[alias]!;
        expect(await t.stack.balances(key.accountId)).toMatchObject({
          credits: CREDITS - (BigInt(told.input) * inputPrice + BigInt(told.output) * outputPrice),
          reservedCredits: 0n,
        });
      }
    },
  );
});

describe('before any reservation', () => {
  it('refuses what the upstream cannot express with unsupported_parameter naming the field, free', async () => {
    const key = await t.key({ credits: CREDITS });
    const calls = t.upstreamCalls();
    const cases: Array<[string, string, Record<string, unknown>, string]> = [
      ['/v1/messages', 'gpt-all', { top_k: 3 }, 'top_k'],
      ['/v1/chat/completions', 'claude-all', { seed: 1 }, 'seed'],
      ['/v1/responses', 'claude-all', { previous_response_id: 'resp_1' }, 'previous_response_id'],
      ['/v1/responses', 'claude-all', { tools: [{ type: 'web_search' }] }, 'tools[0]'],
    ];
    for (const [path, alias, extra, field] of cases) {
      const message = t.expectError(
        await t.post(path, key.secret, bodyFor(path, alias, '', extra)),
        400,
        'unsupported_parameter',
      );
      expect(message).toContain(field);
    }
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });
  });

  it('counts tokens locally for an alias of either kind', async () => {
    const key = await t.key({ credits: CREDITS });
    const calls = t.upstreamCalls();
    for (const alias of ['gpt-all', 'claude-all']) {
      const reply = await t.post(
        '/v1/messages/count_tokens',
        key.secret,
        bodyFor('/v1/messages/count_tokens', alias),
      );
      expect(reply.status, reply.text).toBe(200);
      expect(JSON.parse(reply.text).input_tokens).toBeGreaterThan(0);
    }
    expect(t.upstreamCalls()).toBe(calls);
  });
});
