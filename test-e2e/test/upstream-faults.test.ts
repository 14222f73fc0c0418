/**
 * The provider misbehaves (the mock's fault directives): the clients get our codes, before or in
 * the middle of a stream (ARCHITECTURE.md mid-stream formats, which each client's stream parser
 * raises), and the ledger shows each reservation released or held, never charged on an estimate.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  anthropicClient,
  anthropicServiceCode,
  expectAnthropicError,
  expectOpenAIError,
  openaiClient,
  rejection,
} from '../src/clients.ts';
import { type Customer, signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger, Meter, type Reservation } from '../src/ledger.ts';
import { type E2EStack, PROVIDER_KEY, startStack, UPSTREAM_MODELS } from '../src/stack.ts';

let stack: E2EStack;
let customer: Customer;
let meter: Meter;
let openai: OpenAI;
let anthropic: Anthropic;
/** Clients of a gateway that waits 400 ms for the provider's headers and between body chunks. */
let impatient: { openai: OpenAI; anthropic: Anthropic };

beforeAll(async () => {
  stack = await startStack('upstream-faults');
  customer = await signUpCustomer(stack, { credits: 10_000_000n });
  const { secret } = await customer.createKey({ name: 'faults' });
  openai = openaiClient(stack.gatewayUrl, secret);
  anthropic = anthropicClient(stack.gatewayUrl, { apiKey: secret });
  const gateway = await stack.startGateway('impatient', {
    UPSTREAM_HEADERS_TIMEOUT_MS: '400',
    UPSTREAM_BODY_TIMEOUT_MS: '400',
  });
  impatient = {
    openai: openaiClient(gateway.url, secret),
    anthropic: anthropicClient(gateway.url, { apiKey: secret }),
  };
  meter = new Meter(stack, customer.accountId);
});

beforeEach(() => meter.mark());

afterAll(() => closeCheckingLedger(stack));

const chat = (
  directives: string,
  extra: Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming> = {},
) => ({
  model: 'gpt-e2e',
  max_tokens: 64,
  messages: [{ role: 'user' as const, content: `Hi @mock(${directives})` }],
  ...extra,
});
const message = (directives: string) => ({
  model: 'claude-e2e',
  max_tokens: 64,
  messages: [{ role: 'user' as const, content: `Hi @mock(${directives})` }],
});

/** Nothing in a client-visible error names the provider, its address, its model id or its key. */
function expectNoProviderDetails(error: Error): void {
  const text = `${error.message} ${JSON.stringify(error)}`;
  for (const secret of [
    UPSTREAM_MODELS.gpt,
    UPSTREAM_MODELS.claude,
    PROVIDER_KEY,
    stack.mockUrl,
    'mock-openai',
  ]) {
    expect(text).not.toContain(secret);
  }
}

async function finishedAs(expected: Partial<Reservation>): Promise<Reservation> {
  const [row] = await meter.finished();
  expect(row).toMatchObject({ chargedTokens: 0n, chargedCredits: 0n, ...expected });
  return row!;
}

