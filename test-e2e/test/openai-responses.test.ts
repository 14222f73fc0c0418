/**
 * The official `openai` client on responses (base URL `{gateway}/v1`): streamed and not, the
 * stream helper, function calls and their outputs; and the unmetered endpoints. Every call is
 * charged exactly the usage the mock reported.
 */
import type OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openaiClient } from '../src/clients.ts';
import { type Customer, signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger, expectSettledInCredits, Meter, readBalances } from '../src/ledger.ts';
import { type E2EStack, PRICES, startStack } from '../src/stack.ts';
import { WEATHER_ARGUMENTS, WEATHER_PARAMETERS } from '../src/tools.ts';

let stack: E2EStack;
let customer: Customer;
let meter: Meter;
let openai: OpenAI;
let secret: string;

beforeAll(async () => {
  stack = await startStack('openai-responses', { fromImages: true });
  customer = await signUpCustomer(stack, { credits: 10_000_000n, packages: ['e2e-tokens'] });
  ({ secret } = await customer.createKey({ name: 'openai client' }));
  openai = openaiClient(stack.gatewayUrl, secret);
  meter = new Meter(stack, customer.accountId);
});

// Each test accounts for its own calls only, even after an earlier test failed half-way.
beforeEach(() => meter.mark());

afterAll(() => closeCheckingLedger(stack));

describe('responses', () => {
  it('answers a non-streamed call and charges the reported usage', async () => {
    const response = await openai.responses.create({
      model: 'gpt-e2e',
      instructions: 'Be brief.',
      input: 'Hello @mock(input_tokens=222,output_tokens=5)',
      max_output_tokens: 100,
    });
    expect(response.object).toBe('response');
    expect(response.model).toBe('gpt-e2e');
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('Hello from the mock upstream.');
    expect(response.usage).toMatchObject({ input_tokens: 222, output_tokens: 5, total_tokens: 227 });
    const [row] = await meter.finished();
    expect(row).toMatchObject({ surface: 'responses' });
    expectSettledInCredits(row!, PRICES['gpt-e2e'], { input: 222, output: 5 });
  });

  it('streams events in order and ends with response.completed carrying the usage', async () => {
    const stream = await openai.responses.create({
      model: 'gpt-e2e',
      input: [{ role: 'user', content: 'Stream @mock(words=4,input_tokens=61,output_tokens=4)' }],
      stream: true,
    });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);

    expect(events[0]?.type).toBe('response.created');
    const last = events.at(-1);
    expect(last?.type).toBe('response.completed');
    if (last?.type !== 'response.completed') throw new Error('no completion');
    expect(last.response.model).toBe('gpt-e2e');
    expect(last.response.usage).toMatchObject({ input_tokens: 61, output_tokens: 4 });
    const text = events.flatMap((event) =>
      event.type === 'response.output_text.delta' ? [event.delta] : [],
    );
    expect(text.join('')).toBe('Hello from the mock upstream.'.split(' ').slice(0, 4).join(' '));
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['gpt-e2e'], { input: 61, output: 4 });
  });

  it('accumulates a stream with the SDK helper into the final response', async () => {
    const stream = openai.responses.stream({
      model: 'gpt-e2e',
      input: 'Helper @mock(input_tokens=33,output_tokens=5)',
    });
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('Hello from the mock upstream.');
    expect(final.usage).toMatchObject({ input_tokens: 33, output_tokens: 5 });
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['gpt-e2e'], { input: 33, output: 5 });
  });

  it('returns a function call, then answers the function output', async () => {
    const tools: OpenAI.Responses.Tool[] = [
      {
        type: 'function',
        name: 'get_weather',
        description: 'Current weather of a city',
        parameters: WEATHER_PARAMETERS,
        strict: false,
      },
    ];
    const first = await openai.responses.create({
      model: 'gpt-e2e',
      tools,
      input: 'Weather in Oslo? @mock(tool,input_tokens=99,output_tokens=13)',
    });
    const call = first.output.find((item) => item.type === 'function_call');
    if (call?.type !== 'function_call') throw new Error('no function call');
    expect(call.name).toBe('get_weather');
    expect(JSON.parse(call.arguments)).toEqual(WEATHER_ARGUMENTS);
    const [firstRow] = await meter.finished();
    expectSettledInCredits(firstRow!, PRICES['gpt-e2e'], { input: 99, output: 13 });

    const second = await openai.responses.create({
      model: 'gpt-e2e',
      tools,
      input: [
        { role: 'user', content: 'Weather in Oslo?' },
        call,
        {
          type: 'function_call_output',
          call_id: call.call_id,
          output: '{"celsius": 21} @mock(input_tokens=150,output_tokens=8)',
        },
      ],
    });
    expect(second.output_text).toMatch(/^Hello from/);
    const [secondRow] = await meter.finished();
    expectSettledInCredits(secondRow!, PRICES['gpt-e2e'], { input: 150, output: 8 });
  });

  it('streams a function call', async () => {
    const stream = openai.responses.stream({
      model: 'gpt-e2e',
      tools: [{ type: 'function', name: 'get_weather', parameters: WEATHER_PARAMETERS, strict: false }],
      input: 'Weather? @mock(tool,input_tokens=44,output_tokens=10)',
    });
    const final = await stream.finalResponse();
    const call = final.output.find((item) => item.type === 'function_call');
    if (call?.type !== 'function_call') throw new Error('no function call');
    expect(JSON.parse(call.arguments)).toEqual(WEATHER_ARGUMENTS);
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['gpt-e2e'], { input: 44, output: 10 });
  });
});

describe('unmetered endpoints', () => {
  it('reports the same balance on the key status endpoint, in the dashboard and in the ledger', async () => {
    const balances = await readBalances(stack.db, customer.accountId);
    const expected = {
      remaining: { tokens: String(balances.tokens), credits: String(balances.credits) },
      reserved: { tokens: '0', credits: '0' },
    };
    const response = await fetch(`${stack.gatewayUrl}/v1/key/status`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ state: 'active', ...expected });
    const dashboard = await customer.dashboard.request('GET', '/me/balance');
    expect(dashboard.body.data).toEqual(expected);
    await meter.expectUntouched();
  });

  it('lists the aliases the key may call, and costs nothing', async () => {
    const models = [];
    for await (const model of openai.models.list()) models.push(model.id);
    expect(models.sort()).toEqual(['claude-e2e', 'gpt-e2e', 'gpt-tokens-e2e']);
    await meter.expectUntouched();
  });
});
