/**
 * The official `openai` client on chat completions (base URL `{gateway}/v1`): streamed and not,
 * the usage chunk only when asked, the stream helper, tool calls and their results, package
 * tokens, the max-output clamp. Every call is charged exactly the usage the mock reported (fixed
 * per request with `@mock(input_tokens=N,output_tokens=M)`).
 */
import type OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mockRequests, openaiClient } from '../src/clients.ts';
import { signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger, expectSettledInCredits, Meter } from '../src/ledger.ts';
import { type E2EStack, PRICES, startStack, UPSTREAM_MODELS } from '../src/stack.ts';
import { WEATHER_ARGUMENTS, WEATHER_PARAMETERS } from '../src/tools.ts';

let stack: E2EStack;
let meter: Meter;
let openai: OpenAI;

beforeAll(async () => {
  stack = await startStack('openai-chat', { fromImages: true });
  const customer = await signUpCustomer(stack, { credits: 10_000_000n, packages: ['e2e-tokens'] });
  const { secret } = await customer.createKey({ name: 'openai client' });
  openai = openaiClient(stack.gatewayUrl, secret);
  meter = new Meter(stack, customer.accountId);
});

// Each test accounts for its own calls only, even after an earlier test failed half-way.
beforeEach(() => meter.mark());

afterAll(() => closeCheckingLedger(stack));

const weatherTool = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Current weather of a city', parameters: WEATHER_PARAMETERS },
};

