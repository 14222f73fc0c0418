/**
 * The azure-openai kind through the whole gateway against the mock's Azure wire format: the
 * deployment URL with its api-version and the api-key header (or an Entra token), the answer named
 * as the alias (Azure names the deployment's model), Azure's prompt filter chunk never relayed,
 * its usage chunk metered, content-filter refusals as upstream_rejected naming no provider, and
 * every surface, native or translated, charged exactly what the caller was told.
 */

import { AZURE_MODEL } from '@tollgate/mock-upstream';
import { describe, expect, it } from 'vitest';
import { PROVIDER_KEY } from './stack.ts';
import { bodyFor, type Json, sseData, uniqueTag, useStack } from './support.ts';

const DEPLOYMENT = 'upstream-gpt-deploy-1';

const t = useStack('gw-azure', {
  catalog: (mockUrl) => `
providers:
  - { id: mock-azure, kind: azure-openai, base_url: "${mockUrl}", credential: TOLLGATE_PROVIDER_MOCK_KEY }
  - { id: mock-azure-entra, kind: azure-openai, base_url: "${mockUrl}/openai?api-version=2025-04-01-preview",
      credential: TOLLGATE_PROVIDER_AZURE_ENTRA }
aliases:
  - { alias: gpt-azure, provider: mock-azure, upstream_model: ${DEPLOYMENT},
      protocols: [chat_completions, responses, messages, count_tokens],
      price: { input: 2, output: 8 }, default_max_output_tokens: 256, max_output_tokens: 4096 }
  - { alias: gpt-azure-entra, provider: mock-azure-entra, upstream_model: ${DEPLOYMENT},
      protocols: [chat_completions], price: { input: 2, output: 8 }, default_max_output_tokens: 256,
      max_output_tokens: 4096 }
`,
  // The mock accepts the key as `api-key` or as a Bearer token.
  gatewayEnv: { TOLLGATE_PROVIDER_AZURE_ENTRA: `Bearer ${PROVIDER_KEY}` },
});

const CREDITS = 10_000_000n;
const cost = (input: number, output: number) => BigInt(input) * 2n + BigInt(output) * 8n;

async function expectCharged(accountId: string, credits: bigint): Promise<void> {
  await t.stack.settled();
  expect(await t.stack.balances(accountId)).toMatchObject({
    credits: CREDITS - credits,
    reservedCredits: 0n,
  });
}

/** Every call so far reached the provider and was refused: reserved, then released, nothing charged. */
async function expectReleased(accountId: string): Promise<void> {
  await expectCharged(accountId, 0n);
  const reservations = await t.stack.reservations(accountId);
  expect(reservations.map((reservation) => reservation.status)).toEqual(reservations.map(() => 'released'));
}

function expectNoAzureTrace(text: string): void {
  for (const word of [AZURE_MODEL, DEPLOYMENT, 'mock-azure', 'prompt_filter_results', PROVIDER_KEY])
    expect(text).not.toContain(word);
}

