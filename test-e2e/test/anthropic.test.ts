/**
 * The official `@anthropic-ai/sdk` against the gateway (base URL `{gateway}`): messages streamed
 * and not, the `.stream()` helper, count_tokens, tool use with a tool_result turn; the key sent as
 * `x-api-key` (apiKey) and as `Authorization: Bearer` (authToken). Every call is charged exactly
 * the usage the mock reported.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { anthropicClient, mockRequests } from '../src/clients.ts';
import { signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger, expectSettledInCredits, Meter } from '../src/ledger.ts';
import { type E2EStack, PRICES, PROVIDER_KEY, startStack, UPSTREAM_MODELS } from '../src/stack.ts';
import { WEATHER_ARGUMENTS, WEATHER_PARAMETERS } from '../src/tools.ts';

let stack: E2EStack;
let meter: Meter;
let secret: string;
/** Sends the key as `x-api-key`. */
let withApiKey: Anthropic;
/** Sends the key as `Authorization: Bearer`. */
let withAuthToken: Anthropic;

beforeAll(async () => {
  stack = await startStack('anthropic', { fromImages: true });
  // This customer's account was opened by the operator (create-account), not by signing up.
  const customer = await signUpCustomer(stack, { credits: 10_000_000n }, { byOperator: true });
  ({ secret } = await customer.createKey({ name: 'anthropic client', scope: ['claude-e2e'] }));
  withApiKey = anthropicClient(stack.gatewayUrl, { apiKey: secret });
  withAuthToken = anthropicClient(stack.gatewayUrl, { authToken: secret });
  meter = new Meter(stack, customer.accountId);
});

// Each test accounts for its own calls only, even after an earlier test failed half-way.
beforeEach(() => meter.mark());

afterAll(() => closeCheckingLedger(stack));

const weatherTool: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Current weather of a city',
  input_schema: { ...WEATHER_PARAMETERS, type: 'object' },
};

describe('messages', () => {
  it('answers a non-streamed call (x-api-key) as the alias and charges the reported usage', async () => {
    const tag = `messages-${Date.now()}`;
    const message = await withApiKey.messages.create({
      model: 'claude-e2e',
      max_tokens: 128,
      system: 'Be brief.',
      messages: [{ role: 'user', content: `Hello @mock(tag=${tag},input_tokens=412,output_tokens=5)` }],
    });
    expect(message.type).toBe('message');
    expect(message.role).toBe('assistant');
    expect(message.model).toBe('claude-e2e');
    expect(message.stop_reason).toBe('end_turn');
    expect(message.content).toEqual([{ type: 'text', text: 'Hello from the mock upstream.' }]);
    expect(message.usage).toMatchObject({ input_tokens: 412, output_tokens: 5 });

    // The provider got its own model id and the operator's credential, never the customer's key.
    const [upstream] = await mockRequests(stack.mockUrl, tag);
    expect(JSON.parse(upstream?.body ?? '{}').model).toBe(UPSTREAM_MODELS.claude);
    expect(upstream?.headers['x-api-key']).toBe(PROVIDER_KEY);
    expect(JSON.stringify(upstream?.headers)).not.toContain(secret);

    const [row] = await meter.finished();
    expect(row).toMatchObject({ alias: 'claude-e2e', surface: 'messages' });
    expectSettledInCredits(row!, PRICES['claude-e2e'], { input: 412, output: 5 });
  });

  it('answers with the key as a bearer token (authToken) too', async () => {
    const message = await withAuthToken.messages.create({
      model: 'claude-e2e',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hi @mock(input_tokens=20,output_tokens=2)' }],
    });
    expect(message.content[0]).toEqual({ type: 'text', text: 'Hello from' });
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['claude-e2e'], { input: 20, output: 2 });
  });

  it('streams the raw events, with usage in message_start and message_delta', async () => {
    const stream = await withAuthToken.messages.create({
      model: 'claude-e2e',
      max_tokens: 64,
      stream: true,
      messages: [{ role: 'user', content: 'Stream @mock(words=5,input_tokens=77,output_tokens=5)' }],
    });
    const events: Anthropic.RawMessageStreamEvent[] = [];
    for await (const event of stream) events.push(event);

    expect(events[0]?.type).toBe('message_start');
    if (events[0]?.type !== 'message_start') throw new Error('no message_start');
    expect(events[0].message.model).toBe('claude-e2e');
    expect(events[0].message.usage.input_tokens).toBe(77);
    expect(events.at(-1)?.type).toBe('message_stop');
    const delta = events.find((event) => event.type === 'message_delta');
    if (delta?.type !== 'message_delta') throw new Error('no message_delta');
    expect(delta.usage.output_tokens).toBe(5);
    expect(delta.delta.stop_reason).toBe('end_turn');
    const text = events.flatMap((event) =>
      event.type === 'content_block_delta' && event.delta.type === 'text_delta' ? [event.delta.text] : [],
    );
    expect(text.join('')).toBe('Hello from the mock upstream.');
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['claude-e2e'], { input: 77, output: 5 });
  });

  it('accumulates a stream with the .stream() helper into the final message', async () => {
    const stream = withApiKey.messages.stream({
      model: 'claude-e2e',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Helper @mock(words=3,input_tokens=31,output_tokens=3)' }],
    });
    const seen: string[] = [];
    stream.on('text', (text) => seen.push(text));
    const final = await stream.finalMessage();
    expect(final.model).toBe('claude-e2e');
    expect(final.content).toMatchObject([{ type: 'text', text: 'Hello from the' }]);
    expect(seen.join('')).toBe('Hello from the');
    expect(final.usage).toMatchObject({ input_tokens: 31, output_tokens: 3 });
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['claude-e2e'], { input: 31, output: 3 });
  });
});

