/**
 * The public status as gateways report it: liveness, Redis reachability and upstream outcomes
 * travel by heartbeat to the control plane, so the models of a provider that fails every call are
 * shown down (the provider itself is never named).
 */
import { findFreePort } from '@tollgate/test-harness';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectOpenAIError, openaiClient } from '../src/clients.ts';
import { type Customer, signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger } from '../src/ledger.ts';
import { type E2EStack, startStack } from '../src/stack.ts';

interface Component {
  name: string;
  status: string;
  detail: string;
}

let stack: E2EStack;
let customer: Customer;

beforeAll(async () => {
  stack = await startStack('status');
  customer = await signUpCustomer(stack, { credits: 1_000_000n });
});
afterAll(() => closeCheckingLedger(stack));

async function components(): Promise<Map<string, Component>> {
  const response = await fetch(`${stack.controlPlaneUrl}/api/v1/status`);
  const body = (await response.json()) as { data: { components: Component[] } };
  return new Map(body.data.components.map((component) => [component.name, component]));
}

/** Waits for the next heartbeats to carry the state in (they are periodic by design). */
async function until(
  check: (state: Map<string, Component>) => boolean,
  what: string,
): Promise<Map<string, Component>> {
  const deadline = Date.now() + 20_000;
  let state = await components();
  while (!check(state)) {
    if (Date.now() > deadline)
      throw new Error(`status never showed ${what}: ${JSON.stringify([...state.values()])}`);
    // Real time: the next heartbeat is periodic (every second here).
    await new Promise((resolve) => setTimeout(resolve, 250));
    state = await components();
  }
  return state;
}

describe('GET /api/v1/status with real gateways', () => {
  it('reports the running gateway, and Redis as it reaches it', async () => {
    const state = await until((now) => now.get('gateway')?.status === 'operational', 'the gateway up');
    expect(state.get('redis')?.status).toBe('operational');
    expect(state.get('database')?.status).toBe('operational');
    expect(state.get('model:gpt-e2e')?.status).toBe('operational');
    expect([...state.keys()].some((name) => name.includes('mock-'))).toBe(false);
  });

  it("shows a model down once every call to its provider fails, without the provider's name", async () => {
    const gateway = await stack.startGateway('beating', { STATUS_HEARTBEAT_SECONDS: '1' });
    const { secret } = await customer.createKey({ name: 'status' });
    const client = openaiClient(gateway.url, secret);
    for (let call = 0; call < 3; call += 1) {
      await expectOpenAIError(
        client.chat.completions.create({
          model: 'gpt-e2e',
          max_tokens: 16,
          messages: [{ role: 'user', content: 'Hi @mock(status=500)' }],
        }),
        OpenAI.InternalServerError,
        503,
        'upstream_unavailable',
      );
    }
    const state = await until((now) => now.get('model:gpt-e2e')?.status === 'down', 'the model down');
    expect(state.get('model:gpt-e2e')?.detail).toBe('Calls are failing.');
    // Another model on the same provider is down with it; one on another provider is not.
    expect(state.get('model:gpt-tokens-e2e')?.status).toBe('down');
    expect(state.get('model:claude-e2e')?.status).toBe('operational');
    await gateway.service.stop();
  });

  it('shows Redis degraded while one gateway cannot reach it', async () => {
    const gateway = await stack.startGateway('no-redis', {
      REDIS_URL: `redis://127.0.0.1:${await findFreePort()}`,
      STATUS_HEARTBEAT_SECONDS: '1',
    });
    const state = await until((now) => now.get('redis')?.status === 'degraded', 'Redis degraded');
    expect(state.get('redis')?.detail).toBe('Some gateways cannot reach Redis.');
    await gateway.service.stop();
  });
});
