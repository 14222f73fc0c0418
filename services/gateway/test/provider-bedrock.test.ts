/**
 * The bedrock kind through the whole gateway against the mock's Bedrock runtime: SigV4-signed
 * InvokeModel and InvokeModelWithResponseStream (the mock checks each signature by signing the
 * request again), Bedrock's body envelope, the binary event stream decoded into each surface's
 * events, usage from message_start and message_delta charged exactly, and a wrong signature, a
 * throttle, a mid-stream exception and a broken frame each ending with the spec's code.
 */
import { BEDROCK_MODEL, EXPIRED_SESSION_TOKEN_PREFIX } from '@tollgate/mock-upstream';
import { describe, expect, it } from 'vitest';
import { PROVIDER_KEY } from './stack.ts';
import { bodyFor, type Json, sseData, uniqueTag, useStack } from './support.ts';

const MODEL_ID = 'anthropic.upstream-claude-bedrock-v1:0';
const ANTHROPIC_MODEL = 'upstream-claude-direct-1';
const keyPair = (secretAccessKey: string, sessionToken?: string) =>
  JSON.stringify({ accessKeyId: 'AKIDTOLLGATETEST', secretAccessKey, sessionToken, region: 'us-east-1' });
const EXPIRED_TOKEN = `${EXPIRED_SESSION_TOKEN_PREFIX}sts-token-of-yesterday`;

const t = useStack('gw-bedrock', {
  catalog: (mockUrl) => `
providers:
  - { id: mock-bedrock, kind: bedrock, base_url: "${mockUrl}", credential: TOLLGATE_PROVIDER_BEDROCK_KEYS }
  - { id: mock-bedrock-key, kind: bedrock, base_url: "${mockUrl}", credential: TOLLGATE_PROVIDER_MOCK_KEY }
  - { id: mock-bedrock-wrong, kind: bedrock, base_url: "${mockUrl}", credential: TOLLGATE_PROVIDER_BEDROCK_WRONG }
  - { id: mock-bedrock-expired, kind: bedrock, base_url: "${mockUrl}", credential: TOLLGATE_PROVIDER_BEDROCK_EXPIRED }
  - { id: mock-anthropic, kind: anthropic, base_url: "${mockUrl}", credential: TOLLGATE_PROVIDER_MOCK_KEY }
  - { id: anthropic-down, kind: anthropic, base_url: "http://127.0.0.1:1", credential: TOLLGATE_PROVIDER_MOCK_KEY }
aliases:
  - alias: claude-failover
    upstreams:
      - { provider: anthropic-down, upstream_model: ${ANTHROPIC_MODEL} }
      - { provider: mock-bedrock, upstream_model: "${MODEL_ID}", priority: 1 }
    protocols: [messages, chat_completions]
    price: { input: 3, output: 15 }
    default_max_output_tokens: 256
    max_output_tokens: 4096
  - alias: claude-overloaded
    upstreams:
      - { provider: mock-anthropic, upstream_model: ${ANTHROPIC_MODEL} }
      - { provider: mock-bedrock, upstream_model: "${MODEL_ID}", priority: 1 }
    protocols: [messages, chat_completions]
    price: { input: 3, output: 15 }
    default_max_output_tokens: 256
    max_output_tokens: 4096
  - { alias: claude-bedrock, provider: mock-bedrock, upstream_model: "${MODEL_ID}",
      protocols: [messages, count_tokens, chat_completions, responses],
      price: { input: 3, output: 15 }, default_max_output_tokens: 256, max_output_tokens: 4096 }
  - { alias: claude-bedrock-key, provider: mock-bedrock-key, upstream_model: "${MODEL_ID}", protocols: [messages],
      price: { input: 3, output: 15 }, default_max_output_tokens: 256, max_output_tokens: 4096 }
  - { alias: claude-bedrock-wrong, provider: mock-bedrock-wrong, upstream_model: "${MODEL_ID}",
      protocols: [messages, chat_completions], price: { input: 3, output: 15 }, default_max_output_tokens: 256,
      max_output_tokens: 4096 }
  - { alias: claude-bedrock-expired, provider: mock-bedrock-expired, upstream_model: "${MODEL_ID}",
      protocols: [messages, chat_completions], price: { input: 3, output: 15 }, default_max_output_tokens: 256,
      max_output_tokens: 4096 }
`,
  gatewayEnv: {
    // Each failover test starts from the alias's own order.
    ROUTING_COOLDOWN_MS: '0',
    TOLLGATE_PROVIDER_BEDROCK_KEYS: keyPair(PROVIDER_KEY),
    TOLLGATE_PROVIDER_BEDROCK_WRONG: keyPair('not-the-secret-0123456789'),
    TOLLGATE_PROVIDER_BEDROCK_EXPIRED: keyPair(PROVIDER_KEY, EXPIRED_TOKEN),
  },
});

