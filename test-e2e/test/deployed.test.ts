/**
 * The official clients against an already running deployment (e.g. `docker-compose up` of
 * deploy/docker-compose.yml: three gateways behind nginx). Runs only when E2E_DEPLOYED_GATEWAY_URL
 * and E2E_DEPLOYED_API_KEY are set (scripts/compose-e2e.sh sets them); the key's account needs
 * credit for the example catalogue's `gpt-mock` and `claude-mock` aliases. Every call's charge is
 * checked on the key status endpoint: price × the usage the mock reported, to the credit.
 */
import { describe, expect, it } from 'vitest';
import { anthropicClient, openaiClient } from '../src/clients.ts';

const gatewayUrl = process.env.E2E_DEPLOYED_GATEWAY_URL ?? '';
const apiKey = process.env.E2E_DEPLOYED_API_KEY ?? '';
// The example catalogue's prices (deploy/catalog.example.yaml), credits per token.
const GPT = { input: 2n, output: 8n };
const CLAUDE = { input: 3n, output: 15n };

async function remainingCredits(): Promise<bigint> {
  const response = await fetch(`${gatewayUrl}/v1/key/status`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { remaining: { credits: string }; reserved: { credits: string } };
  return BigInt(body.remaining.credits);
}

/** Settlement leaves the response path: wait until the balance has moved by exactly `spent`. */
async function expectSpent(before: bigint, spent: bigint): Promise<void> {
  const deadline = Date.now() + 15_000;
  let now = await remainingCredits();
  while (before - now !== spent && Date.now() < deadline) {
    // The deployed services announce no settlement: read the balance again.
    await new Promise((resolve) => setTimeout(resolve, 100));
    now = await remainingCredits();
  }
  expect(before - now).toBe(spent);
}

const cost = (price: { input: bigint; output: bigint }, input: number, output: number) =>
  price.input * BigInt(input) + price.output * BigInt(output);

describe.skipIf(!gatewayUrl || !apiKey)('a deployed stack behind a load balancer', () => {
  it('serves chat completions, streamed and not, through the official openai client', async () => {
    const openai = openaiClient(gatewayUrl, apiKey);
    const before = await remainingCredits();
    const completion = await openai.chat.completions.create({
      model: 'gpt-mock',
      max_tokens: 32,
      messages: [{ role: 'user', content: 'Hello @mock(input_tokens=120,output_tokens=9)' }],
    });
    expect(completion.model).toBe('gpt-mock');
    expect(completion.usage).toMatchObject({ prompt_tokens: 120, completion_tokens: 9 });
    const stream = await openai.chat.completions.create({
      model: 'gpt-mock',
      max_tokens: 32,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Stream @mock(input_tokens=80,output_tokens=12)' }],
    });
    let usage: { prompt_tokens: number; completion_tokens: number } | undefined;
    let text = '';
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(usage).toMatchObject({ prompt_tokens: 80, completion_tokens: 12 });
    await expectSpent(before, cost(GPT, 120, 9) + cost(GPT, 80, 12));
  });

  it('serves responses through the official openai client', async () => {
    const openai = openaiClient(gatewayUrl, apiKey);
    const before = await remainingCredits();
    const response = await openai.responses.create({
      model: 'gpt-mock',
      max_output_tokens: 32,
      input: 'Hi @mock(input_tokens=50,output_tokens=7)',
    });
    expect(response.usage).toMatchObject({ input_tokens: 50, output_tokens: 7 });
    await expectSpent(before, cost(GPT, 50, 7));
  });

  it('serves messages, streamed and not, through the official anthropic client', async () => {
    const anthropic = anthropicClient(gatewayUrl, { apiKey });
    const before = await remainingCredits();
    const message = await anthropic.messages.create({
      model: 'claude-mock',
      max_tokens: 32,
      messages: [{ role: 'user', content: 'Hello @mock(input_tokens=64,output_tokens=5)' }],
    });
    expect(message.model).toBe('claude-mock');
    expect(message.usage).toMatchObject({ input_tokens: 64, output_tokens: 5 });
    const final = await anthropic.messages
      .stream({
        model: 'claude-mock',
        max_tokens: 32,
        messages: [{ role: 'user', content: 'Stream @mock(input_tokens=40,output_tokens=11)' }],
      })
      .finalMessage();
    expect(final.usage).toMatchObject({ input_tokens: 40, output_tokens: 11 });
    await expectSpent(before, cost(CLAUDE, 64, 5) + cost(CLAUDE, 40, 11));
  });

  it('spreads concurrent calls over the gateways and charges each exactly once', async () => {
    const openai = openaiClient(gatewayUrl, apiKey);
    const before = await remainingCredits();
    const calls = 24;
    const answers = await Promise.all(
      Array.from({ length: calls }, (_, index) =>
        openai.chat.completions.create({
          model: 'gpt-mock',
          max_tokens: 16,
          messages: [{ role: 'user', content: `Call ${index} @mock(input_tokens=10,output_tokens=3)` }],
        }),
      ),
    );
    expect(answers.every((answer) => answer.usage?.completion_tokens === 3)).toBe(true);
    await expectSpent(before, BigInt(calls) * cost(GPT, 10, 3));
  });
});