describe('azure-openai: native chat completions', () => {
  it('calls the deployment URL with api-version and api-key, answers as the alias, charges the usage', async () => {
    const key = await t.key({ credits: CREDITS });
    const tag = uniqueTag('az');
    const reply = await t.post(
      '/v1/chat/completions',
      key.secret,
      bodyFor('/v1/chat/completions', 'gpt-azure', `tag=${tag},input_tokens=31,output_tokens=5`),
    );
    expect(reply.status, reply.text).toBe(200);
    const body = JSON.parse(reply.text) as Json;
    expect(body.model).toBe('gpt-azure');
    expect(body.choices[0].message.content).toBe('Hello from the mock upstream.');
    expect(body.usage).toMatchObject({ prompt_tokens: 31, completion_tokens: 5 });
    expect(reply.text).not.toContain(AZURE_MODEL);
    const [recorded] = t.stack.mock.requests(tag);
    expect(recorded?.path).toBe(`/openai/deployments/${DEPLOYMENT}/chat/completions`);
    expect(recorded?.headers['api-key']).toBe(PROVIDER_KEY);
    expect(recorded?.headers.authorization).toBeUndefined();
    await expectCharged(key.accountId, cost(31, 5));
  });

  it('drops the prompt filter chunk and meters the usage chunk, shown only when asked', async () => {
    for (const includeUsage of [true, false]) {
      const key = await t.key({ credits: CREDITS });
      const reply = await t.post(
        '/v1/chat/completions',
        key.secret,
        bodyFor('/v1/chat/completions', 'gpt-azure', 'words=3,input_tokens=12,output_tokens=3', {
          stream: true,
          ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
        }),
      );
      expect(reply.status, reply.text).toBe(200);
      expect(reply.text.endsWith('data: [DONE]\n\n')).toBe(true);
      const chunks = sseData(reply.text);
      expectNoAzureTrace(reply.text);
      expect(chunks.every((chunk) => chunk.model === 'gpt-azure' && chunk.id !== '')).toBe(true);
      expect(chunks[0]!.choices[0].delta.role).toBe('assistant');
      expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('Hello from the');
      const choiceless = chunks.filter((chunk) => chunk.choices.length === 0);
      expect(choiceless.map((chunk) => chunk.usage)).toEqual(
        includeUsage ? [expect.objectContaining({ prompt_tokens: 12, completion_tokens: 3 })] : [],
      );
      await expectCharged(key.accountId, cost(12, 3));
    }
  });

  it('sends an Entra token as Authorization: Bearer with the api-version of the base URL', async () => {
    const key = await t.key({ credits: CREDITS });
    const tag = uniqueTag('entra');
    const reply = await t.post(
      '/v1/chat/completions',
      key.secret,
      bodyFor('/v1/chat/completions', 'gpt-azure-entra', `tag=${tag},input_tokens=4,output_tokens=5`),
    );
    expect(reply.status, reply.text).toBe(200);
    const [recorded] = t.stack.mock.requests(tag);
    expect(recorded?.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
    expect(recorded?.headers['api-key']).toBeUndefined();
    await expectCharged(key.accountId, cost(4, 5));
  });
});

describe('azure-openai: content filter', () => {
  it('refuses a filtered prompt as upstream_rejected 400 naming no provider, charging nothing', async () => {
    for (const path of ['/v1/chat/completions', '/v1/responses', '/v1/messages']) {
      for (const stream of [false, true]) {
        const key = await t.key({ credits: CREDITS });
        const reply = await t.post(
          path,
          key.secret,
          bodyFor(path, 'gpt-azure', 'content_filter=prompt', stream ? { stream: true } : {}),
        );
        const message = t.expectError(reply, 400, 'upstream_rejected');
        expect(message).toBe('gpt-azure refused the request under its content policy. Nothing was charged.');
        expect(reply.text).not.toMatch(/Azure|Responsible|innererror|filter_result/);
        await expectReleased(key.accountId);
      }
    }
  });

  it('relays a completion the filter stopped with its stop reason in each protocol, charged as billed', async () => {
    const key = await t.key({ credits: CREDITS });
    const chat = await t.post(
      '/v1/chat/completions',
      key.secret,
      bodyFor(
        '/v1/chat/completions',
        'gpt-azure',
        'content_filter=completion,input_tokens=10,output_tokens=1',
      ),
    );
    expect(JSON.parse(chat.text).choices[0].finish_reason).toBe('content_filter');
    const messages = await t.post(
      '/v1/messages',
      key.secret,
      bodyFor('/v1/messages', 'gpt-azure', 'content_filter=completion,input_tokens=10,output_tokens=1'),
    );
    expect(JSON.parse(messages.text)).toMatchObject({ stop_reason: 'refusal', model: 'gpt-azure' });
    const streamed = await t.post(
      '/v1/messages',
      key.secret,
      bodyFor('/v1/messages', 'gpt-azure', 'content_filter=completion,input_tokens=10,output_tokens=1', {
        stream: true,
      }),
    );
    const delta = sseData(streamed.text).find((event) => event.type === 'message_delta')!;
    expect(delta).toMatchObject({ delta: { stop_reason: 'refusal' }, usage: { output_tokens: 1 } });
    expectNoAzureTrace(streamed.text);
    await expectCharged(key.accountId, 3n * cost(10, 1));
  });
});

describe('azure-openai: responses and translated surfaces', () => {
  it('sends responses to /openai/responses with the deployment as model, streamed and not', async () => {
    for (const stream of [false, true]) {
      const key = await t.key({ credits: CREDITS });
      const tag = uniqueTag('azr');
      const reply = await t.post(
        '/v1/responses',
        key.secret,
        bodyFor('/v1/responses', 'gpt-azure', `tag=${tag},input_tokens=20,output_tokens=5`, { stream }),
      );
      expect(reply.status, reply.text).toBe(200);
      expectNoAzureTrace(reply.text);
      const [recorded] = t.stack.mock.requests(tag);
      expect(recorded?.path).toBe('/openai/responses');
      expect(JSON.parse(recorded!.body).model).toBe(DEPLOYMENT);
      const usage = stream
        ? sseData(reply.text).find((event) => event.type === 'response.completed')!.response.usage
        : JSON.parse(reply.text).usage;
      expect(usage).toMatchObject({ input_tokens: 20, output_tokens: 5 });
      await expectCharged(key.accountId, cost(20, 5));
    }
  });

  it('answers /v1/messages through the deployment chat URL, streamed and not, charging what it told', async () => {
    for (const stream of [false, true]) {
      const key = await t.key({ credits: CREDITS });
      const tag = uniqueTag('azm');
      const reply = await t.post(
        '/v1/messages',
        key.secret,
        bodyFor('/v1/messages', 'gpt-azure', `tag=${tag},words=3,input_tokens=40,output_tokens=3`, {
          stream,
        }),
      );
      expect(reply.status, reply.text).toBe(200);
      expectNoAzureTrace(reply.text);
      const [recorded] = t.stack.mock.requests(tag);
      expect(recorded?.path).toBe(`/openai/deployments/${DEPLOYMENT}/chat/completions`);
      const events = stream ? sseData(reply.text) : [];
      const usage = stream
        ? events.find((event) => event.type === 'message_delta')!.usage
        : JSON.parse(reply.text).usage;
      const text = stream
        ? events
            .filter((event) => event.type === 'content_block_delta')
            .map((event) => event.delta.text)
            .join('')
        : JSON.parse(reply.text).content[0].text;
      expect(text).toBe('Hello from the');
      expect(usage).toMatchObject({ input_tokens: 40, output_tokens: 3 });
      await expectCharged(key.accountId, cost(40, 3));
    }
  });
});

describe('azure-openai: failures', () => {
  it('a refused credential, a throttle and a mid-stream error end with the spec codes, nothing charged', async () => {
    const key = await t.key({ credits: CREDITS });
    const throttled = await t.post(
      '/v1/chat/completions',
      key.secret,
      bodyFor('/v1/chat/completions', 'gpt-azure', 'status=429,retry_after=1'),
    );
    t.expectError(throttled, 503, 'upstream_unavailable');
    const refused = await t.post(
      '/v1/chat/completions',
      key.secret,
      bodyFor('/v1/chat/completions', 'gpt-azure', 'status=401'),
    );
    t.expectError(refused, 503, 'upstream_unavailable');
    await expectReleased(key.accountId);

    const streamed = await t.post(
      '/v1/chat/completions',
      key.secret,
      bodyFor('/v1/chat/completions', 'gpt-azure', 'stream_error', { stream: true }),
    );
    expect(streamed.status).toBe(200);
    const last = sseData(streamed.text).at(-1)!;
    expect(last.error.code).toBe('upstream_unavailable');
    await t.stack.settled();
    // Cut before its usage: held for reconciliation, never charged as used.
    const held = (await t.stack.reservations(key.accountId)).filter((row) => row.status === 'held');
    expect(held).toEqual([expect.objectContaining({ outcome: 'upstream_unavailable', charged_credits: 0n })]);
  });
});
