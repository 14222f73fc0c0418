/**
 * Prompt-cache affinity on both billing engines (docs/routing.md): with the hot tier the control
 * plane reads the conversation's record in the step that reserves; with Postgres alone the gateway
 * reads it itself. Either way every turn of a conversation goes where its first turn went.
 */
import { describe, expect, it } from 'vitest';
import { STACK_CATALOG } from './stack.ts';
import { useStack } from './support.ts';

/** The stack's catalogue plus an alias served by two upstreams of one priority and weight. */
const catalog = (mockUrl: string) =>
  STACK_CATALOG(mockUrl).replace(
    'packages:',
    `  - alias: gpt-two-ways
    upstreams:
      - { provider: mock-openai, upstream_model: upstream-way-a }
      - { provider: mock-openai, upstream_model: upstream-way-b }
    protocols: [chat_completions]
    price: { input: 2, output: 8 }
    default_max_output_tokens: 16
    max_output_tokens: 16
packages:`,
  );

describe.each([
  ['Postgres alone', { HOT_TIER: 'false' }],
  ['the hot tier', {}],
])('affinity with %s', (_engine, controlPlaneEnv) => {
  const t = useStack(`gw-affinity-${Object.keys(controlPlaneEnv).length}`, { catalog, controlPlaneEnv });

  it('keeps every turn of a conversation on the upstream of its first, while conversations spread', async () => {
    const key = await t.key({ credits: 10_000_000n, limits: { requestsPerMinute: 1_000, concurrency: 20 } });
    const served = async (requestIds: string[]) => {
      await t.stack.settled();
      const rows = await t.stack.controlPlane.deps.db
        .selectFrom('reservation_routes')
        .select(['reservation_id', 'upstream_model'])
        .where('reservation_id', 'in', requestIds)
        .execute();
      const byId = new Map(rows.map((row) => [row.reservation_id, row.upstream_model]));
      return requestIds.map((id) => byId.get(id));
    };
    const conversations = await Promise.all(
      Array.from({ length: 20 }, async (_, index) => {
        const ids: string[] = [];
        const messages = [
          { role: 'system', content: 'You are the affinity test.' },
          { role: 'user', content: `Conversation ${index} of ${key.keyId}` },
        ];
        for (let turn = 1; turn <= 6; turn++) {
          const reply = await t.post('/v1/chat/completions', key.secret, {
            model: 'gpt-two-ways',
            messages: [...messages, { role: 'user', content: `Turn ${turn} @mock(output_tokens=2)` }],
          });
          expect(reply.status).toBe(200);
          ids.push(reply.headers.get('x-request-id')!);
        }
        return served(ids);
      }),
    );
    for (const turns of conversations) {
      expect(turns[0]).toMatch(/^upstream-way-[ab]$/);
      expect(turns).toEqual(Array(turns.length).fill(turns[0]));
    }
    // Twenty conversations at even weights (at most 20 calls in flight, the key's concurrency): on
    // one upstream all together once in 2^19 runs, so the spread is not left to luck.
    expect(new Set(conversations.map((turns) => turns[0])).size).toBe(2);
  });
});
