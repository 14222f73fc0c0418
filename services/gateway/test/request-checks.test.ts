import { describe, expect, it } from 'vitest';
import { bodyFor, uniqueTag, useStack } from './support.ts';

const t = useStack('gw-request-checks');
const CREDITS = 10_000_000n;

function sentBody(tag: string): Record<string, unknown> {
  const [recorded] = t.stack.mock.requests(tag);
  expect(recorded, `no upstream request tagged ${tag}`).toBeDefined();
  return JSON.parse(recorded!.body) as Record<string, unknown>;
}

describe('parameter allow-lists', () => {
  it('refuses an unknown top-level field with unsupported_parameter naming it, on every surface', async () => {
    const key = await t.key({ credits: CREDITS });
    const calls = t.upstreamCalls();
    const cases: Array<[string, string, string]> = [
      ['/v1/messages', 'claude-test', 'frobnicate'],
      ['/v1/messages/count_tokens', 'claude-test', 'max_tokens'],
      ['/v1/chat/completions', 'gpt-test', 'logprobz'],
      ['/v1/chat/completions', 'gpt-test', 'input'],
      ['/v1/responses', 'gpt-test', 'messages'],
    ];
    for (const [path, alias, field] of cases) {
      const body = { ...bodyFor(path, alias), [field]: 1 };
      const message = t.expectError(await t.post(path, key.secret, body), 400, 'unsupported_parameter');
      expect(message).toContain(field);
    }
    const both = t.expectError(
      await t.post('/v1/messages', key.secret, {
        ...bodyFor('/v1/messages', 'claude-test'),
        alpha: 1,
        beta_x: 2,
      }),
      400,
      'unsupported_parameter',
    );
    expect(both).toContain('alpha');
    expect(both).toContain('beta_x');
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });
  });

  it('admits what Claude Code sends on /v1/messages and forwards every field', async () => {
    const key = await t.key({ credits: CREDITS });
    const tag = uniqueTag('claudecode');
    const body = {
      model: 'claude-test',
      max_tokens: 1000,
      messages: [{ role: 'user', content: [{ type: 'text', text: `hi @mock(tag=${tag})` }] }],
      system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
      tools: [{ name: 'Bash', description: 'run', input_schema: { type: 'object', properties: {} } }],
      tool_choice: { type: 'auto' },
      metadata: { user_id: 'user_abc_account_def_session_ghi' },
      thinking: { type: 'enabled', budget_tokens: 512 },
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      output_config: { effort: 'high' },
      temperature: 1,
      stream: false,
    };
    const reply = await t.post('/v1/messages?beta=true', key.secret, body, {
      headers: { 'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14' },
    });
    expect(reply.status, reply.text).toBe(200);
    expect(sentBody(tag)).toEqual({ ...body, model: 'upstream-claude-x1' });
  });

  it('admits what Codex CLI sends on /v1/responses and forwards every field', async () => {
    const key = await t.key({ credits: CREDITS });
    const tag = uniqueTag('codex');
    const body = {
      model: 'gpt-test',
      instructions: 'You are Codex.',
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: `hi @mock(tag=${tag})` }] },
      ],
      tools: [
        { type: 'function', name: 'shell', parameters: { type: 'object', properties: {} }, strict: false },
      ],
      tool_choice: 'auto',
      parallel_tool_calls: false,
      reasoning: { effort: 'medium', summary: 'auto' },
      store: false,
      stream: false,
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: '6a1f0c2e-session',
      client_metadata: { 'x-codex-installation-id': 'abc' },
      text: { verbosity: 'medium' },
      max_output_tokens: 500,
    };
    const reply = await t.post('/v1/responses', key.secret, body);
    expect(reply.status, reply.text).toBe(200);
    expect(sentBody(tag)).toEqual({ ...body, model: 'upstream-gpt-y2' });
  });

  it('admits the usual chat-completions fields, deprecated ones included', async () => {
    const key = await t.key({ credits: CREDITS });
    const tag = uniqueTag('chatfields');
    const body = {
      ...bodyFor('/v1/chat/completions', 'gpt-test', `tag=${tag}`),
      temperature: 0.2,
      top_p: 1,
      n: 1,
      stop: ['\n\n'],
      presence_penalty: 0,
      frequency_penalty: 0,
      user: 'u-1',
      response_format: { type: 'text' },
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }],
      parallel_tool_calls: true,
      reasoning_effort: 'low',
    };
    const reply = await t.post('/v1/chat/completions', key.secret, body);
    expect(reply.status, reply.text).toBe(200);
    expect(sentBody(tag)).toEqual({ ...body, model: 'upstream-gpt-y2' });
  });
});

