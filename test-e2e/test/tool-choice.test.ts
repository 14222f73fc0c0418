/**
 * A forced tool_choice through the gateway with the official clients, on all three protocols,
 * streamed and not: the mock honours it as a provider does (no directive asks for the tool), the
 * client gets the named (or first) tool's call with arguments from its schema, and each call is
 * settled at the reported usage.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { anthropicClient, openaiClient } from '../src/clients.ts';
import { signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger, expectSettledInCredits, Meter } from '../src/ledger.ts';
import { type E2EStack, PRICES, startStack } from '../src/stack.ts';
import { WEATHER_ARGUMENTS, WEATHER_PARAMETERS } from '../src/tools.ts';

let stack: E2EStack;
let meter: Meter;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  stack = await startStack('tool-choice', { fromImages: true });
  const customer = await signUpCustomer(stack, { credits: 10_000_000n });
  const { secret } = await customer.createKey({ name: 'tool choice' });
  openai = openaiClient(stack.gatewayUrl, secret);
  anthropic = anthropicClient(stack.gatewayUrl, { apiKey: secret });
  meter = new Meter(stack, customer.accountId);
});

beforeEach(() => meter.mark());

afterAll(() => closeCheckingLedger(stack));

const TIME_PARAMETERS = { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] };
const usage = (input: number, output: number) => `@mock(input_tokens=${input},output_tokens=${output})`;

describe('Anthropic messages with tool_choice', () => {
  const tools: Anthropic.Tool[] = [
    {
      name: 'get_time',
      description: 'Time in a zone',
      input_schema: TIME_PARAMETERS as Anthropic.Tool.InputSchema,
    },
    {
      name: 'get_weather',
      description: 'Weather',
      input_schema: WEATHER_PARAMETERS as Anthropic.Tool.InputSchema,
    },
  ];

  it('calls the named tool, and the first on {type: "any"}', async () => {
    const named = await anthropic.messages.create({
      model: 'claude-e2e',
      max_tokens: 200,
      tools,
      tool_choice: { type: 'tool', name: 'get_weather' },
      messages: [{ role: 'user', content: `Weather in Oslo? ${usage(51, 9)}` }],
    });
    expect(named.stop_reason).toBe('tool_use');
    expect(named.content).toMatchObject([
      { type: 'tool_use', name: 'get_weather', input: WEATHER_ARGUMENTS },
    ]);
    expectSettledInCredits((await meter.finished())[0]!, PRICES['claude-e2e'], { input: 51, output: 9 });

    const any = await anthropic.messages.create({
      model: 'claude-e2e',
      max_tokens: 200,
      tools,
      tool_choice: { type: 'any' },
      messages: [{ role: 'user', content: `Anything? ${usage(52, 7)}` }],
    });
    expect(any.content).toMatchObject([{ type: 'tool_use', name: 'get_time', input: { zone: 'mock' } }]);
    expectSettledInCredits((await meter.finished())[0]!, PRICES['claude-e2e'], { input: 52, output: 7 });
  });

  it('streams a forced call', async () => {
    const stream = anthropic.messages.stream({
      model: 'claude-e2e',
      max_tokens: 200,
      tools,
      tool_choice: { type: 'tool', name: 'get_weather' },
      messages: [{ role: 'user', content: `Weather? ${usage(53, 11)}` }],
    });
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content).toMatchObject([
      { type: 'tool_use', name: 'get_weather', input: WEATHER_ARGUMENTS },
    ]);
    expectSettledInCredits((await meter.finished())[0]!, PRICES['claude-e2e'], { input: 53, output: 11 });
  });

  it('answers text on {type: "none"}', async () => {
    const none = await anthropic.messages.create({
      model: 'claude-e2e',
      max_tokens: 200,
      tools,
      tool_choice: { type: 'none' },
      messages: [{ role: 'user', content: `Weather? @mock(tool,input_tokens=54,output_tokens=5)` }],
    });
    expect(none.stop_reason).toBe('end_turn');
    expect(none.content[0]?.type).toBe('text');
    expectSettledInCredits((await meter.finished())[0]!, PRICES['claude-e2e'], { input: 54, output: 5 });
  });
});

describe('OpenAI chat completions with tool_choice', () => {
  const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
    { type: 'function', function: { name: 'get_time', parameters: TIME_PARAMETERS } },
    { type: 'function', function: { name: 'get_weather', parameters: WEATHER_PARAMETERS } },
  ];

  it('calls the first function on "required" and the named one', async () => {
    const required = await openai.chat.completions.create({
      model: 'gpt-e2e',
      tools,
      tool_choice: 'required',
      messages: [{ role: 'user', content: `Time? ${usage(61, 6)}` }],
    });
    expect(required.choices[0]?.finish_reason).toBe('tool_calls');
    const first = required.choices[0]?.message.tool_calls?.[0];
    expect(first?.type === 'function' && first.function.name).toBe('get_time');
    expectSettledInCredits((await meter.finished())[0]!, PRICES['gpt-e2e'], { input: 61, output: 6 });

    const named = await openai.chat.completions.create({
      model: 'gpt-e2e',
      tools,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      messages: [{ role: 'user', content: `Weather? ${usage(62, 8)}` }],
    });
    const call = named.choices[0]?.message.tool_calls?.[0];
    if (call?.type !== 'function') throw new Error('no function call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual(WEATHER_ARGUMENTS);
    expectSettledInCredits((await meter.finished())[0]!, PRICES['gpt-e2e'], { input: 62, output: 8 });
  });

  it('streams a forced call', async () => {
    const stream = openai.chat.completions.stream({
      model: 'gpt-e2e',
      tools,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      messages: [{ role: 'user', content: `Weather? ${usage(63, 9)}` }],
    });
    const final = await stream.finalChatCompletion();
    const call = final.choices[0]?.message.tool_calls?.[0];
    if (call?.type !== 'function') throw new Error('no function call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual(WEATHER_ARGUMENTS);
    expect(final.choices[0]?.finish_reason).toBe('tool_calls');
    expectSettledInCredits((await meter.finished())[0]!, PRICES['gpt-e2e'], { input: 63, output: 9 });
  });
});

describe('OpenAI responses with tool_choice', () => {
  const tools: OpenAI.Responses.Tool[] = [
    { type: 'function', name: 'get_time', parameters: TIME_PARAMETERS, strict: false },
    { type: 'function', name: 'get_weather', parameters: WEATHER_PARAMETERS, strict: false },
  ];

  it('calls the first function on "required" and the named one', async () => {
    const required = await openai.responses.create({
      model: 'gpt-e2e',
      tools,
      tool_choice: 'required',
      input: `Time? ${usage(71, 6)}`,
    });
    expect(required.output[0]).toMatchObject({ type: 'function_call', name: 'get_time' });
    expectSettledInCredits((await meter.finished())[0]!, PRICES['gpt-e2e'], { input: 71, output: 6 });

    const named = await openai.responses.create({
      model: 'gpt-e2e',
      tools,
      tool_choice: { type: 'function', name: 'get_weather' },
      input: `Weather? ${usage(72, 8)}`,
    });
    const call = named.output.find((item) => item.type === 'function_call');
    if (call?.type !== 'function_call') throw new Error('no function call');
    expect(call.name).toBe('get_weather');
    expect(JSON.parse(call.arguments)).toEqual(WEATHER_ARGUMENTS);
    expectSettledInCredits((await meter.finished())[0]!, PRICES['gpt-e2e'], { input: 72, output: 8 });
  });

  it('streams a forced call', async () => {
    const stream = openai.responses.stream({
      model: 'gpt-e2e',
      tools,
      tool_choice: { type: 'function', name: 'get_weather' },
      input: `Weather? ${usage(73, 9)}`,
    });
    const final = await stream.finalResponse();
    const call = final.output.find((item) => item.type === 'function_call');
    if (call?.type !== 'function_call') throw new Error('no function call');
    expect(call.name).toBe('get_weather');
    expect(JSON.parse(call.arguments)).toEqual(WEATHER_ARGUMENTS);
    expectSettledInCredits((await meter.finished())[0]!, PRICES['gpt-e2e'], { input: 73, output: 9 });
  });
});
