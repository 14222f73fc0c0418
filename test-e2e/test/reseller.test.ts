/**
 * A reseller end to end, every service a real process: the admin (dashboard API) makes an account
 * a reseller and funds it; the reseller creates management keys with two scopes each; reseller
 * software (plain fetch, Authorization: Bearer mk-tg-...) invites a customer who accepts, grants it tokens of a
 * package the reseller holds and creates the customer's key; the customer's key calls a model
 * through the gateway with the official openai client; the reseller reads that usage; a scope the
 * key lacks is refused; revoking the key stops it on the very next request.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatRequest, expectOpenAIError, openaiClient } from '../src/clients.ts';
import { acceptInvitation, type Customer, signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger, Meter, readBalances } from '../src/ledger.ts';
import { type E2EStack, startStack } from '../src/stack.ts';

let stack: E2EStack;
let admin: Customer;
let reseller: Customer;

/** Reseller software: nothing but fetch and its management key. */
async function software(secret: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${stack.controlPlaneUrl}/api/v1/reseller-management${path}`, {
    method,
    headers: {
      authorization: `Bearer ${secret}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      // The software retries grants safely: one Idempotency-Key per intended grant.
      ...(path.endsWith('/grants') ? { 'idempotency-key': 'first-grant' } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: answers are checked by the assertions
  return { status: response.status, body: (await response.json()) as any };
}

beforeAll(async () => {
  stack = await startStack('reseller', { fromImages: true });
  admin = await signUpCustomer(stack);
  // The first admin is made by the operator; everything after is over HTTP.
  await stack.admin('set-role', admin.email, 'admin');
  reseller = await signUpCustomer(stack);
}, 120_000);

afterAll(() => closeCheckingLedger(stack));

describe('reseller', () => {
  it('sells through software: customer, grant, key, a metered call, usage; scopes and revocation hold', async () => {
    const promoted = await admin.dashboard.request('PATCH', `/admin/accounts/${reseller.accountId}/roles`, {
      reseller: true,
    });
    expect(promoted.status).toBe(200);
    const stock = await admin.dashboard.request('POST', `/admin/accounts/${reseller.accountId}/grants`, {
      packageId: 'e2e-tokens',
      note: 'reseller stock',
    });
    expect(stock.status).toBe(201);

    const created = await reseller.dashboard.request('POST', '/reseller/management-keys', {
      name: 'shop backend',
      scopes: ['customers:write', 'grants:write'],
    });
    expect(created.status).toBe(201);
    const shopKey: string = created.body.data.secret;
    expect(shopKey).toMatch(/^mk-tg-/);

    const customerEmail = `shop-${Date.now()}@example.test`;
    const invited = await software(shopKey, 'POST', '/customers', { email: customerEmail });
    expect(invited.status).toBe(201);
    expect(invited.body.data).toMatchObject({ email: customerEmail, status: 'pending', customerId: null });
    // The person accepts the emailed invitation; only then is it the reseller's customer.
    const customerId = await acceptInvitation(stack, customerEmail);

    const grant = await software(shopKey, 'POST', `/customers/${customerId}/grants`, {
      packageId: 'e2e-tokens',
      tokens: '20000',
    });
    expect(grant.status).toBe(201);
    expect(grant.body.data).toMatchObject({ customerId, packageId: 'e2e-tokens', tokens: '20000' });
    const retried = await software(shopKey, 'POST', `/customers/${customerId}/grants`, {
      packageId: 'e2e-tokens',
      tokens: '20000',
    });
    expect(retried.status).toBe(200);
    expect(retried.body.data.grantId).toBe(grant.body.data.grantId);
    expect((await readBalances(stack.db, reseller.accountId)).tokens).toBe(30_000n);
    expect((await readBalances(stack.db, customerId)).tokens).toBe(20_000n);

    // A scope this key lacks.
    const lacking = await software(shopKey, 'POST', `/customers/${customerId}/api-keys`, { name: 'app' });
    expect(lacking.status).toBe(403);
    expect(lacking.body.code).toBe('forbidden');

    const second = await reseller.dashboard.request('POST', '/reseller/management-keys', {
      name: 'provisioning',
      scopes: ['keys:write', 'usage:read'],
    });
    const provisioningKey: string = second.body.data.secret;
    const key = await software(provisioningKey, 'POST', `/customers/${customerId}/api-keys`, { name: 'app' });
    expect(key.status).toBe(201);
    const inferenceSecret: string = key.body.data.secret;

    // The management key is not an inference key: the gateway refuses it.
    await expectOpenAIError(
      openaiClient(stack.gatewayUrl, shopKey).chat.completions.create(chatRequest('gpt-tokens-e2e')),
      OpenAI.AuthenticationError,
      401,
      'invalid_api_key',
    );

    const meter = new Meter(stack, customerId);
    await meter.mark();
    const completion = await openaiClient(stack.gatewayUrl, inferenceSecret).chat.completions.create(
      chatRequest('gpt-tokens-e2e', 'Hello @mock(input_tokens=120,output_tokens=30)'),
    );
    expect(completion.usage).toMatchObject({ prompt_tokens: 120, completion_tokens: 30 });
    await meter.finished(1);

    const usage = await software(provisioningKey, 'GET', `/customers/${customerId}/usage`);
    expect(usage.status).toBe(200);
    expect(usage.body.data.balance.remaining.tokens).toBe('19850');
    expect(usage.body.data.days).toEqual([
      expect.objectContaining({
        alias: 'gpt-tokens-e2e',
        requests: 1,
        inputTokens: '120',
        outputTokens: '30',
      }),
    ]);
    const inSession = await reseller.dashboard.request('GET', `/reseller/customers/${customerId}/usage`);
    expect(inSession.body.data.days).toEqual(usage.body.data.days);

    const revoked = await reseller.dashboard.request(
      'DELETE',
      `/reseller/management-keys/${second.body.data.key.id}`,
    );
    expect(revoked.status).toBe(200);
    const afterRevoke = await software(provisioningKey, 'GET', `/customers/${customerId}/usage`);
    expect(afterRevoke.status).toBe(401);
    expect(afterRevoke.body.code).toBe('unauthenticated');
    // The other key of the same reseller keeps working.
    expect(
      (await software(shopKey, 'POST', '/customers', { email: `shop2-${Date.now()}@example.test` })).status,
    ).toBe(201);
  }, 120_000);
});