const CREDITS = 10_000_000n;
const cost = (input: number, output: number) => BigInt(input) * 3n + BigInt(output) * 15n;
const ENCODED_ID = encodeURIComponent(MODEL_ID);

async function expectCharged(accountId: string, credits: bigint): Promise<void> {
  await t.stack.settled();
  expect(await t.stack.balances(accountId)).toMatchObject({
    credits: CREDITS - credits,
    reservedCredits: 0n,
  });
}

async function expectReleased(accountId: string): Promise<void> {
  await expectCharged(accountId, 0n);
  const reservations = await t.stack.reservations(accountId);
  expect(reservations.map((reservation) => reservation.status)).toEqual(reservations.map(() => 'released'));
}

async function expectHeld(accountId: string, outcome: string): Promise<void> {
  await t.stack.settled();
  const [reservation, ...others] = await t.stack.reservations(accountId);
  expect(others).toEqual([]);
  expect(reservation).toMatchObject({ status: 'held', outcome, charged_credits: 0n });
}

function expectNoBedrockTrace(text: string): void {
  for (const word of [BEDROCK_MODEL, MODEL_ID, 'amazon', 'Bedrock', 'invocationMetrics', PROVIDER_KEY])
    expect(text).not.toContain(word);
}

describe('bedrock: messages', () => {
  it('signs InvokeModel, sends Bedrock’s body, answers as the alias and charges the usage', async () => {
    const key = await t.key({ credits: CREDITS });
    const tag = uniqueTag('br');
    const reply = await t.post(
      '/v1/messages',
      key.secret,
      bodyFor('/v1/messages', 'claude-bedrock', `tag=${tag},input_tokens=40,cache_read=8,output_tokens=5`),
      { headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' } },
    );
    expect(reply.status, reply.text).toBe(200);
    const body = JSON.parse(reply.text) as Json;
    expect(body).toMatchObject({
      model: 'claude-bedrock',
      content: [{ text: 'Hello from the mock upstream.' }],
    });
    expect(body.usage).toMatchObject({ input_tokens: 40, cache_read_input_tokens: 8, output_tokens: 5 });
    expectNoBedrockTrace(reply.text);
    const [recorded] = t.stack.mock.requests(tag);
    expect(recorded?.path).toBe(`/model/${ENCODED_ID}/invoke`);
    expect(recorded?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDTOLLGATETEST\/\d{8}\/us-east-1\/bedrock\//,
    );
    const sent = JSON.parse(recorded!.body) as Json;
    expect(sent).toMatchObject({
      anthropic_version: 'bedrock-2023-05-31',
      anthropic_beta: ['interleaved-thinking-2025-05-14'],
    });
    expect(sent).not.toHaveProperty('model');
    expect(sent).not.toHaveProperty('stream');
    await expectCharged(key.accountId, cost(48, 5));
  });

  it('decodes the event stream into Messages events, usage from message_start and message_delta', async () => {
    const key = await t.key({ credits: CREDITS });
    const tag = uniqueTag('brs');
    const reply = await t.post(
      '/v1/messages',
      key.secret,
      bodyFor(
        '/v1/messages',
        'claude-bedrock',
        `tag=${tag},words=3,input_tokens=30,cache_read=6,output_tokens=3`,
        {
          stream: true,
        },
      ),
    );
    expect(reply.status, reply.text).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expectNoBedrockTrace(reply.text);
    const events = sseData(reply.text);
    expect(events[0]).toMatchObject({ type: 'message_start', message: { model: 'claude-bedrock' } });
    expect(events.at(-1)).toEqual({ type: 'message_stop' });
    const text = events
      .filter((event) => event.type === 'content_block_delta')
      .map((event) => event.delta.text)
      .join('');
    expect(text).toBe('Hello from the');
    expect(t.stack.mock.requests(tag)[0]?.path).toBe(`/model/${ENCODED_ID}/invoke-with-response-stream`);
    await expectCharged(key.accountId, cost(36, 3));
  });

  it('takes a Bedrock API key as a Bearer token', async () => {
    const key = await t.key({ credits: CREDITS });
    const tag = uniqueTag('brk');
    const reply = await t.post(
      '/v1/messages',
      key.secret,
      bodyFor('/v1/messages', 'claude-bedrock-key', `tag=${tag},input_tokens=7,output_tokens=5`),
    );
    expect(reply.status, reply.text).toBe(200);
    expect(t.stack.mock.requests(tag)[0]?.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
    await expectCharged(key.accountId, cost(7, 5));
  });
});

describe('bedrock: translated surfaces', () => {
  it.each([
    ['/v1/chat/completions', 'chat'],
    ['/v1/responses', 'responses'],
  ])('%s on a bedrock alias, streamed and not, charges what it told', async (path) => {
    for (const stream of [false, true]) {
      const key = await t.key({ credits: CREDITS });
      const reply = await t.post(
        path,
        key.secret,
        bodyFor(path, 'claude-bedrock', 'words=3,input_tokens=25,output_tokens=3', {
          ...(stream ? { stream: true } : {}),
          ...(stream && path === '/v1/chat/completions' ? { stream_options: { include_usage: true } } : {}),
        }),
      );
      expect(reply.status, reply.text).toBe(200);
      expectNoBedrockTrace(reply.text);
      let usage: Json;
      if (path === '/v1/chat/completions') {
        usage = stream
          ? sseData(reply.text).find((chunk) => chunk.choices.length === 0)!.usage
          : JSON.parse(reply.text).usage;
        expect(usage).toMatchObject({ prompt_tokens: 25, completion_tokens: 3 });
      } else {
        usage = stream
          ? sseData(reply.text).find((event) => event.type === 'response.completed')!.response.usage
          : JSON.parse(reply.text).usage;
        expect(usage).toMatchObject({ input_tokens: 25, output_tokens: 3 });
      }
      await expectCharged(key.accountId, cost(25, 3));
    }
  });
});

describe('bedrock: failover from anthropic', () => {
  it('answers from Bedrock when Anthropic is unreachable, charged once from Bedrock’s usage', async () => {
    for (const [path, stream] of [
      ['/v1/messages', false],
      ['/v1/messages', true],
      ['/v1/chat/completions', false],
    ] as const) {
      const key = await t.key({ credits: CREDITS });
      const tag = uniqueTag('fo');
      const reply = await t.post(
        path,
        key.secret,
        bodyFor(path, 'claude-failover', `tag=${tag},input_tokens=50,cache_read=10,output_tokens=4`, {
          ...(stream ? { stream } : {}),
        }),
      );
      expect(reply.status, reply.text).toBe(200);
      expect(reply.text).toContain('"model":"claude-failover"');
      expectNoBedrockTrace(reply.text);
      expect(reply.text).not.toContain(ANTHROPIC_MODEL);
      expect(t.stack.mock.requests(tag).map((request) => request.path)).toEqual([
        `/model/${ENCODED_ID}/${stream ? 'invoke-with-response-stream' : 'invoke'}`,
      ]);
      await expectCharged(key.accountId, cost(60, 4));
      expect(await t.stack.reservations(key.accountId)).toEqual([
        expect.objectContaining({ status: 'settled' }),
      ]);
    }
  });

  it('answers from Bedrock when Anthropic is overloaded (529), charged once', async () => {
    const key = await t.key({ credits: CREDITS });
    const tag = uniqueTag('fo529');
    const reply = await t.post(
      '/v1/messages',
      key.secret,
      bodyFor(
        '/v1/messages',
        'claude-overloaded',
        `tag=${tag},status=529,only_model=${ANTHROPIC_MODEL},input_tokens=30,output_tokens=2`,
      ),
    );
    expect(reply.status, reply.text).toBe(200);
    expect(t.stack.mock.requests(tag).map((request) => request.path)).toEqual([
      '/v1/messages',
      `/model/${ENCODED_ID}/invoke`,
    ]);
    await expectCharged(key.accountId, cost(30, 2));
    expect(await t.stack.reservations(key.accountId)).toHaveLength(1);
  });
});

describe('bedrock: failures', () => {
  it('a wrong signature is upstream_unavailable, released, the cause in the log', async () => {
    const key = await t.key({ credits: CREDITS });
    for (const [path, stream] of [
      ['/v1/messages', false],
      ['/v1/messages', true],
      ['/v1/chat/completions', false],
    ] as const) {
      const reply = await t.post(
        path,
        key.secret,
        bodyFor(path, 'claude-bedrock-wrong', '', stream ? { stream } : {}),
      );
      t.expectError(reply, 503, 'upstream_unavailable');
      expectNoBedrockTrace(reply.text);
    }
    await expectReleased(key.accountId);
    const line = await t.waitForLog(
      (entry) => entry.includes('mock-bedrock-wrong') && entry.includes('credential_refused'),
    );
    expect(line).toContain('"upstreamStatus":403');
  });

  it('a session token past its expiry is upstream_unavailable, free, logged as the credential and never shown', async () => {
    const key = await t.key({ credits: CREDITS });
    for (const [path, stream] of [
      ['/v1/messages', false],
      ['/v1/messages', true],
      ['/v1/chat/completions', true],
    ] as const) {
      const reply = await t.post(
        path,
        key.secret,
        bodyFor(path, 'claude-bedrock-expired', '', stream ? { stream } : {}),
      );
      t.expectError(reply, 503, 'upstream_unavailable');
      expectNoBedrockTrace(reply.text);
      expect(reply.text).not.toContain(EXPIRED_TOKEN);
    }
    await expectReleased(key.accountId);
    const line = await t.waitForLog(
      (entry) => entry.includes('mock-bedrock-expired') && entry.includes('credential_refused'),
    );
    expect(line).toContain('"upstreamStatus":403');
    expect(line).not.toContain(EXPIRED_TOKEN);
  });

  it('a ThrottlingException (429) is upstream_unavailable, nothing charged', async () => {
    const key = await t.key({ credits: CREDITS });
    for (const stream of [false, true]) {
      const reply = await t.post(
        '/v1/messages',
        key.secret,
        bodyFor('/v1/messages', 'claude-bedrock', 'status=429', stream ? { stream } : {}),
      );
      t.expectError(reply, 503, 'upstream_unavailable');
    }
    await expectReleased(key.accountId);
  });

  it('a ValidationException (400) is upstream_rejected with its status, nothing charged', async () => {
    const key = await t.key({ credits: CREDITS });
    const reply = await t.post(
      '/v1/messages',
      key.secret,
      bodyFor('/v1/messages', 'claude-bedrock', 'status=400'),
    );
    t.expectError(reply, 400, 'upstream_rejected');
    await expectReleased(key.accountId);
  });

  it('a modelStreamErrorException ends each surface’s stream with its error event, held not charged', async () => {
    for (const path of ['/v1/messages', '/v1/chat/completions']) {
      const key = await t.key({ credits: CREDITS });
      const reply = await t.post(
        path,
        key.secret,
        bodyFor(path, 'claude-bedrock', 'stream_error', { stream: true }),
      );
      expect(reply.status).toBe(200);
      expectNoBedrockTrace(reply.text);
      const last = sseData(reply.text).at(-1)!;
      if (path === '/v1/messages') {
        expect(reply.text).toMatch(/event: error\ndata: [^\n]+\n\n$/);
        expect(last.error.service_code).toBe('upstream_unavailable');
      } else {
        expect(last.error.code).toBe('upstream_unavailable');
      }
      await expectHeld(key.accountId, 'upstream_unavailable');
    }
    // The provider's exception is the cause in the log, never in the client's body.
    const line = await t.waitForLog(
      (entry) => entry.includes('"providerId":"mock-bedrock"') && entry.includes('modelstreamerrorexception'),
    );
    expect(line).toContain('upstream call failed');
  });

  it('a frame whose CRC fails ends the stream as upstream_invalid_response, held not charged', async () => {
    const key = await t.key({ credits: CREDITS });
    const reply = await t.post(
      '/v1/messages',
      key.secret,
      bodyFor('/v1/messages', 'claude-bedrock', 'invalid_json', { stream: true }),
    );
    expect(sseData(reply.text).at(-1)!.error.service_code).toBe('upstream_invalid_response');
    await expectHeld(key.accountId, 'upstream_invalid_response');
  });
});