describe('before the answer starts', () => {
  it('a provider 5xx is upstream_unavailable (InternalServerError, 503); released', async () => {
    const error = await expectOpenAIError(
      openai.chat.completions.create(chat('status=500')),
      OpenAI.InternalServerError,
      503,
      'upstream_unavailable',
    );
    expectNoProviderDetails(error);
    await finishedAs({ status: 'released', outcome: 'upstream_unavailable', httpStatus: 503 });

    await expectAnthropicError(
      anthropic.messages.create({ ...message('status=529'), stream: true }),
      Anthropic.InternalServerError,
      503,
      'upstream_unavailable',
    );
    await finishedAs({ status: 'released', outcome: 'upstream_unavailable', httpStatus: 503 });
  });

  it('a provider 429 is upstream_unavailable too (the customer did not exceed anything)', async () => {
    await expectOpenAIError(
      openai.responses.create({ model: 'gpt-e2e', input: 'Hi @mock(status=429,retry_after=3)' }),
      OpenAI.InternalServerError,
      503,
      'upstream_unavailable',
    );
    await finishedAs({ status: 'released', outcome: 'upstream_unavailable', httpStatus: 503 });
  });

  it('a provider 4xx is upstream_rejected with its status; released', async () => {
    const error = await expectAnthropicError(
      anthropic.messages.create(message('status=400')),
      Anthropic.BadRequestError,
      400,
      'upstream_rejected',
    );
    expectNoProviderDetails(error);
    await finishedAs({ status: 'released', outcome: 'upstream_rejected', httpStatus: 400 });
    await expectOpenAIError(
      openai.chat.completions.create(chat('status=422')),
      OpenAI.UnprocessableEntityError,
      422,
      'upstream_rejected',
    );
    await finishedAs({ status: 'released', outcome: 'upstream_rejected', httpStatus: 422 });
  });

  it('a provider slower than the headers timeout is upstream_unavailable; released', async () => {
    await expectOpenAIError(
      impatient.openai.chat.completions.create(chat('delay=2000')),
      OpenAI.InternalServerError,
      503,
      'upstream_unavailable',
    );
    await finishedAs({ status: 'released', outcome: 'upstream_unavailable', httpStatus: 503 });
  });

  it('a body that is not JSON is upstream_invalid_response (502); released, not charged', async () => {
    await expectOpenAIError(
      openai.chat.completions.create(chat('invalid_json,input_tokens=10,output_tokens=5')),
      OpenAI.InternalServerError,
      502,
      'upstream_invalid_response',
    );
    await finishedAs({ status: 'released', outcome: 'upstream_invalid_response', httpStatus: 502 });
  });

  it('an answer without usage is billing_settlement_pending (502); held, not billed on an estimate', async () => {
    await expectAnthropicError(
      anthropic.messages.create(message('no_usage')),
      Anthropic.InternalServerError,
      502,
      'billing_settlement_pending',
    );
    await finishedAs({ status: 'held', outcome: 'billing_settlement_pending', httpStatus: 502 });
  });
});

describe('in the middle of a stream', () => {
  it('a stream without usage reaches the client whole and is held', async () => {
    // The raw events: the .stream() helper itself needs the usage a real provider always sends.
    const stream = await anthropic.messages.create({ ...message('no_usage,words=3'), stream: true });
    const events: Anthropic.RawMessageStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    expect(events.at(-1)?.type).toBe('message_stop');
    const text = events.flatMap((event) =>
      event.type === 'content_block_delta' && event.delta.type === 'text_delta' ? [event.delta.text] : [],
    );
    expect(text.join('')).toBe('Hello from the');
    await finishedAs({ status: 'held', outcome: 'billing_settlement_pending', httpStatus: 200 });
  });

  it('a stream whose connection drops ends with our error event (upstream_unavailable), which the Anthropic client raises; held', async () => {
    const stream = anthropic.messages.stream(message('cut_after=4,words=5'));
    const error = await rejection(stream.finalMessage());
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(anthropicServiceCode(error as InstanceType<typeof Anthropic.APIError>)).toBe(
      'upstream_unavailable',
    );
    await finishedAs({ status: 'held', outcome: 'upstream_unavailable', httpStatus: 503 });
  });

  it('a cut chat stream ends with our error chunk, which the openai client raises with our code; held', async () => {
    const stream = await openai.chat.completions.create({ ...chat('cut_after=3,words=5'), stream: true });
    const contents: string[] = [];
    const error = await rejection(
      (async () => {
        for await (const chunk of stream) contents.push(chunk.choices[0]?.delta.content ?? '');
      })(),
    );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('upstream_unavailable');
    expect(contents.join('')).toMatch(/^Hello/);
    await finishedAs({ status: 'held', outcome: 'upstream_unavailable', httpStatus: 503 });
  });

  it('a cut responses stream ends with our error event, which the openai client raises with our code; held', async () => {
    const stream = openai.responses.stream({ model: 'gpt-e2e', input: 'Hi @mock(cut_after=4,words=5)' });
    const error = await rejection(stream.finalResponse());
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('upstream_unavailable');
    await finishedAs({ status: 'held', outcome: 'upstream_unavailable', httpStatus: 503 });
  });

  it('an event that is not JSON ends the stream with upstream_invalid_response; held', async () => {
    const stream = await openai.chat.completions.create({ ...chat('invalid_json'), stream: true });
    const error = await rejection(
      (async () => {
        for await (const _chunk of stream);
      })(),
    );
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('upstream_invalid_response');
    await finishedAs({ status: 'held', outcome: 'upstream_invalid_response', httpStatus: 502 });
  });

  it("the provider's own error event becomes upstream_unavailable in our format; held", async () => {
    const error = await rejection(anthropic.messages.stream(message('stream_error,words=4')).finalMessage());
    expect(anthropicServiceCode(error as InstanceType<typeof Anthropic.APIError>)).toBe(
      'upstream_unavailable',
    );
    expectNoProviderDetails(error as Error);
    await finishedAs({ status: 'held', outcome: 'upstream_unavailable', httpStatus: 503 });
  });

  it('a provider silent for longer than the body timeout ends the stream with upstream_unavailable; held', async () => {
    const stream = impatient.anthropic.messages.stream(message('chunk_delay=1500,words=3'));
    const error = await rejection(stream.finalMessage());
    expect(anthropicServiceCode(error as InstanceType<typeof Anthropic.APIError>)).toBe(
      'upstream_unavailable',
    );
    await finishedAs({ status: 'held', outcome: 'upstream_unavailable', httpStatus: 503 });
  });
});