describe('chat completions', () => {
  it('answers a non-streamed call as the alias and charges the reported usage', async () => {
    const tag = `chat-${Date.now()}`;
    const completion = await openai.chat.completions.create({
      model: 'gpt-e2e',
      max_tokens: 64,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: `Hello @mock(tag=${tag},input_tokens=321,output_tokens=17)` },
      ],
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('gpt-e2e');
    expect(completion.choices[0]?.message.content).toMatch(/^Hello from the mock upstream\./);
    expect(completion.usage).toMatchObject({ prompt_tokens: 321, completion_tokens: 17, total_tokens: 338 });

    const [upstream] = await mockRequests(stack.mockUrl, tag);
    expect(JSON.parse(upstream?.body ?? '{}').model).toBe(UPSTREAM_MODELS.gpt);
    const [row] = await meter.finished();
    expect(row).toMatchObject({ alias: 'gpt-e2e', surface: 'chat_completions' });
    expectSettledInCredits(row!, PRICES['gpt-e2e'], { input: 321, output: 17 });
  });

  it('streams without a usage chunk when the client did not ask for one, and still meters it', async () => {
    const tag = `chat-stream-${Date.now()}`;
    const stream = await openai.chat.completions.create({
      model: 'gpt-e2e',
      stream: true,
      messages: [
        { role: 'user', content: `Stream @mock(tag=${tag},words=6,input_tokens=40,output_tokens=6)` },
      ],
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);

    expect(chunks.length).toBeGreaterThan(6);
    expect(chunks.every((chunk) => chunk.model === 'gpt-e2e')).toBe(true);
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe(
      'Hello from the mock upstream. Hello',
    );
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop');
    // The client did not ask: no usage figures and no choice-less usage chunk reach it.
    expect(chunks.filter((chunk) => chunk.usage != null || chunk.choices.length === 0)).toEqual([]);

    // The gateway asked the provider for usage on the client's behalf, and charged it.
    const [upstream] = await mockRequests(stack.mockUrl, tag);
    expect(JSON.parse(upstream?.body ?? '{}').stream_options).toEqual({ include_usage: true });
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['gpt-e2e'], { input: 40, output: 6 });
  });

  it('keeps the usage chunk from a client that said include_usage: false', async () => {
    const stream = await openai.chat.completions.create({
      model: 'gpt-e2e',
      stream: true,
      stream_options: { include_usage: false },
      messages: [{ role: 'user', content: 'Stream @mock(words=2,input_tokens=14,output_tokens=2)' }],
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.filter((chunk) => chunk.usage != null || chunk.choices.length === 0)).toEqual([]);
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['gpt-e2e'], { input: 14, output: 2 });
  });

  it('streams the usage chunk last when the client asked for it', async () => {
    const stream = await openai.chat.completions.create({
      model: 'gpt-e2e',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Stream @mock(words=3,input_tokens=55,output_tokens=3)' }],
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);

    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toMatchObject({ prompt_tokens: 55, completion_tokens: 3, total_tokens: 58 });
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage == null)).toBe(true);
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['gpt-e2e'], { input: 55, output: 3 });
  });

  it('accumulates a stream with the SDK helper into the final completion', async () => {
    const runner = openai.chat.completions.stream({
      model: 'gpt-e2e',
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Helper @mock(words=5,input_tokens=12,output_tokens=5)' }],
    });
    const final = await runner.finalChatCompletion();
    expect(final.choices[0]?.message.content).toBe('Hello from the mock upstream.');
    expect(final.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 5 });
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['gpt-e2e'], { input: 12, output: 5 });
  });

  it('returns a tool call, then answers the follow-up turn with the tool result', async () => {
    const question = 'Weather in Oslo?';
    const completion = await openai.chat.completions.create({
      model: 'gpt-e2e',
      tools: [weatherTool],
      messages: [{ role: 'user', content: `${question} @mock(tool,input_tokens=90,output_tokens=14)` }],
    });
    const choice = completion.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    const call = choice?.message.tool_calls?.[0];
    expect(call?.type).toBe('function');
    if (call?.type !== 'function') throw new Error('no function call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual(WEATHER_ARGUMENTS);
    expect(completion.usage).toMatchObject({ prompt_tokens: 90, completion_tokens: 14 });
    const [first] = await meter.finished();
    expectSettledInCredits(first!, PRICES['gpt-e2e'], { input: 90, output: 14 });

    const followUp = await openai.chat.completions.create({
      model: 'gpt-e2e',
      tools: [weatherTool],
      // The history as the application keeps it: the question, the call, its result.
      messages: [
        { role: 'user', content: question },
        choice!.message,
        {
          role: 'tool',
          tool_call_id: call.id,
          content: '{"celsius": 21} @mock(input_tokens=130,output_tokens=9)',
        },
      ],
    });
    expect(followUp.choices[0]?.finish_reason).toBe('stop');
    expect(followUp.choices[0]?.message.content).toMatch(/^Hello from/);
    const [second] = await meter.finished();
    expectSettledInCredits(second!, PRICES['gpt-e2e'], { input: 130, output: 9 });
  });

  it('streams a tool call whose arguments the SDK reassembles', async () => {
    const runner = openai.chat.completions.stream({
      model: 'gpt-e2e',
      tools: [weatherTool],
      messages: [{ role: 'user', content: 'Weather? @mock(tool,input_tokens=70,output_tokens=11)' }],
    });
    const final = await runner.finalChatCompletion();
    const call = final.choices[0]?.message.tool_calls?.[0];
    if (call?.type !== 'function') throw new Error('no function call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual(WEATHER_ARGUMENTS);
    expect(final.choices[0]?.finish_reason).toBe('tool_calls');
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['gpt-e2e'], { input: 70, output: 11 });
  });

  it('meters cached prompt tokens once: they are part of prompt_tokens', async () => {
    const stream = await openai.chat.completions.create({
      model: 'gpt-e2e',
      stream: true,
      stream_options: { include_usage: true },
      // 80 uncached and 120 cached: OpenAI's prompt count holds both.
      messages: [{ role: 'user', content: 'Cached @mock(input_tokens=80,cache_read=120,output_tokens=4)' }],
    });
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    expect(usage).toMatchObject({ prompt_tokens: 200, prompt_tokens_details: { cached_tokens: 120 } });
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['gpt-e2e'], { input: 200, output: 4 });
    // Kept apart, each counted once.
    expect(row).toMatchObject({ inputTokens: 80n, cacheReadTokens: 120n });
  });

  it('pays a token-only alias from the package, to the token', async () => {
    const completion = await openai.chat.completions.create({
      model: 'gpt-tokens-e2e',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Tokens @mock(input_tokens=250,output_tokens=30)' }],
    });
    expect(completion.model).toBe('gpt-tokens-e2e');
    const [row] = await meter.finished();
    expect(row).toMatchObject({
      status: 'settled',
      inputTokens: 250n,
      outputTokens: 30n,
      chargedTokens: 280n,
      chargedCredits: 0n,
    });
  });
});

describe('max output', () => {
  it('clamps a maximum above the alias ceiling: the answer stops there and only that is charged', async () => {
    const tag = `clamp-${Date.now()}`;
    const completion = await openai.chat.completions.create({
      model: 'gpt-tokens-e2e',
      max_tokens: 3000,
      messages: [{ role: 'user', content: `Long @mock(tag=${tag},words=1500,input_tokens=40)` }],
    });
    expect(completion.choices[0]?.finish_reason).toBe('length');
    expect(completion.usage).toMatchObject({ prompt_tokens: 40, completion_tokens: 1000 });
    const [upstream] = await mockRequests(stack.mockUrl, tag);
    expect(JSON.parse(upstream?.body ?? '{}').max_tokens).toBe(1000);
    const [row] = await meter.finished();
    expect(row).toMatchObject({
      status: 'settled',
      inputTokens: 40n,
      outputTokens: 1000n,
      chargedTokens: 1040n,
    });
  });
});
