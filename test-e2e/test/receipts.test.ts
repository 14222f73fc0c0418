/**
 * Receipts through the real processes (docs/receipts.md): the cost each answer reports is the
 * ledger's charge for that call, to the unit, over a thousand random calls on every surface,
 * streamed and not, served natively and translated, paid in credit or by a package; and the
 * official `openai` and `@anthropic-ai/sdk` clients read every such answer unchanged, the cost
 * fields present on what they return.
 */

import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicClient, openaiClient } from '../src/clients.ts';
import { type Customer, signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger } from '../src/ledger.ts';
import { type E2EStack, PRICES, startStack } from '../src/stack.ts';

let stack: E2EStack;
/** A gateway that waits long for settlements, so that every receipt on this busy box is confirmed. */
let gatewayUrl: string;
let customer: Customer;
let secrets: string[];

beforeAll(async () => {
  stack = await startStack('receipts', { anyProtocol: true });
  gatewayUrl = (await stack.startGateway('receipts', { RECEIPT_WAIT_MS: '20000' })).url;
  customer = await signUpCustomer(stack, { credits: 1_000_000_000_000n, packages: ['e2e-tokens'] });
  // Four keys, so a thousand calls stay inside each key's request ceiling.
  secrets = [];
  for (let index = 0; index < 4; index++) {
    const key = await customer.createKey({
      name: `receipts-${index}`,
      limits: { requestsPerMinute: 600, concurrency: 16 },
    });
    secrets.push(key.secret);
  }
}, 120_000);

afterAll(() => closeCheckingLedger(stack));

type Path = '/v1/messages' | '/v1/chat/completions' | '/v1/responses';
const PATHS: Path[] = ['/v1/messages', '/v1/chat/completions', '/v1/responses'];
/** Credit-priced aliases of each provider kind; each is native on one surface at most. */
const ALIASES = [
  'claude-any-e2e',
  'gpt-any-e2e',
  'gpt-azure-any-e2e',
  'claude-bedrock-any-e2e',
  'gemini-any-e2e',
  'claude-vertex-any-e2e',
  'gemini-vertex-any-e2e',
] as const;

// biome-ignore lint/suspicious/noExplicitAny: protocol JSON read in assertions
type Json = Record<string, any>;

interface Told {
  requestId: string;
  alias: string;
  usage: Json;
}

function bodyOf(path: Path, alias: string, stream: boolean, directives: string): Json {
  const text = `hello @mock(${directives})`;
  if (path === '/v1/responses')
    return { model: alias, input: text, max_output_tokens: 512, ...(stream ? { stream: true } : {}) };
  const body: Json = { model: alias, max_tokens: 512, messages: [{ role: 'user', content: text }] };
  if (!stream) return body;
  return path === '/v1/chat/completions'
    ? { ...body, stream: true, stream_options: { include_usage: true } }
    : { ...body, stream: true };
}

/** The usage object an answer told its caller: the body's, or its stream's final usage event's. */
function toldUsage(path: Path, text: string, stream: boolean): Json {
  if (!stream) return JSON.parse(text).usage;
  const events = text
    .split(/\r?\n\r?\n/)
    .map((block) =>
      block
        .split(/\r?\n/)
        .find((line) => line.startsWith('data: '))
        ?.slice(6),
    )
    .filter((data): data is string => data !== undefined && data !== '[DONE]')
    .map((data) => JSON.parse(data) as Json);
  if (path === '/v1/messages') return events.find((event) => event.type === 'message_delta')!.usage;
  if (path === '/v1/chat/completions')
    return events.find((event) => event.usage && event.choices?.length === 0)!.usage;
  return events.find((event) => event.type === 'response.completed')!.response.usage;
}

/** A small deterministic generator, so a failing run can be repeated. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

/**
 * The ledger's settle rows of these calls, per call: credits (the balance) and tokens (any
 * entitlement), read once none of the account's calls is still open or waiting in the hot tier.
 */
