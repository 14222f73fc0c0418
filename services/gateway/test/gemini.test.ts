/**
 * The gemini provider kind through the whole gateway: every surface on a Gemini alias, streamed
 * and not, translated into generateContent; the usage the caller is told equals the ledger's
 * charge with thoughts billed as output and cached tokens inside the input; Gemini's refusals
 * (a wrong key's 400, a missing key's 403, 429 RESOURCE_EXHAUSTED, 5xx) end with the spec's codes,
 * nothing charged and nothing of the provider in the body; a stream cut before its usage is held.
 * The stack checks on the way out that the provider key is in no log line.
 */
import { describe, expect, it } from 'vitest';
import { STACK_CATALOG } from './stack.ts';
import {
  bodyFor,
  type FundedKey,
  type Json,
  type Reply,
  sseData,
  uniqueTag,
  usageOf,
  useStack,
} from './support.ts';

const GEMINI_MODEL = 'upstream-gemini-z3';

const t = useStack('gw-gemini', {
  catalog: (mockUrl) =>
    STACK_CATALOG(mockUrl).replace(
      'aliases:\n',
      `  - { id: mock-gemini, kind: gemini, base_url: "${mockUrl}", credential: TOLLGATE_PROVIDER_MOCK_KEY }
  - { id: mock-gemini-wrong, kind: gemini, base_url: "${mockUrl}", credential: TOLLGATE_PROVIDER_WRONG_KEY }
  - { id: mock-gemini-keyless, kind: gemini, base_url: "${mockUrl}/v1beta", credential: null }
aliases:
  - { alias: gemini-all, provider: mock-gemini, upstream_model: ${GEMINI_MODEL},
      protocols: [messages, count_tokens, chat_completions, responses],
      price: { input: 1, output: 4 }, default_max_output_tokens: 256, max_output_tokens: 4096 }
  - { alias: gemini-wrong-key, provider: mock-gemini-wrong, upstream_model: ${GEMINI_MODEL},
      protocols: [messages, chat_completions, responses],
      price: { input: 1, output: 4 }, default_max_output_tokens: 256, max_output_tokens: 4096 }
  - { alias: gemini-no-key, provider: mock-gemini-keyless, upstream_model: ${GEMINI_MODEL},
      protocols: [messages, chat_completions, responses],
      price: { input: 1, output: 4 }, default_max_output_tokens: 256, max_output_tokens: 4096 }
`,
    ),
  gatewayEnv: { TOLLGATE_PROVIDER_WRONG_KEY: 'wrong-gemini-key-value' },
});
const CREDITS = 10_000_000n;
const PATHS = ['/v1/messages', '/v1/chat/completions', '/v1/responses'] as const;

function streamExtra(path: string): Json {
  return path === '/v1/chat/completions'
    ? { stream: true, stream_options: { include_usage: true } }
    : { stream: true };
}

describe('a Gemini alias on every surface', () => {
  it.each(PATHS)(
    '%s: generateContent in Gemini form, thoughts billed as output, charged what was told',
    async (path) => {
      for (const stream of [false, true]) {
        const key = await t.key({ credits: CREDITS });
        const tag = uniqueTag('gm');
        const reply = await t.post(
          path,
          key.secret,
          bodyFor(
            path,
            'gemini-all',
            `tag=${tag},words=3,input_tokens=100,cache_read=20,reasoning_tokens=11`,
            stream ? streamExtra(path) : {},
          ),
        );
        expect(reply.status, reply.text).toBe(200);
        const [recorded] = t.stack.mock.requests(tag);
        expect(recorded?.path).toBe(
          `/v1beta/models/${GEMINI_MODEL}:${stream ? 'streamGenerateContent' : 'generateContent'}`,
        );
        // The key travels in its header only; the body is Gemini's, without a model.
        expect(recorded?.headers['x-goog-api-key']).toBe('provider-secret-value-0123456789');
        const body = JSON.parse(recorded!.body) as Json;
        expect(body).toMatchObject({
          contents: [{ role: 'user' }],
          generationConfig: { maxOutputTokens: path === '/v1/responses' ? 256 : 64 },
        });
        expect(body).not.toHaveProperty('model');
        expect(reply.text).not.toContain(GEMINI_MODEL);
        // 120 prompt tokens (100 + 20 cached, counted once), 3 candidates + 11 thoughts as output.
        const usage = usageOf(path, reply, stream);
        expect(usage).toEqual({ input: 120, output: 14 });
        await t.stack.settled();
        expect(await t.stack.balances(key.accountId)).toMatchObject({
          credits: CREDITS - (120n * 1n + 14n * 4n),
          reservedCredits: 0n,
        });
      }
    },
  );

  it('calls a tool and reads its result back, matched by the function name', async () => {
    const key = await t.key({ credits: CREDITS });
    const tools = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
    ];
    const first = await t.post('/v1/chat/completions', key.secret, {
      model: 'gemini-all',
      messages: [{ role: 'user', content: 'Weather? @mock(tool)' }],
      tools,
    });
    expect(first.status, first.text).toBe(200);
    const message = (JSON.parse(first.text) as { choices: Array<{ message: Json; finish_reason: string }> })
      .choices[0]!;
    expect(message.finish_reason).toBe('tool_calls');
    const call = (message.message.tool_calls as Array<{ id: string; function: { name: string } }>)[0]!;
    expect(call.function.name).toBe('get_weather');
    const tag = uniqueTag('gt');
    const second = await t.post('/v1/chat/completions', key.secret, {
      model: 'gemini-all',
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: message.message.content, tool_calls: message.message.tool_calls },
        { role: 'tool', tool_call_id: call.id, content: `sunny @mock(tag=${tag})` },
      ],
      tools,
    });
    expect(second.status, second.text).toBe(200);
    const sent = JSON.parse(t.stack.mock.requests(tag)[0]!.body) as { contents: Json[] };
    expect(sent.contents.at(-1)).toEqual({
      role: 'user',
      parts: [{ functionResponse: { name: 'get_weather', response: { output: `sunny @mock(tag=${tag})` } } }],
    });
  });
});