describe('beta messages', () => {
  it('serves the beta namespace (?beta=true, anthropic-beta header) as Claude Code calls it', async () => {
    const tag = `beta-${Date.now()}`;
    const message = await withApiKey.beta.messages.create({
      model: 'claude-e2e',
      max_tokens: 64,
      betas: ['interleaved-thinking-2025-05-14'],
      messages: [{ role: 'user', content: `Hi @mock(tag=${tag},input_tokens=18,output_tokens=5)` }],
    });
    expect(message.content).toMatchObject([{ type: 'text', text: 'Hello from the mock upstream.' }]);
    const [upstream] = await mockRequests(stack.mockUrl, tag);
    expect(upstream?.headers['anthropic-beta']).toBe('interleaved-thinking-2025-05-14');
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['claude-e2e'], { input: 18, output: 5 });

    const counted = await withAuthToken.beta.messages.countTokens({
      model: 'claude-e2e',
      betas: ['interleaved-thinking-2025-05-14'],
      messages: [{ role: 'user', content: 'Hello' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
    await meter.expectUntouched();
  });
});

describe('a long answer', () => {
  it('relays 2,000 streamed deltas in order and charges the reported figures', async () => {
    const final = await withApiKey.messages
      .stream({
        model: 'claude-e2e',
        max_tokens: 4096,
        messages: [{ role: 'user', content: 'Long @mock(words=2000,input_tokens=900,output_tokens=2000)' }],
      })
      .finalMessage();
    const block = final.content[0];
    if (block?.type !== 'text') throw new Error('no text');
    const words = block.text.split(' ');
    expect(words).toHaveLength(2000);
    expect(words.slice(0, 6).join(' ')).toBe('Hello from the mock upstream. Hello');
    expect(final.usage).toMatchObject({ input_tokens: 900, output_tokens: 2000 });
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['claude-e2e'], { input: 900, output: 2000 });
  });
});

describe('prompt caching figures', () => {
  it('meters cache reads and writes apart, each at its price (here the input price), streamed and not', async () => {
    const directives = 'input_tokens=100,cache_read=40,cache_write=25,output_tokens=6';
    const message = await withApiKey.messages.create({
      model: 'claude-e2e',
      max_tokens: 64,
      messages: [{ role: 'user', content: `Cached @mock(${directives})` }],
    });
    expect(message.usage).toMatchObject({
      input_tokens: 100,
      cache_read_input_tokens: 40,
      cache_creation_input_tokens: 25,
      output_tokens: 6,
    });
    const [plain] = await meter.finished();
    expectSettledInCredits(plain!, PRICES['claude-e2e'], { input: 165, output: 6 });
    expect(plain).toMatchObject({ inputTokens: 100n, cacheReadTokens: 40n, cacheWriteTokens: 25n });

    const final = await withAuthToken.messages
      .stream({
        model: 'claude-e2e',
        max_tokens: 64,
        messages: [{ role: 'user', content: `Cached @mock(${directives})` }],
      })
      .finalMessage();
    expect(final.usage).toMatchObject({ input_tokens: 100, cache_read_input_tokens: 40, output_tokens: 6 });
    const [streamed] = await meter.finished();
    expectSettledInCredits(streamed!, PRICES['claude-e2e'], { input: 165, output: 6 });
  });
});

describe('tool use', () => {
  it('returns a tool_use block, then answers the tool_result turn', async () => {
    const question = 'Weather in Oslo?';
    const first = await withApiKey.messages.create({
      model: 'claude-e2e',
      max_tokens: 256,
      tools: [weatherTool],
      messages: [{ role: 'user', content: `${question} @mock(tool,input_tokens=140,output_tokens=12)` }],
    });
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((block) => block.type === 'tool_use');
    if (use?.type !== 'tool_use') throw new Error('no tool_use block');
    expect(use.name).toBe('get_weather');
    expect(use.input).toEqual(WEATHER_ARGUMENTS);
    const [firstRow] = await meter.finished();
    expectSettledInCredits(firstRow!, PRICES['claude-e2e'], { input: 140, output: 12 });

    const second = await withApiKey.messages.create({
      model: 'claude-e2e',
      max_tokens: 256,
      tools: [weatherTool],
      messages: [
        { role: 'user', content: question },
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: use.id,
              content: '21 degrees @mock(input_tokens=190,output_tokens=5)',
            },
          ],
        },
      ],
    });
    expect(second.stop_reason).toBe('end_turn');
    expect(second.content).toEqual([{ type: 'text', text: 'Hello from the mock upstream.' }]);
    const [secondRow] = await meter.finished();
    expectSettledInCredits(secondRow!, PRICES['claude-e2e'], { input: 190, output: 5 });
  });

  it('streams a tool_use block whose input the helper reassembles', async () => {
    const stream = withAuthToken.messages.stream({
      model: 'claude-e2e',
      max_tokens: 256,
      tools: [weatherTool],
      messages: [{ role: 'user', content: 'Weather? @mock(tool,input_tokens=66,output_tokens=9)' }],
    });
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    const use = final.content.find((block) => block.type === 'tool_use');
    if (use?.type !== 'tool_use') throw new Error('no tool_use block');
    expect(use.input).toEqual(WEATHER_ARGUMENTS);
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['claude-e2e'], { input: 66, output: 9 });
  });
});

describe('count_tokens', () => {
  it('estimates input tokens locally: no reservation, no upstream call', async () => {
    const before = (await (await fetch(`${stack.mockUrl}/__mock/stats`)).json()) as { calls: number };
    const short = await withApiKey.messages.countTokens({
      model: 'claude-e2e',
      messages: [{ role: 'user', content: 'Hello there' }],
    });
    const long = await withAuthToken.messages.countTokens({
      model: 'claude-e2e',
      system: 'You are a helpful assistant.',
      tools: [weatherTool],
      messages: [{ role: 'user', content: 'Hello there, '.repeat(200) }],
    });
    expect(Number.isInteger(short.input_tokens) && short.input_tokens > 0).toBe(true);
    expect(long.input_tokens).toBeGreaterThan(short.input_tokens + 200);
    const after = (await (await fetch(`${stack.mockUrl}/__mock/stats`)).json()) as { calls: number };
    expect(after.calls).toBe(before.calls);
    await meter.expectUntouched();
  });
});
