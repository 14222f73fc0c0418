/**
 * Prices per usage part through the whole gateway (docs/pricing.md#alias-prices): a call whose
 * provider reports cache reads and writes is charged each part at its price, on every surface,
 * native and translated, streamed and not, on both billing engines (Postgres alone and the hot
 * tier).
 */
import { describe, expect, it } from 'vitest';
import { STACK_CATALOG } from './stack.ts';
import { bodyFor, uniqueTag, useStack } from './support.ts';

const CREDITS = 10_000_000n;
const PRICE = { input: 30n, output: 150n, cacheRead: 3n, cacheWrite: 38n, cacheWrite1h: 60n, request: 7n };

/** The stack's catalogue plus two aliases priced per part, one on each provider kind. */
const catalog = (mockUrl: string) =>
  STACK_CATALOG(mockUrl).replace(
    'packages:',
    `  - { alias: claude-cached, provider: mock-anthropic, upstream_model: upstream-claude-x1,
      protocols: [messages, chat_completions, responses], default_max_output_tokens: 64, max_output_tokens: 64,
      price: { input: 30, output: 150, cache_read: 3, cache_write: 38, cache_write_1h: 60, request: 7 } }
  - { alias: gpt-cached, provider: mock-openai, upstream_model: upstream-gpt-y2,
      protocols: [messages, chat_completions, responses], default_max_output_tokens: 64, max_output_tokens: 64,
      price: { input: 30, output: 150, cache_read: 3, cache_write: 38, cache_write_1h: 60, request: 7 } }
packages:`,
  );

// 40 uncached input tokens, 100 read from the cache, 20 written for five minutes and 8 for an hour.
const DIRECTIVES = 'input_tokens=40,cache_read=100,cache_write=20,cache_write_1h=8,output_tokens=5,words=5';
/** Anthropic reports every part apart. */
const ANTHROPIC_COST =
  40n * PRICE.input +
  100n * PRICE.cacheRead +
  20n * PRICE.cacheWrite +
  8n * PRICE.cacheWrite1h +
  5n * PRICE.output +
  PRICE.request;
/** OpenAI reports cache reads inside its prompt count and no writes: it bills them as input. */
const OPENAI_COST =
  (40n + 20n + 8n) * PRICE.input + 100n * PRICE.cacheRead + 5n * PRICE.output + PRICE.request;

const SURFACES = ['/v1/messages', '/v1/chat/completions', '/v1/responses'] as const;
const CASES = SURFACES.flatMap((path) => [
  { path, alias: 'claude-cached', cost: ANTHROPIC_COST },
  { path, alias: 'gpt-cached', cost: OPENAI_COST },
]);

describe.each([
  ['Postgres alone', { HOT_TIER: 'false' }],
  ['the hot tier', {}],
])('charged per usage part on %s', (_engine, controlPlaneEnv) => {
  const t = useStack(`gw-cache-prices-${Object.keys(controlPlaneEnv).length}`, { catalog, controlPlaneEnv });

  it.each(CASES)('$path on $alias, streamed and not', async ({ path, alias, cost }) => {
    for (const stream of [false, true]) {
      const key = await t.key({ credits: CREDITS });
      const tag = uniqueTag('cp');
      const extra = stream
        ? {
            stream: true,
            ...(path === '/v1/chat/completions' ? { stream_options: { include_usage: true } } : {}),
          }
        : {};
      const reply = await t.post(path, key.secret, bodyFor(path, alias, `tag=${tag},${DIRECTIVES}`, extra));
      expect(reply.status, reply.text).toBe(200);
      await t.stack.settled();
      expect(await t.stack.balances(key.accountId)).toMatchObject({
        credits: CREDITS - cost,
        reservedCredits: 0n,
      });
    }
  });
});