/** The call's one reservation was released: everything back, the outcome recorded. */
async function expectReleased(key: FundedKey): Promise<void> {
  await t.stack.settled();
  expect(await t.stack.balances(key.accountId)).toEqual({
    tokens: 0n,
    reservedTokens: 0n,
    credits: CREDITS,
    reservedCredits: 0n,
  });
  const reservations = await t.stack.reservations(key.accountId);
  expect(reservations.map((row) => [row.status, row.charged_credits])).toEqual([['released', 0n]]);
}

/** Nothing in an error body may name the provider or repeat its words (the alias is ours). */
function expectNoProviderIn(reply: Reply): void {
  for (const word of [
    'google',
    'Google',
    'API_KEY',
    'API key',
    'INVALID_ARGUMENT',
    'PERMISSION_DENIED',
    'RESOURCE_EXHAUSTED',
    'INTERNAL',
    'Simulated',
    'mock-gemini',
    GEMINI_MODEL,
  ])
    expect(reply.text).not.toContain(word);
}

describe("Gemini's refusals", () => {
  it("a wrong key (Gemini's 400 API_KEY_INVALID) is upstream_unavailable, logged as the credential, free", async () => {
    for (const path of PATHS) {
      const key = await t.key({ credits: CREDITS });
      const reply = await t.post(path, key.secret, bodyFor(path, 'gemini-wrong-key'));
      t.expectError(reply, 503, 'upstream_unavailable');
      expectNoProviderIn(reply);
      await expectReleased(key);
      const line = await t.waitForLog(
        (text) => text.includes('upstream call failed') && text.includes(key.keyId),
      );
      expect(JSON.parse(line)).toMatchObject({
        providerId: 'mock-gemini-wrong',
        reason: 'credential_refused',
        upstreamStatus: 400,
      });
      expect(line).not.toContain('wrong-gemini-key-value');
    }
  });

  it("a missing key (Gemini's 403), a throttle (429) and a server error (500, 503) are upstream_unavailable, free", async () => {
    const cases: Array<[string, string]> = [
      ['gemini-no-key', ''],
      ['gemini-all', 'status=429'],
      ['gemini-all', 'status=500'],
      ['gemini-all', 'status=503'],
    ];
    for (const [alias, directives] of cases) {
      for (const stream of [false, true]) {
        const key = await t.key({ credits: CREDITS });
        const path = '/v1/messages';
        const reply = await t.post(
          path,
          key.secret,
          bodyFor(path, alias, directives, stream ? { stream: true } : {}),
        );
        t.expectError(reply, 503, 'upstream_unavailable');
        expectNoProviderIn(reply);
        await expectReleased(key);
      }
    }
  });

  it('a request Gemini refuses as malformed is upstream_rejected in our words, free', async () => {
    const key = await t.key({ credits: CREDITS });
    const reply = await t.post(
      '/v1/chat/completions',
      key.secret,
      bodyFor('/v1/chat/completions', 'gemini-all', 'status=400'),
    );
    t.expectError(reply, 400, 'upstream_rejected');
    expectNoProviderIn(reply);
    await expectReleased(key);
  });

  it('a stream cut before the chunk with its usage is held; one that failed mid-way ends with our error event', async () => {
    for (const directives of ['cut_after=2,words=5', 'stream_error,words=5']) {
      const key = await t.key({ credits: CREDITS });
      const reply = await t.post(
        '/v1/responses',
        key.secret,
        bodyFor('/v1/responses', 'gemini-all', directives, { stream: true }),
      );
      expect(reply.status).toBe(200);
      const events = sseData(reply.text);
      expect(events.at(-1)).toMatchObject({ type: 'error' });
      expect(events.some((event) => event.type === 'response.completed')).toBe(false);
      expectNoProviderIn(reply);
      await t.stack.settled();
      const reservations = await t.stack.reservations(key.accountId);
      expect(reservations.map((row) => [row.status, row.charged_credits])).toEqual([['held', 0n]]);
    }
  });
});