describe('maximum output', () => {
  it('refuses a max-output field that is not a positive integer with invalid_max_output_tokens', async () => {
    const key = await t.key({ credits: CREDITS });
    const calls = t.upstreamCalls();
    const fields: Array<[string, string, string]> = [
      ['/v1/messages', 'claude-test', 'max_tokens'],
      ['/v1/chat/completions', 'gpt-test', 'max_completion_tokens'],
      ['/v1/chat/completions', 'gpt-test', 'max_tokens'],
      ['/v1/responses', 'gpt-test', 'max_output_tokens'],
    ];
    for (const [path, alias, field] of fields) {
      for (const value of [0, -5, 1.5, '100', true, [10], { n: 1 }]) {
        const body: Record<string, unknown> = bodyFor(path, alias);
        delete body.max_tokens;
        body[field] = value;
        const message = t.expectError(await t.post(path, key.secret, body), 400, 'invalid_max_output_tokens');
        expect(message).toContain(field);
      }
    }
    // max_tokens is not nullable on the messages surface.
    t.expectError(
      await t.post('/v1/messages', key.secret, {
        ...bodyFor('/v1/messages', 'claude-test'),
        max_tokens: null,
      }),
      400,
      'invalid_max_output_tokens',
    );
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });
  });

  it("refuses more than the key's output ceiling with max_output_tokens_exceeded", async () => {
    const key = await t.key({ credits: CREDITS, limits: { maxOutputTokens: 300 } });
    const calls = t.upstreamCalls();
    const cases: Array<[string, string, Record<string, number>]> = [
      ['/v1/messages', 'claude-test', { max_tokens: 301 }],
      ['/v1/chat/completions', 'gpt-test', { max_completion_tokens: 5000 }],
      ['/v1/chat/completions', 'gpt-test', { max_tokens: 301 }],
      ['/v1/responses', 'gpt-test', { max_output_tokens: 1000 }],
    ];
    for (const [path, alias, fields] of cases) {
      const body = { ...bodyFor(path, alias), ...fields };
      t.expectError(await t.post(path, key.secret, body), 400, 'max_output_tokens_exceeded');
    }
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });

    // Exactly the ceiling is allowed.
    const tag = uniqueTag('atceiling');
    const reply = await t.post('/v1/messages', key.secret, {
      ...bodyFor('/v1/messages', 'claude-test', `tag=${tag}`),
      max_tokens: 300,
    });
    expect(reply.status, reply.text).toBe(200);
    expect(sentBody(tag).max_tokens).toBe(300);
  });

  it('clamps a request above the plan ceiling down to it; the upstream gets and the reservation holds the clamped value', async () => {
    // Package "pro": plan ceiling 2000; the key allows 32768 (the default).
    const key = await t.key({ packages: ['pro'] });
    const cases: Array<[string, string, string]> = [
      ['/v1/messages', 'claude-test', 'max_tokens'],
      ['/v1/chat/completions', 'gpt-test', 'max_completion_tokens'],
      ['/v1/responses', 'gpt-test', 'max_output_tokens'],
    ];
    for (const [path, alias, field] of cases) {
      const tag = uniqueTag('clamp');
      const body: Record<string, unknown> = bodyFor(
        path,
        alias,
        `tag=${tag},input_tokens=10,output_tokens=20`,
      );
      delete body.max_tokens;
      body[field] = 3000;
      const reply = await t.post(path, key.secret, body);
      expect(reply.status, reply.text).toBe(200);
      expect(sentBody(tag)[field]).toBe(2000);
    }
    await t.stack.settled();
    const reservations = await t.stack.reservations(key.accountId);
    expect(reservations.map((row) => [row.status, row.estimate_output])).toEqual([
      ['settled', 2000n],
      ['settled', 2000n],
      ['settled', 2000n],
    ]);
    // Charged exactly the usage reported, from the package's tokens.
    expect(await t.stack.balances(key.accountId)).toMatchObject({
      tokens: 100_000n - 3n * 30n,
      reservedTokens: 0n,
    });
  });

  it('forwards no second, larger copy of a duplicated max-output field', async () => {
    const key = await t.key({ credits: CREDITS, limits: { maxOutputTokens: 100 } });
    const cases: Array<[string, string, string]> = [
      ['/v1/messages', 'claude-test', 'max_tokens'],
      ['/v1/chat/completions', 'gpt-test', 'max_tokens'],
      ['/v1/chat/completions', 'gpt-test', 'max_completion_tokens'],
      ['/v1/responses', 'gpt-test', 'max_output_tokens'],
    ];
    for (const [path, alias, field] of cases) {
      const tag = uniqueTag('duplicate');
      const base = bodyFor(path, alias, `tag=${tag}`);
      delete base.max_tokens;
      // JSON.parse (and the gateway) read the last copy; an upstream parser may read the first.
      const raw = `{"${field}":4000,${JSON.stringify(base).slice(1, -1)},"${field}":50}`;
      const reply = await t.post(path, key.secret, raw);
      expect(reply.status, reply.text).toBe(200);
      const sent = t.stack.mock.requests(tag)[0]!.body;
      expect(sent).not.toContain('4000');
      expect(sent.split(`"${field}":50`)).toHaveLength(3);
    }
  });

  it("clamps a credit-only call to the alias's own maximum", async () => {
    const key = await t.key({ credits: CREDITS });
    const tag = uniqueTag('aliasmax');
    const reply = await t.post('/v1/messages', key.secret, {
      ...bodyFor('/v1/messages', 'claude-test', `tag=${tag}`),
      max_tokens: 9000,
    });
    expect(reply.status, reply.text).toBe(200);
    expect(sentBody(tag).max_tokens).toBe(4096);
  });

  it('inserts the default maximum when the request names none (or null where the surface allows it)', async () => {
    const plain = await t.key({ credits: CREDITS });
    const lowCeiling = await t.key({ credits: CREDITS, limits: { maxOutputTokens: 200 } });
    const withPackage = await t.key({ packages: ['pro'] });
    const cases: Array<[string, string, string, number, string, Record<string, unknown>]> = [
      // alias default 256
      ['/v1/messages', 'claude-test', 'max_tokens', 256, plain.secret, {}],
      ['/v1/chat/completions', 'gpt-test', 'max_completion_tokens', 256, plain.secret, {}],
      [
        '/v1/chat/completions',
        'gpt-test',
        'max_completion_tokens',
        256,
        plain.secret,
        { max_completion_tokens: null },
      ],
      ['/v1/responses', 'gpt-test', 'max_output_tokens', 256, plain.secret, { max_output_tokens: null }],
      // never above the key's ceiling
      ['/v1/messages', 'claude-test', 'max_tokens', 200, lowCeiling.secret, {}],
      ['/v1/responses', 'gpt-test', 'max_output_tokens', 200, lowCeiling.secret, {}],
      // tokens-test's own default is 100
      ['/v1/chat/completions', 'tokens-test', 'max_completion_tokens', 100, withPackage.secret, {}],
    ];
    for (const [path, alias, field, expected, secret, extra] of cases) {
      const tag = uniqueTag('default');
      const body: Record<string, unknown> = { ...bodyFor(path, alias, `tag=${tag}`), ...extra };
      delete body.max_tokens;
      const reply = await t.post(path, secret, body);
      expect(reply.status, reply.text).toBe(200);
      expect(sentBody(tag)[field]).toBe(expected);
    }
    await t.stack.settled();
    const [reservation] = await t.stack.reservations(withPackage.accountId);
    expect(reservation!.estimate_output).toBe(100n);
  });
});

