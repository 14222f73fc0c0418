/**
 * The quick start's defaults: no DATABASE_URL (PGlite in the data folder, served on a unix socket
 * to the control plane's own pool, the CLI and these tests) and no REDIS_URL. The socket server
 * serves every connection from one shared database session, which real Postgres does not: a pool
 * that drops its idle connection and connects again must still meter every call. The idle timeout
 * is 1 s here, so each pause below outlives the connection it started on.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { anthropicClient, openaiClient } from '../src/clients.ts';
import { signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger, expectSettledInCredits, Meter } from '../src/ledger.ts';
import { type E2EStack, PRICES, startStack } from '../src/stack.ts';

const IDLE_TIMEOUT_SECONDS = 1;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Longer than the pool's idle timeout: the next query runs on a new connection. */
const outliveIdleConnection = () => pause(IDLE_TIMEOUT_SECONDS * 1000 * 2 + 500);

let stack: E2EStack;
let meter: Meter;
let openai: OpenAI;
let anthropic: Anthropic;
let email: string;

beforeAll(async () => {
  stack = await startStack('embedded', {
    embedded: true,
    controlPlaneEnv: { DATABASE_IDLE_TIMEOUT_SECONDS: String(IDLE_TIMEOUT_SECONDS) },
  });
  const customer = await signUpCustomer(stack, { credits: 10_000_000n });
  email = customer.email;
  const { secret } = await customer.createKey({ name: 'embedded' });
  openai = openaiClient(stack.gatewayUrl, secret);
  anthropic = anthropicClient(stack.gatewayUrl, { apiKey: secret });
  meter = new Meter(stack, customer.accountId);
});

beforeEach(() => meter.mark());

afterAll(() => closeCheckingLedger(stack));

async function chat(input: number, output: number) {
  const completion = await openai.chat.completions.create({
    model: 'gpt-e2e',
    messages: [{ role: 'user', content: `Hi @mock(input_tokens=${input},output_tokens=${output})` }],
  });
  expect(completion.usage).toMatchObject({ prompt_tokens: input, completion_tokens: output });
}

async function streamedChat(input: number, output: number, chunkDelay = 0) {
  const stream = await openai.chat.completions.create({
    model: 'gpt-e2e',
    stream: true,
    messages: [
      {
        role: 'user',
        content: `Hi @mock(words=5,chunk_delay=${chunkDelay},input_tokens=${input},output_tokens=${output})`,
      },
    ],
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
  expect(text).toBe('Hello from the mock upstream.');
}

describe('metering on the embedded database', () => {
  it('meters calls before and after the pool dropped its idle connection', async () => {
    await chat(11, 3);
    await streamedChat(12, 4);
    await outliveIdleConnection();
    await chat(13, 5);
    await outliveIdleConnection();
    await streamedChat(14, 6);
    await outliveIdleConnection();
    const message = await anthropic.messages.create({
      model: 'claude-e2e',
      max_tokens: 32,
      messages: [{ role: 'user', content: 'Hi @mock(input_tokens=15,output_tokens=7)' }],
    });
    expect(message.usage).toMatchObject({ input_tokens: 15, output_tokens: 7 });

    const rows = await meter.finished(5);
    expect(rows.map((row) => row.status)).toEqual(Array(5).fill('settled'));
    const usages: Array<[number, number]> = [
      [11, 3],
      [12, 4],
      [13, 5],
      [14, 6],
    ];
    usages.forEach(([input, output], index) => {
      expectSettledInCredits(rows[index]!, PRICES['gpt-e2e'], { input, output });
    });
    expectSettledInCredits(rows[4]!, PRICES['claude-e2e'], { input: 15, output: 7 });
  });

  it('settles a stream whose connection was dropped while it ran', async () => {
    // Reserved on one connection; the stream outlives it, so the settlement opens a new one.
    await streamedChat(21, 8, 800);
    const stream = anthropic.messages.stream({
      model: 'claude-e2e',
      max_tokens: 32,
      messages: [
        { role: 'user', content: 'Hi @mock(words=5,chunk_delay=800,input_tokens=22,output_tokens=9)' },
      ],
    });
    const final = await stream.finalMessage();
    expect(final.usage).toMatchObject({ input_tokens: 22, output_tokens: 9 });

    const rows = await meter.finished(2);
    expect(rows.map((row) => row.status)).toEqual(['settled', 'settled']);
    expectSettledInCredits(rows[0]!, PRICES['gpt-e2e'], { input: 21, output: 8 });
    expectSettledInCredits(rows[1]!, PRICES['claude-e2e'], { input: 22, output: 9 });
  });

  it('lets the operator CLI use the socket while the control plane serves calls', async () => {
    // CLI commands and metered calls at the same time, all on the one shared session.
    const other = `other-${Date.now()}@example.test`;
    const [granted] = await Promise.all([
      stack
        .admin('create-account', other)
        .then(() => stack.admin('grant-credit', other, '1000', '--note', 'while serving')),
      chat(31, 2),
      streamedChat(32, 3, 50),
      chat(33, 4),
    ]);
    expect(granted).toMatchObject({ granted: '1000' });
    expect(await stack.admin('verify-ledger', email)).toEqual({ consistent: true, problems: [] });
    const rows = await meter.finished(3);
    expect(rows.map((row) => row.status)).toEqual(['settled', 'settled', 'settled']);
    await outliveIdleConnection();
    await chat(34, 5);
    const [last] = await meter.finished();
    expectSettledInCredits(last!, PRICES['gpt-e2e'], { input: 34, output: 5 });
  });
});
