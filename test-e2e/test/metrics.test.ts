/**
 * Prometheus metrics of a gateway started with METRICS_PORT: scraped on their own port after real
 * calls, and absent from the customer-facing port.
 */
import { findFreePort } from '@tollgate/test-harness';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatRequest, openaiClient, rejection } from '../src/clients.ts';
import { signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger, Meter } from '../src/ledger.ts';
import { type E2EStack, type RunningGatewayProcess, startStack } from '../src/stack.ts';

let stack: E2EStack;
let gateway: RunningGatewayProcess;
let metricsUrl: string;
let secret: string;
let customer: Awaited<ReturnType<typeof signUpCustomer>>;

beforeAll(async () => {
  stack = await startStack('metrics');
  const port = await findFreePort();
  gateway = await stack.startGateway('metrics', { METRICS_PORT: String(port), METRICS_HOST: '127.0.0.1' });
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
  customer = await signUpCustomer(stack, { credits: 10_000_000n });
  ({ secret } = await customer.createKey({ name: 'metrics', limits: { requestsPerMinute: 2 } }));
});
afterAll(() => closeCheckingLedger(stack));

/** The value of one sample line (labels in any order), or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const wanted = Object.entries(labels).every(([label, value]) => line.includes(`${label}="${value}"`));
    if (wanted) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

describe('gateway metrics', () => {
  it('counts requests by route, alias and code, limiter refusals and billing batches', async () => {
    const openai = openaiClient(gateway.url, secret);
    await openai.chat.completions.create(chatRequest());
    await openai.chat.completions.create(chatRequest());
    await rejection(openai.chat.completions.create(chatRequest()));
    const response = await fetch(metricsUrl);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();
    const route = '/v1/chat/completions';
    expect(sample(text, 'tollgate_gateway_requests_total', { route, alias: 'gpt-e2e', code: 'ok' })).toBe(2);
    expect(
      sample(text, 'tollgate_gateway_requests_total', {
        route,
        alias: 'gpt-e2e',
        code: 'rate_limit_exceeded',
      }),
    ).toBe(1);
    expect(sample(text, 'tollgate_gateway_limiter_refusals_total', { code: 'rate_limit_exceeded' })).toBe(1);
    expect(sample(text, 'tollgate_gateway_request_duration_seconds_count', { route })).toBe(3);
    // The rate ceiling is checked in the step that reserves: the refused call was a reserve item too.
    expect(sample(text, 'tollgate_gateway_billing_batch_items_sum', { kind: 'reserve' })).toBe(3);
    expect(text).toMatch(/^tollgate_gateway_settlements_pending\{service="gateway"\} \d+$/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_p99_seconds\{service="gateway"\} /m);
  });

  it('time the reservation, the provider headers and the first byte, and count provider failures by cause', async () => {
    const { secret: free } = await customer.createKey({ name: 'metrics-latency' });
    const openai = openaiClient(gateway.url, free);
    const stream = await openai.chat.completions.create({ ...chatRequest(), stream: true });
    for await (const _chunk of stream) {
      // read to the end
    }
    await rejection(openai.chat.completions.create(chatRequest('gpt-e2e', 'Hi @mock(status=500)')));
    const text = await (await fetch(metricsUrl)).text();
    const route = '/v1/chat/completions';
    // Reservation steps answered so far: three granted (two above, one streamed), the one refused
    // for its rate in the first test, and one for the failed call.
    expect(sample(text, 'tollgate_gateway_reserve_duration_seconds_count', { result: 'ok' })).toBe(5);
    expect(sample(text, 'tollgate_gateway_upstream_headers_seconds_count', { result: 'ok' })).toBe(4);
    expect(sample(text, 'tollgate_gateway_upstream_headers_seconds_sum', { result: 'ok' })).toBeGreaterThan(
      0,
    );
    // Every answered request has a first byte, the streamed one when its first chunk left.
    expect(sample(text, 'tollgate_gateway_time_to_first_byte_seconds_count', { route })).toBe(5);
    expect(
      sample(text, 'tollgate_gateway_upstream_failures_total', {
        provider: 'mock-openai',
        cause: 'provider_error',
      }),
    ).toBe(1);
  });

  it('time a stream the client leaves without changing how it is settled', async () => {
    // The first-byte timing reads streams through a pass-through: a hang-up must still reach the relay.
    const { secret: leaving } = await customer.createKey({ name: 'metrics-hang-up' });
    const meter = new Meter(stack, customer.accountId);
    await meter.mark();
    const controller = new AbortController();
    const stream = await openaiClient(gateway.url, leaving).chat.completions.create(
      {
        ...chatRequest('gpt-e2e', 'Hi @mock(words=20,chunk_delay=100,input_tokens=50,output_tokens=20)'),
        stream: true,
      },
      { signal: controller.signal },
    );
    let chunks = 0;
    try {
      for await (const _chunk of stream) {
        chunks += 1;
        if (chunks === 2) controller.abort();
      }
    } catch (error) {
      expect(error).toBeInstanceOf(OpenAI.APIUserAbortError);
    }
    expect(chunks).toBeLessThan(20);
    const [row] = await meter.finished();
    expect(row).toMatchObject({ status: 'settled', outcome: 'client_disconnected', httpStatus: 499 });
    expect(row!.chargedCredits).toBeGreaterThan(0n);
  });

  it('are not served on the customer-facing port', async () => {
    expect((await fetch(`${gateway.url}/metrics`)).status).toBe(404);
  });
});
