/**
 * Refusals of keys and aliases as the official clients see them: each SDK raises its own error
 * class for our status, and our code is where each SDK exposes the body (openai `error.code`;
 * Anthropic `error.error.error.service_code`). Every refusal before the upstream call costs nothing.
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
import { closeCheckingLedger, Meter } from '../src/ledger.ts';
import { type E2EStack, startStack } from '../src/stack.ts';

let stack: E2EStack;
let customer: Customer;
let meter: Meter;
let secret: string;

beforeAll(async () => {
  stack = await startStack('errors-keys', { fromImages: true });
  customer = await signUpCustomer(stack, { credits: 10_000_000n });
  ({ secret } = await customer.createKey({ name: 'default' }));
  meter = new Meter(stack, customer.accountId);
});

beforeEach(() => meter.mark());

afterAll(() => closeCheckingLedger(stack));

describe('credentials', () => {
  it('refuses an unknown key with invalid_api_key (AuthenticationError, 401) in both clients', async () => {
    const unknown = `sk-tg-${'x'.repeat(40)}`;
    const unknownError = await expectOpenAIError(
      openaiClient(stack.gatewayUrl, unknown).chat.completions.create(chatRequest()),
      OpenAI.AuthenticationError,
      401,
      'invalid_api_key',
    );
    expect(unknownError.message).toMatch(/not a whole API key: keys start with sk-tg-/);
    const error = await expectAnthropicError(
      anthropicClient(stack.gatewayUrl, { apiKey: 'not-a-key' }).messages.create(messageRequest()),
      Anthropic.AuthenticationError,
      401,
      'invalid_api_key',
    );
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    await meter.expectUntouched();
  });

  it('refuses two different keys in the two headers with conflicting_api_keys', async () => {
    const client = new OpenAI({
      apiKey: secret,
      baseURL: `${stack.gatewayUrl}/v1`,
      maxRetries: 0,
      defaultHeaders: { 'x-api-key': `sk-tg-${'y'.repeat(40)}` },
    });
    await expectOpenAIError(
      client.chat.completions.create(chatRequest()),
      OpenAI.AuthenticationError,
      401,
      'conflicting_api_keys',
    );
    await meter.expectUntouched();
  });

  it('refuses a disabled key, serves it again once re-enabled, and refuses it for good once revoked', async () => {
    const key = await customer.createKey({ name: 'state changes' });
    const openai = openaiClient(stack.gatewayUrl, key.secret);
    const anthropic = anthropicClient(stack.gatewayUrl, { authToken: key.secret });
    await openai.chat.completions.create(chatRequest());
    await meter.finished();

    await customer.setKeyStatus(key.keyId, 'disabled');
    await expectOpenAIError(
      openai.chat.completions.create(chatRequest()),
      OpenAI.PermissionDeniedError,
      403,
      'api_key_disabled',
    );
    await customer.setKeyStatus(key.keyId, 'active');
    await anthropic.messages.create(messageRequest());
    await meter.finished();

    await customer.setKeyStatus(key.keyId, 'revoked');
    await expectOpenAIError(
      openai.responses.create({ model: 'gpt-e2e', input: 'Hi' }),
      OpenAI.PermissionDeniedError,
      403,
      'api_key_revoked',
    );
    await expectAnthropicError(
      anthropic.messages.create(messageRequest()),
      Anthropic.PermissionDeniedError,
      403,
      'api_key_revoked',
    );
    await meter.expectUntouched();
  });
  it('refuses the previous secret of a rotated key at once, and serves the new one', async () => {
    const key = await customer.createKey({ name: 'rotated' });
    const before = openaiClient(stack.gatewayUrl, key.secret);
    await before.chat.completions.create(chatRequest());
    await meter.finished();
    const rotated = await customer.rotateKey(key.keyId);
    expect(rotated).not.toBe(key.secret);
    const refused = await expectOpenAIError(
      before.chat.completions.create(chatRequest()),
      OpenAI.AuthenticationError,
      401,
      'invalid_api_key',
    );
    // What is true: a well-formed key no longer known, not "send a key starting with sk-".
    expect(refused.message).toMatch(/not recognised: it may be mistyped, or replaced by a rotation/);
    await openaiClient(stack.gatewayUrl, rotated).chat.completions.create(chatRequest());
    await meter.finished();
  });

  it('refuses a key past its expiry with api_key_expired, though it was served (and cached) before', async () => {
    const expiresAt = new Date(Date.now() + 2_000);
    const key = await customer.createKey({ name: 'expiring', expiresAt: expiresAt.toISOString() });
    const anthropic = anthropicClient(stack.gatewayUrl, { apiKey: key.secret });
    await anthropic.messages.create(messageRequest());
    await meter.finished();
    // Real time: the key's expiry passes.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt.getTime() - Date.now() + 100)));
    await expectAnthropicError(
      anthropic.messages.create(messageRequest()),
      Anthropic.PermissionDeniedError,
      403,
      'api_key_expired',
    );
    await meter.expectUntouched();
  });
});

describe('models', () => {
  it('refuses an alias outside the key scope or unpublished with model_not_allowed', async () => {
    const scoped = await customer.createKey({ name: 'claude only', scope: ['claude-e2e'] });
    const outside = await expectOpenAIError(
      openaiClient(stack.gatewayUrl, scoped.secret).chat.completions.create(chatRequest()),
      OpenAI.PermissionDeniedError,
      403,
      'model_not_allowed',
    );
    expect(outside.message).toMatch(/This key may not call gpt-e2e: its models are limited to claude-e2e/);
    const unpublished = await expectOpenAIError(
      openaiClient(stack.gatewayUrl, secret).chat.completions.create(chatRequest('hidden-e2e')),
      OpenAI.PermissionDeniedError,
      403,
      'model_not_allowed',
    );
    // The cause is the operator's, not the key's.
    expect(unpublished.message).toMatch(/hidden-e2e is not published/);
    // Never listed either.
    const listed = [];
    for await (const model of openaiClient(stack.gatewayUrl, scoped.secret).models.list())
      listed.push(model.id);
    expect(listed).toEqual(['claude-e2e']);
    await meter.expectUntouched();
  });

  it('refuses an unknown alias with invalid_model and a protocol the alias lacks with model_unavailable', async () => {
    const anthropic = anthropicClient(stack.gatewayUrl, { apiKey: secret });
    await expectAnthropicError(
      anthropic.messages.create(messageRequest('no-such-model')),
      Anthropic.BadRequestError,
      400,
      'invalid_model',
    );
    await expectAnthropicError(
      anthropic.messages.create(messageRequest('gpt-e2e')),
      Anthropic.BadRequestError,
      400,
      'model_unavailable',
    );
    await expectOpenAIError(
      openaiClient(stack.gatewayUrl, secret).responses.create({ model: 'claude-e2e', input: 'Hi' }),
      OpenAI.BadRequestError,
      400,
      'model_unavailable',
    );
    await meter.expectUntouched();
  });
});
