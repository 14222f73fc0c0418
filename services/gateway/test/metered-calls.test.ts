import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDER_KEY, startTestStack, type TestStack } from './stack.ts';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack('gw-metered');
});
afterAll(async () => {
  expect(await stack.ledgerProblems()).toEqual([]);
  await stack.close();
});

async function post(path: string, secret: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${stack.gatewayUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe('a metered call on each surface', () => {
  it('forwards to the upstream model, answers as the alias, and charges exactly the reported usage', async () => {
    const key = await stack.createFundedKey({ credits: 1_000_000n });
    const cases = [
      { path: '/v1/messages', alias: 'claude-test', upstream: 'upstream-claude-x1', prices: [3n, 15n] },
      { path: '/v1/chat/completions', alias: 'gpt-test', upstream: 'upstream-gpt-y2', prices: [2n, 8n] },
      { path: '/v1/responses', alias: 'gpt-test', upstream: 'upstream-gpt-y2', prices: [2n, 8n] },
    ];
    let spent = 0n;
    for (const { path, alias, upstream, prices } of cases) {
      const tag = `${path}-${Date.now()}`;
      const body =
        path === '/v1/responses'
          ? { model: alias, input: `hello @mock(tag=${tag},input_tokens=123,output_tokens=45)` }
          : {
              model: alias,
              max_tokens: 50,
              messages: [
                { role: 'user', content: `hello @mock(tag=${tag},input_tokens=123,output_tokens=45)` },
              ],
            };
      const response = await post(path, key.secret, body);
      expect(response.status, response.text).toBe(200);
      const answer = JSON.parse(response.text);
      expect(answer.model).toBe(alias);
      expect(response.text).not.toContain(upstream);
      const [recorded] = stack.mock.requests(tag);
      expect(recorded).toBeDefined();
      expect(JSON.parse(recorded!.body).model).toBe(upstream);
      expect(JSON.stringify(recorded!.headers)).toContain(PROVIDER_KEY);
      spent += 123n * prices[0]! + 45n * prices[1]!;
    }
    await stack.settled();
    expect(await stack.balances(key.accountId)).toMatchObject({
      credits: 1_000_000n - spent,
      reservedCredits: 0n,
    });
  });
});