async function ledgerCharges(ids: string[]): Promise<Map<string, { credits: bigint; tokens: bigint }>> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const inRedis = await stack.callsInRedis(customer.accountId);
    const { rows } = await stack.db.query<{ open: string; written: string }>(
      `select count(*) filter (where status = 'reserved')::text as open, count(*)::text as written
       from reservations where id = any($1::uuid[])`,
      [ids],
    );
    if (inRedis === 0 && rows[0]!.open === '0' && Number(rows[0]!.written) === ids.length) break;
    if (Date.now() > deadline) throw new Error(`calls not written: ${JSON.stringify(rows[0])}`);
    // The processes announce no settlement to the test: read the ledger again.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const { rows } = await stack.db.query<{ reservation_id: string; credits: string; tokens: string }>(
    `select reservation_id,
            coalesce(sum(amount) filter (where entitlement_id is null), 0)::text as credits,
            coalesce(sum(amount) filter (where entitlement_id is not null), 0)::text as tokens
     from ledger_entries where kind = 'settle' and reservation_id = any($1::uuid[])
     group by reservation_id`,
    [ids],
  );
  const charges = new Map(ids.map((id) => [id, { credits: 0n, tokens: 0n }]));
  for (const row of rows)
    charges.set(row.reservation_id, { credits: BigInt(row.credits), tokens: BigInt(row.tokens) });
  return charges;
}

function expectReceiptMatches(told: Told, charge: { credits: bigint; tokens: bigint } | undefined): void {
  expect(charge, told.requestId).toBeDefined();
  expect(told.usage.cost_details, `${told.alias} ${told.requestId}`).toMatchObject({
    status: 'settled',
    request_id: told.requestId,
  });
  expect(BigInt(told.usage.cost)).toBe(charge!.credits);
  expect(BigInt(told.usage.cost_details.credits)).toBe(charge!.credits);
  expect(BigInt(told.usage.cost_details.entitlement_tokens)).toBe(charge!.tokens);
}

describe('a thousand random calls', () => {
  it('each report the cost the ledger charged for them, to the unit', { timeout: 120_000 }, async () => {
    const next = random(28);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
    const plans = Array.from({ length: 1000 }, (_, index) => {
      // One call in twenty on the package-only alias: its tokens pay, no credit.
      const packaged = index % 20 === 7;
      const path: Path = packaged ? '/v1/chat/completions' : pick(PATHS);
      return {
        path,
        alias: packaged ? 'gpt-tokens-e2e' : pick(ALIASES),
        stream: next() < 0.5,
        // Half the calls report less input than the gateway reserved for (their cost is told from
        // the reservation's legs at once), half mostly more (told from the settlement's answer).
        input: 1 + Math.floor(next() * (packaged ? 20 : next() < 0.5 ? 10 : 5_000)),
        output: 1 + Math.floor(next() * (packaged ? 10 : 400)),
        secret: secrets[index % secrets.length]!,
      };
    });
    const told: Told[] = [];
    let cursor = 0;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (cursor < plans.length) {
          const plan = plans[cursor++]!;
          const directives = `input_tokens=${plan.input},output_tokens=${plan.output}`;
          const response = await fetch(`${gatewayUrl}${plan.path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${plan.secret}`, 'content-type': 'application/json' },
            body: JSON.stringify(bodyOf(plan.path, plan.alias, plan.stream, directives)),
          });
          const text = await response.text();
          expect(response.status, `${plan.alias} ${plan.path}: ${text.slice(0, 300)}`).toBe(200);
          told.push({
            requestId: response.headers.get('x-request-id')!,
            alias: plan.alias,
            usage: toldUsage(plan.path, text, plan.stream),
          });
        }
      }),
    );
    const elapsed = Date.now() - started;
    expect(told).toHaveLength(1000);
    expect(new Set(told.map((call) => call.requestId)).size).toBe(1000);
    const charges = await ledgerCharges(told.map((call) => call.requestId));
    for (const call of told) expectReceiptMatches(call, charges.get(call.requestId));
    // Both kinds of payment were exercised, and every priced call cost something.
    expect(told.filter((call) => call.usage.cost_details.entitlement_tokens > 0).length).toBeGreaterThan(0);
    expect(told.filter((call) => call.usage.cost > 0).length).toBeGreaterThan(900);
    console.info(`receipts: 1000 calls in ${elapsed} ms`);
  });
});