describe('deeply nested JSON', () => {
  it('is refused with invalid_request before parsing, on every POST route, and meters nothing', async () => {
    const key = await t.key({ credits: CREDITS });
    const calls = t.upstreamCalls();
    const nested = `${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`;
    for (const [path, alias] of [
      ['/v1/messages', 'claude-test'],
      ['/v1/messages/count_tokens', 'claude-test'],
      ['/v1/chat/completions', 'gpt-test'],
      ['/v1/responses', 'gpt-test'],
    ] as const) {
      const body = JSON.stringify(bodyFor(path, alias)).replace(/\}$/, `,"metadata":${nested}}`);
      const message = t.expectError(await t.post(path, key.secret, body), 400, 'invalid_request');
      expect(message).toMatch(/deeper than 64 levels/);
    }
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });
  });
});

describe('what the reservation must cover (usage the provider bills beyond one answer)', () => {
  it('reserves the maximum output once per chat choice: n past the balance is refused before the upstream', async () => {
    // gpt-test costs 2 per input and 8 per output token. One choice of 100 tokens fits 2,000
    // credits; sixteen do not, and the provider would bill all sixteen.
    const key = await t.key({ credits: 2_000n });
    const tag = uniqueTag('choices');
    const body = {
      ...bodyFor('/v1/chat/completions', 'gpt-test', `tag=${tag},output_tokens=1600`),
      n: 16,
      max_tokens: 100,
    };
    t.expectError(await t.post('/v1/chat/completions', key.secret, body), 402, 'insufficient_credits');
    expect(t.tagged(tag)).toBe(0);
    await t.expectUntouched(key, { credits: 2_000n });
  });

  it('holds n times the maximum output for a call with n choices, and charges what the provider reports', async () => {
    const key = await t.key({ credits: CREDITS });
    const tag = uniqueTag('choices');
    const body = {
      ...bodyFor('/v1/chat/completions', 'gpt-test', `tag=${tag},input_tokens=7,output_tokens=30`),
      n: 3,
      max_tokens: 10,
    };
    const reply = await t.post('/v1/chat/completions', key.secret, body);
    expect(reply.status, reply.text).toBe(200);
    expect(sentBody(tag).n).toBe(3);
    await t.stack.settled();
    const [reservation] = await t.stack.reservations(key.accountId);
    expect(reservation).toMatchObject({
      status: 'settled',
      estimate_output: 30n,
      written_off_credits: 0n,
      charged_credits: 7n * 2n + 30n * 8n,
    });
  });

  it('refuses, before any upstream call, what the provider would bill beyond the reported tokens', async () => {
    const key = await t.key({ credits: CREDITS });
    const calls = t.upstreamCalls();
    const cases: Array<[string, string, Record<string, unknown>, Record<string, string>, string]> = [
      ['/v1/chat/completions', 'gpt-test', { n: 17 }, {}, 'n'],
      ['/v1/chat/completions', 'gpt-test', { web_search_options: {} }, {}, 'web_search_options'],
      ['/v1/responses', 'gpt-test', { previous_response_id: 'resp_1' }, {}, 'previous_response_id'],
      ['/v1/responses', 'gpt-test', { conversation: 'conv_1' }, {}, 'conversation'],
      ['/v1/responses', 'gpt-test', { prompt: { id: 'pmpt_1' } }, {}, 'prompt'],
      ['/v1/responses', 'gpt-test', { tools: [{ type: 'web_search' }] }, {}, 'tools[0] (type web_search)'],
      [
        '/v1/messages',
        'claude-test',
        { tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 5 }] },
        {},
        'tools[0] (type web_search_20250305)',
      ],
      [
        '/v1/messages',
        'claude-test',
        { tools: [{ type: 'code_execution_20250825', name: 'code_execution' }] },
        {},
        'tools[0] (type code_execution_20250825)',
      ],
      [
        '/v1/messages',
        'claude-test',
        { mcp_servers: [{ type: 'url', url: 'https://mcp.example.test', name: 'x' }] },
        {},
        'mcp_servers',
      ],
      [
        '/v1/messages',
        'claude-test',
        {},
        { 'anthropic-beta': 'context-1m-2025-08-07' },
        'context-1m-2025-08-07',
      ],
      [
        '/v1/messages',
        'claude-test',
        {},
        { 'anthropic-beta': 'claude-code-20250219,extended-cache-ttl-2025-04-11' },
        'extended-cache-ttl-2025-04-11',
      ],
    ];
    for (const [path, alias, extra, headers, named] of cases) {
      const reply = await t.post(path, key.secret, { ...bodyFor(path, alias), ...extra }, { headers });
      expect(t.expectError(reply, 400, 'unsupported_parameter')).toContain(named);
    }
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });
  });
});
