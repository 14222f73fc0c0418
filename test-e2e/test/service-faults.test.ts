/**
 * Our own services fail or change under a running gateway: Redis unreachable, the control plane
 * stopped (and started again), a key revoked while its stream runs. The clients get our codes, and
 * the ledger shows nothing spent by a refusal and nothing lost by an outage.
 */
import Anthropic from '@anthropic-ai/sdk';
import { findFreePort } from '@tollgate/test-harness';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { anthropicClient, expectAnthropicError, expectOpenAIError, openaiClient } from '../src/clients.ts';
import { type Customer, signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger, expectSettledInCredits, Meter } from '../src/ledger.ts';
import { type E2EStack, PRICES, startStack } from '../src/stack.ts';

let stack: E2EStack;
let customer: Customer;
let meter: Meter;

beforeAll(async () => {
  stack = await startStack('service-faults');
  customer = await signUpCustomer(stack, { credits: 10_000_000n });
  meter = new Meter(stack, customer.accountId);
});

beforeEach(() => meter.mark());

afterAll(() => closeCheckingLedger(stack));

const message = (content: string) => ({
  model: 'claude-e2e',
  max_tokens: 64,
  messages: [{ role: 'user' as const, content }],
});

/** Resolves at the first text the stream delivers: the answer is under way. */
function firstText(stream: ReturnType<Anthropic['messages']['stream']>): Promise<void> {
  return new Promise((resolve) => stream.once('text', () => resolve()));
}

describe('Redis unreachable', () => {
  it('refuses with rate_limiter_unavailable (503) and meters nothing', async () => {
    const { secret } = await customer.createKey({ name: 'no redis' });
    // A gateway of its own whose Redis is a port nobody listens on; the shared Redis stays up.
    const gateway = await stack.startGateway('no-redis', {
      REDIS_URL: `redis://127.0.0.1:${await findFreePort()}`,
    });
    await expectOpenAIError(
      openaiClient(gateway.url, secret).chat.completions.create({
        model: 'gpt-e2e',
        messages: [{ role: 'user', content: 'Hi' }],
      }),
      OpenAI.InternalServerError,
      503,
      'rate_limiter_unavailable',
    );
    await expectAnthropicError(
      anthropicClient(gateway.url, { authToken: secret }).messages.create(message('Hi')),
      Anthropic.ServiceUnavailableError,
      503,
      'rate_limiter_unavailable',
    );
    await meter.expectUntouched();
    await gateway.service.stop();
  });
});

describe('a gateway stopped during a deploy', () => {
  it('finishes the stream under way and delivers its settlement before it exits', async () => {
    const { secret } = await customer.createKey({ name: 'deploy' });
    const gateway = await stack.startGateway('draining');
    const stream = anthropicClient(gateway.url, { apiKey: secret }).messages.stream(
      message('Slow @mock(words=8,chunk_delay=100,input_tokens=52,output_tokens=8)'),
    );
    await firstText(stream);
    const stopped = gateway.service.stop();
    const final = await stream.finalMessage();
    expect(final.usage).toMatchObject({ input_tokens: 52, output_tokens: 8 });
    await stopped;
    expect(gateway.service.child.exitCode).toBe(0);
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['claude-e2e'], { input: 52, output: 8 });
  });
});

describe('a key revoked while its stream runs', () => {
  it('lets the stream finish and settles it; the next request is refused with api_key_revoked', async () => {
    const key = await customer.createKey({ name: 'revoked mid-stream' });
    const anthropic = anthropicClient(stack.gatewayUrl, { apiKey: key.secret });
    const stream = anthropic.messages.stream(
      message('Slow @mock(words=6,chunk_delay=120,input_tokens=75,output_tokens=6)'),
    );
    await firstText(stream);
    await customer.setKeyStatus(key.keyId, 'revoked');

    const final = await stream.finalMessage();
    expect(final.content).toMatchObject([{ type: 'text', text: 'Hello from the mock upstream. Hello' }]);
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['claude-e2e'], { input: 75, output: 6 });

    await expectAnthropicError(
      anthropic.messages.create(message('Again')),
      Anthropic.PermissionDeniedError,
      403,
      'api_key_revoked',
    );
    await meter.expectUntouched();
  });
});

describe('control plane stopped', () => {
  it('refuses with billing_unavailable (503) and spends nothing; a stream under way is settled once it is back', async () => {
    const used = await customer.createKey({ name: 'used before the outage' });
    const fresh = await customer.createKey({ name: 'first used during the outage' });
    const anthropic = anthropicClient(stack.gatewayUrl, { apiKey: used.secret });
    // Warm the gateway's key cache, so the refusal below comes from the reservation, not the lookup.
    await anthropic.messages.create(message('Warm @mock(input_tokens=5,output_tokens=1)'));
    await meter.finished();

    const stream = anthropic.messages.stream(
      message('Long @mock(words=10,chunk_delay=150,input_tokens=64,output_tokens=10)'),
    );
    await firstText(stream);
    await stack.stopControlPlane();
    try {
      await expectAnthropicError(
        anthropic.messages.create(message('During @mock(input_tokens=5,output_tokens=1)')),
        Anthropic.ServiceUnavailableError,
        503,
        'billing_unavailable',
      );
      await expectOpenAIError(
        openaiClient(stack.gatewayUrl, fresh.secret).chat.completions.create({
          model: 'gpt-e2e',
          messages: [{ role: 'user', content: 'During' }],
        }),
        OpenAI.InternalServerError,
        503,
        'billing_unavailable',
      );
      // The answer under way reaches the client whole; its settlement waits in the gateway.
      const final = await stream.finalMessage();
      expect(final.usage).toMatchObject({ input_tokens: 64, output_tokens: 10 });
    } finally {
      await stack.startControlPlane();
    }

    // Only the stream's reservation exists, settled to the token: the refusals spent nothing.
    const [row] = await meter.finished();
    expectSettledInCredits(row!, PRICES['claude-e2e'], { input: 64, output: 10 });

    const after = await openaiClient(stack.gatewayUrl, fresh.secret).chat.completions.create({
      model: 'gpt-e2e',
      messages: [{ role: 'user', content: 'After @mock(input_tokens=9,output_tokens=3)' }],
    });
    expect(after.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 3 });
    const [afterRow] = await meter.finished();
    expectSettledInCredits(afterRow!, PRICES['gpt-e2e'], { input: 9, output: 3 });
  });
});