describe('the official clients', () => {
  let openai: OpenAI;
  let anthropic: Anthropic;
  const told: Told[] = [];
  beforeAll(() => {
    openai = openaiClient(gatewayUrl, secrets[0]!);
    anthropic = anthropicClient(gatewayUrl, { apiKey: secrets[1]! });
  });

  // One native and two translated aliases on each surface.
  const aliases = ['claude-any-e2e', 'gpt-any-e2e', 'gemini-any-e2e'] as const;
  const prompt = (alias: string) => `hello @mock(input_tokens=${alias.length * 10},output_tokens=7)`;

  it('openai chat completions: the cost on the completion and on the stream usage chunk', async () => {
    for (const alias of aliases) {
      const { data, response } = await openai.chat.completions
        .create({ model: alias, max_tokens: 64, messages: [{ role: 'user', content: prompt(alias) }] })
        .withResponse();
      expect(data.choices[0]!.message.content).toMatch(/mock/);
      told.push({ requestId: response.headers.get('x-request-id')!, alias, usage: data.usage as Json });

      const streamed = await openai.chat.completions
        .create({
          model: alias,
          max_tokens: 64,
          messages: [{ role: 'user', content: prompt(alias) }],
          stream: true,
          stream_options: { include_usage: true },
        })
        .withResponse();
      let usage: Json | undefined;
      for await (const chunk of streamed.data) if (chunk.usage) usage = chunk.usage as Json;
      told.push({ requestId: streamed.response.headers.get('x-request-id')!, alias, usage: usage! });
    }
  });

  it('openai responses: the cost on the response and in response.completed', async () => {
    for (const alias of aliases) {
      const { data, response } = await openai.responses
        .create({ model: alias, input: prompt(alias) })
        .withResponse();
      expect(data.output_text).toMatch(/mock/);
      told.push({ requestId: response.headers.get('x-request-id')!, alias, usage: data.usage as Json });

      const streamed = await openai.responses
        .create({ model: alias, input: prompt(alias), stream: true })
        .withResponse();
      let usage: Json | undefined;
      for await (const event of streamed.data) {
        if (event.type === 'response.completed') usage = event.response.usage as Json;
      }
      told.push({ requestId: streamed.response.headers.get('x-request-id')!, alias, usage: usage! });
    }
  });

  it('anthropic messages: the cost on the message and on the message_delta event', async () => {
    for (const alias of aliases) {
      const { data, response } = await anthropic.messages
        .create({ model: alias, max_tokens: 64, messages: [{ role: 'user', content: prompt(alias) }] })
        .withResponse();
      expect(data.content[0]).toMatchObject({ type: 'text' });
      told.push({ requestId: response.headers.get('x-request-id')!, alias, usage: data.usage as Json });

      const stream = anthropic.messages.stream({
        model: alias,
        max_tokens: 64,
        messages: [{ role: 'user', content: prompt(alias) }],
      });
      let usage: Json | undefined;
      for await (const event of stream) if (event.type === 'message_delta') usage = event.usage as Json;
      const final = await stream.finalMessage();
      expect(final.content[0]).toMatchObject({ type: 'text' });
      const { response: streamResponse } = await stream.withResponse();
      told.push({ requestId: streamResponse.headers.get('x-request-id')!, alias, usage: usage! });
    }
  });

  it('were told what the ledger charged, each call', async () => {
    expect(told).toHaveLength(aliases.length * 6);
    const charges = await ledgerCharges(told.map((call) => call.requestId));
    for (const call of told) {
      expectReceiptMatches(call, charges.get(call.requestId));
      const prices = PRICES[call.alias as keyof typeof PRICES];
      expect(prices).toBeDefined();
      expect(call.usage.cost).toBeGreaterThan(0);
    }
  });
});