describe('a client that leaves', () => {
  it('mid-stream: the upstream is read to its end and its usage settled, recorded as client_disconnected (499)', async () => {
    const controller = new AbortController();
    const stream = await openai.chat.completions.create(
      { ...chat('words=20,chunk_delay=100,input_tokens=50,output_tokens=20'), stream: true },
      { signal: controller.signal },
    );
    let chunks = 0;
    try {
      for await (const _chunk of stream) {
        chunks += 1;
        if (chunks === 2) controller.abort();
      }
    } catch (error) {
      // Depending on where the abort lands, the client ends the loop quietly or raises this.
      expect(error).toBeInstanceOf(OpenAI.APIUserAbortError);
    }
    expect(chunks).toBeLessThan(20);
    // The answer was produced (and is billed by the provider): an early hang-up is not free.
    const [row] = await meter.finished();
    expect(row).toMatchObject({ status: 'settled', outcome: 'client_disconnected', httpStatus: 499 });
    expect(row!.chargedCredits).toBeGreaterThan(0n);
    // The customer's activity shows it the same way.
    const activity = await customer.dashboard.request('GET', '/me/activity');
    expect(activity.body.data.items).toContainEqual(
      expect.objectContaining({
        id: row!.id,
        status: 'settled',
        outcome: 'client_disconnected',
        httpStatus: 499,
        charged: { tokens: '0', credits: String(row!.chargedCredits) },
      }),
    );
  });

  it('with the Anthropic stream helper aborted after the first text: settled as client_disconnected (499)', async () => {
    const stream = anthropic.messages.stream(
      message('words=20,chunk_delay=100,input_tokens=40,output_tokens=20'),
    );
    await new Promise<void>((resolve) => stream.once('text', () => resolve()));
    stream.abort();
    expect(await rejection(stream.finalMessage())).toBeInstanceOf(Anthropic.APIUserAbortError);
    const [row] = await meter.finished();
    expect(row).toMatchObject({ status: 'settled', outcome: 'client_disconnected', httpStatus: 499 });
    expect(row!.chargedCredits).toBeGreaterThan(0n);
  });

  it('before a non-streamed answer: the answer is read and its usage settled as client_disconnected (499)', async () => {
    // docs/decisions/client-gone-non-streamed.md: the provider bills the operator for an answer
    // generated for a client that left, so the customer is charged what the provider reported.
    const controller = new AbortController();
    const call = anthropic.messages.create(message('delay=1500,input_tokens=50,output_tokens=5'), {
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 300); // the client leaves while the provider is still answering
    expect(await rejection(call)).toBeInstanceOf(Anthropic.APIUserAbortError);
    const [row] = await meter.finished();
    expect(row).toMatchObject({
      status: 'settled',
      outcome: 'client_disconnected',
      httpStatus: 499,
      inputTokens: 50n,
      outputTokens: 5n,
    });
    expect(row!.chargedCredits).toBeGreaterThan(0n);
  });
});
