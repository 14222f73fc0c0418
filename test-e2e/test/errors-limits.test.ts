/**
 * Refusals of requests, limits and balances as the official clients see them: each SDK's own
 * error class, our status and our code. Nothing is metered for a refusal; what was served is
 * charged to the token.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  anthropicClient,
  chatRequest,
  expectAnthropicError,
  expectOpenAIError,
  messageRequest,
  openaiClient,
} from '../src/clients.ts';
import { type Customer, signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger, expectSettledInCredits, Meter } from '../src/ledger.ts';
import { type E2EStack, PRICES, startStack } from '../src/stack.ts';

let stack: E2EStack;
let customer: Customer;
let meter: Meter;
let secret: string;

beforeAll(async () => {
  stack = await startStack('errors-limits', { fromImages: true });
  customer = await signUpCustomer(stack, { credits: 10_000_000n });
  ({ secret } = await customer.createKey({ name: 'default' }));
  meter = new Meter(stack, customer.accountId);
});

beforeEach(() => meter.mark());

afterAll(() => closeCheckingLedger(stack));

describe('request checks', () => {
  it('refuses a parameter outside the surface with unsupported_parameter naming it', async () => {
    const openaiError = await expectOpenAIError(
      openaiClient(stack.gatewayUrl, secret).chat.completions.create({
        ...chatRequest(),
        // Not a chat-completions parameter: refused, never dropped silently.
        frobnicate: true,
      } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming),
      OpenAI.BadRequestError,
      400,
      'unsupported_parameter',
    );
    expect(openaiError.message).toContain('frobnicate');
    const anthropicError = await expectAnthropicError(
      anthropicClient(stack.gatewayUrl, { apiKey: secret }).messages.create({
        ...messageRequest(),
        frobnicate: 1,
      } as Anthropic.MessageCreateParamsNonStreaming),
      Anthropic.BadRequestError,
      400,
      'unsupported_parameter',
    );
    expect(anthropicError.message).toContain('frobnicate');
    await meter.expectUntouched();
  });

  it('refuses a bad or too large max output, and a body above the key limit', async () => {
    const limited = await customer.createKey({
      name: 'limited',
      limits: { maxOutputTokens: 100, maxRequestBytes: 2048 },
    });
    const openai = openaiClient(stack.gatewayUrl, limited.secret);
    const anthropic = anthropicClient(stack.gatewayUrl, { apiKey: limited.secret });
    await expectOpenAIError(
      openai.chat.completions.create({ ...chatRequest(), max_tokens: 0 }),
      OpenAI.BadRequestError,
      400,
      'invalid_max_output_tokens',
    );
    await expectAnthropicError(
      anthropic.messages.create({ ...messageRequest(), max_tokens: 500 }),
      Anthropic.BadRequestError,
      400,
      'max_output_tokens_exceeded',
    );
    await expectOpenAIError(
      openai.chat.completions.create(chatRequest('gpt-e2e', 'x'.repeat(4096))),
      OpenAI.APIError,
      413,
      'request_too_large',
    );
    await expectAnthropicError(
      anthropic.messages.create(messageRequest('claude-e2e', 'x'.repeat(4096))),
      Anthropic.ContentTooLargeError,
      413,
      'request_too_large',
    );
    await meter.expectUntouched();
  });
});

describe('limits', () => {
  it('refuses the call above the key request ceiling with rate_limit_exceeded and Retry-After', async () => {
    const key = await customer.createKey({ name: 'two a minute', limits: { requestsPerMinute: 2 } });
    const openai = openaiClient(stack.gatewayUrl, key.secret);
    await openai.chat.completions.create(
      chatRequest('gpt-e2e', 'One @mock(input_tokens=10,output_tokens=2)'),
    );
    await openai.chat.completions.create(
      chatRequest('gpt-e2e', 'Two @mock(input_tokens=11,output_tokens=3)'),
    );
    const error = await expectOpenAIError(
      openai.chat.completions.create(chatRequest()),
      OpenAI.RateLimitError,
      429,
      'rate_limit_exceeded',
    );
    expect(Number(error.headers?.get('retry-after'))).toBeGreaterThan(0);
    await expectAnthropicError(
      anthropicClient(stack.gatewayUrl, { apiKey: key.secret }).messages.create(messageRequest()),
      Anthropic.RateLimitError,
      429,
      'rate_limit_exceeded',
    );
    const [first, second] = await meter.finished(2);
    expectSettledInCredits(first!, PRICES['gpt-e2e'], { input: 10, output: 2 });
    expectSettledInCredits(second!, PRICES['gpt-e2e'], { input: 11, output: 3 });
  });

  it('counts the unmetered GET endpoints against the request ceiling too', async () => {
    const key = await customer.createKey({ name: 'two requests', limits: { requestsPerMinute: 2 } });
    const openai = openaiClient(stack.gatewayUrl, key.secret);
    await openai.models.list();
    const status = await fetch(`${stack.gatewayUrl}/v1/key/status`, { headers: { 'x-api-key': key.secret } });
    expect(status.status).toBe(200);
    await expectOpenAIError(openai.models.list(), OpenAI.RateLimitError, 429, 'rate_limit_exceeded');
    await expectOpenAIError(
      openai.chat.completions.create(chatRequest()),
      OpenAI.RateLimitError,
      429,
      'rate_limit_exceeded',
    );
    await meter.expectUntouched();
  });

  it('frees the concurrency slot of a client that left mid-stream', async () => {
    const key = await customer.createKey({ name: 'single slot', limits: { concurrency: 1 } });
    const openai = openaiClient(stack.gatewayUrl, key.secret);
    const controller = new AbortController();
    const stream = await openai.chat.completions.create(
      { ...chatRequest('gpt-e2e', 'Long @mock(words=30,chunk_delay=100)'), stream: true },
      { signal: controller.signal },
    );
    try {
      for await (const _chunk of stream) controller.abort();
    } catch (error) {
      expect(error).toBeInstanceOf(OpenAI.APIUserAbortError);
    }
    const [left] = await meter.finished();
    // Read to its end and settled; the slot must be free again, not held until its lease expires.
    expect(left).toMatchObject({ status: 'settled', outcome: 'client_disconnected' });
    const next = await openai.chat.completions.create(
      chatRequest('gpt-e2e', 'Next @mock(input_tokens=8,output_tokens=2)'),
    );
    expect(next.usage).toMatchObject({ prompt_tokens: 8, completion_tokens: 2 });
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['gpt-e2e'], { input: 8, output: 2 });
  });

  it('refuses a second call in flight with concurrency_limit_exceeded', async () => {
    const key = await customer.createKey({ name: 'one at a time', limits: { concurrency: 1 } });
    const anthropic = anthropicClient(stack.gatewayUrl, { apiKey: key.secret });
    // A slow stream holds the only slot while the second call comes in.
    const stream = anthropic.messages.stream(
      messageRequest('claude-e2e', 'Slow @mock(words=4,chunk_delay=150,input_tokens=25,output_tokens=4)'),
    );
    await new Promise<void>((resolve) => stream.once('streamEvent', () => resolve()));
    const error = await expectAnthropicError(
      anthropic.messages.create(messageRequest()),
      Anthropic.RateLimitError,
      429,
      'concurrency_limit_exceeded',
    );
    expect(Number(error.headers?.get('retry-after'))).toBeGreaterThan(0);
    expect((await stream.finalMessage()).usage.output_tokens).toBe(4);
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['claude-e2e'], { input: 25, output: 4 });
  });
});

describe('balances', () => {
  it('refuses an account without credit with insufficient_credits (402) and charges nothing', async () => {
    const broke = await signUpCustomer(stack);
    const key = await broke.createKey();
    const brokeMeter = new Meter(stack, broke.accountId);
    await brokeMeter.mark();
    await expectOpenAIError(
      openaiClient(stack.gatewayUrl, key.secret).chat.completions.create(chatRequest()),
      OpenAI.APIError,
      402,
      'insufficient_credits',
    );
    await expectAnthropicError(
      anthropicClient(stack.gatewayUrl, { apiKey: key.secret }).messages.create(messageRequest()),
      Anthropic.PaymentRequiredError,
      402,
      'insufficient_credits',
    );
    await brokeMeter.expectUntouched();
  });

  it('charges usage beyond the reservation from what is left, writes off the rest, then refuses with insufficient_tokens', async () => {
    const holder = await signUpCustomer(stack, { packages: ['e2e-tokens'] });
    const key = await holder.createKey();
    const tokensMeter = new Meter(stack, holder.accountId);
    await tokensMeter.mark();
    const openai = openaiClient(stack.gatewayUrl, key.secret);
    // The package holds 50,000 tokens; the provider reports 60,010 for a call reserved at about 110.
    const over = await openai.chat.completions.create(
      chatRequest('gpt-tokens-e2e', 'Big @mock(input_tokens=10,output_tokens=60000)'),
    );
    expect(over.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 60000 });
    const [row] = await tokensMeter.finished();
    expect(row).toMatchObject({
      status: 'settled',
      inputTokens: 10n,
      outputTokens: 60000n,
      chargedTokens: 50000n,
      writtenOffTokens: 10010n,
    });
    await expectOpenAIError(
      openai.chat.completions.create(chatRequest('gpt-tokens-e2e')),
      OpenAI.APIError,
      402,
      'insufficient_tokens',
    );
    await tokensMeter.expectUntouched();
  });
});
