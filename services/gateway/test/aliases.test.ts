import { describe, expect, it } from 'vitest';
import { bodyFor, uniqueTag, useStack } from './support.ts';

const t = useStack('gw-aliases');
const CREDITS = 1_000_000n;

describe('model aliases', () => {
  it('refuses a missing, empty, non-string or unknown model with invalid_model, upstream ids included', async () => {
    const key = await t.key({ credits: CREDITS });
    const calls = t.upstreamCalls();
    const models: unknown[] = [undefined, '', 42, null, ['claude-test'], 'no-such-model', 'CLAUDE-TEST'];
    for (const path of [
      '/v1/messages',
      '/v1/messages/count_tokens',
      '/v1/chat/completions',
      '/v1/responses',
    ]) {
      for (const model of models) {
        const body: Record<string, unknown> = bodyFor(path, 'placeholder');
        if (model === undefined) delete body.model;
        else body.model = model;
        t.expectError(await t.post(path, key.secret, body), 400, 'invalid_model');
      }
    }
    // An upstream id is not an alias; the refusal only echoes what the client sent.
    const reply = await t.post(
      '/v1/chat/completions',
      key.secret,
      bodyFor('/v1/chat/completions', 'upstream-gpt-y2'),
    );
    expect(reply.status).toBe(400);
    expect(JSON.parse(reply.text).error.code).toBe('invalid_model');
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });
  });

  it('refuses an alias outside the key scope, and an unpublished one, with model_not_allowed', async () => {
    const scoped = await t.key({ credits: CREDITS, scope: ['gpt-test'] });
    const open = await t.key({ credits: CREDITS });
    const calls = t.upstreamCalls();
    t.expectError(
      await t.post('/v1/messages', scoped.secret, bodyFor('/v1/messages', 'claude-test')),
      403,
      'model_not_allowed',
    );
    t.expectError(
      await t.post(
        '/v1/messages/count_tokens',
        scoped.secret,
        bodyFor('/v1/messages/count_tokens', 'claude-test'),
      ),
      403,
      'model_not_allowed',
    );
    t.expectError(
      await t.post('/v1/chat/completions', scoped.secret, bodyFor('/v1/chat/completions', 'tokens-test')),
      403,
      'model_not_allowed',
    );
    for (const key of [scoped, open]) {
      t.expectError(
        await t.post('/v1/chat/completions', key.secret, bodyFor('/v1/chat/completions', 'hidden-test')),
        403,
        'model_not_allowed',
      );
    }
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(scoped, { credits: CREDITS });
    await t.expectUntouched(open, { credits: CREDITS });

    // The scope does not stop what it allows.
    const tag = uniqueTag('scoped');
    const reply = await t.post(
      '/v1/responses',
      scoped.secret,
      bodyFor('/v1/responses', 'gpt-test', `tag=${tag}`),
    );
    expect(reply.status, reply.text).toBe(200);
    expect(t.tagged(tag)).toBe(1);
  });

  it('refuses an alias on a protocol it lacks with model_unavailable and no upstream call', async () => {
    const key = await t.key({ credits: CREDITS });
    const calls = t.upstreamCalls();
    const cases: Array<[string, string]> = [
      ['/v1/messages', 'gpt-test'],
      ['/v1/messages/count_tokens', 'gpt-test'],
      ['/v1/chat/completions', 'claude-test'],
      ['/v1/responses', 'claude-test'],
      ['/v1/responses', 'tokens-test'],
    ];
    for (const [path, alias] of cases) {
      const message = t.expectError(
        await t.post(path, key.secret, bodyFor(path, alias)),
        400,
        'model_unavailable',
      );
      expect(message).toContain(alias);
    }
    expect(t.upstreamCalls()).toBe(calls);
    await t.expectUntouched(key, { credits: CREDITS });
  });

  it('forwards the raw body byte for byte with only model replaced', async () => {
    const key = await t.key({ credits: CREDITS });
    const tag = uniqueTag('bytes');
    // Odd spacing, escapes, number formats, key order, nested "model" keys and the alias inside
    // a message: JSON.stringify would change all of them.
    const raw = `{ "max_tokens" :100,
  "system":[{"type":"text","text":"Answer in \\u00e9l\\u00e9gant French \\/ no \\"quotes\\"","cache_control":{"type":"ephemeral"}}],
  "model"  :  "claude-test" ,
  "tools":[{"name":"lookup","description":"model: claude-test","input_schema":{"type":"object","properties":{"model":{"type":"string","enum":["claude-test"]},"n":{"type":"number","default":1.50,"maximum":1e3}}}}],
  "messages":[{"role":"user","content":"Which model? claude-test \\ud83d\\ude00 @mock(tag=${tag},input_tokens=7,output_tokens=3)"}],
  "temperature":0.0
}`;
    const reply = await t.post('/v1/messages', key.secret, raw);
    expect(reply.status, reply.text).toBe(200);
    const [recorded] = t.stack.mock.requests(tag);
    expect(recorded!.body).toBe(raw.replace('"model"  :  "claude-test"', '"model"  :  "upstream-claude-x1"'));
    // The answer names the alias, never the upstream model.
    expect(JSON.parse(reply.text).model).toBe('claude-test');
    expect(reply.text).not.toContain('upstream-claude-x1');
    await t.stack.settled();
    expect(await t.stack.balances(key.accountId)).toMatchObject({
      credits: CREDITS - (7n * 3n + 3n * 15n),
      reservedCredits: 0n,
    });
  });

  it('changes only model and the clamped max output when it clamps', async () => {
    // Package "pro": plan ceiling 2000.
    const key = await t.key({ packages: ['pro'] });
    const tag = uniqueTag('clampbytes');
    const raw = `{"model":"claude-test",  "max_tokens" : 9000 ,"messages":[{"role":"user","content":"max_tokens 9000 @mock(tag=${tag})"}],"metadata":{"max_tokens":9000}}`;
    const reply = await t.post('/v1/messages', key.secret, raw);
    expect(reply.status, reply.text).toBe(200);
    expect(t.stack.mock.requests(tag)[0]!.body).toBe(
      raw
        .replace('"model":"claude-test"', '"model":"upstream-claude-x1"')
        .replace('"max_tokens" : 9000 ', '"max_tokens" : 2000 '),
    );
  });

  it('forwards chat and responses bodies unchanged but for model and the inserted max output', async () => {
    const key = await t.key({ credits: CREDITS });
    const chatTag = uniqueTag('chatbytes');
    const chat = `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi @mock(tag=${chatTag})"}],"model":"gpt-test","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{}}}}],"seed":7}`;
    expect((await t.post('/v1/chat/completions', key.secret, chat)).status).toBe(200);
    expect(t.stack.mock.requests(chatTag)[0]!.body).toBe(
      chat
        .replace('"model":"gpt-test"', '"model":"upstream-gpt-y2"')
        .replace(/}$/, ',"max_completion_tokens":256}'),
    );

    const responsesTag = uniqueTag('respbytes');
    const responses = `{"model":"gpt-test","instructions":"Be  brief.","input":[{"role":"user","content":[{"type":"input_text","text":"hi @mock(tag=${responsesTag})"}]}],"max_output_tokens":300}`;
    expect((await t.post('/v1/responses', key.secret, responses)).status).toBe(200);
    expect(t.stack.mock.requests(responsesTag)[0]!.body).toBe(
      responses.replace('"model":"gpt-test"', '"model":"upstream-gpt-y2"'),
    );
  });
});

describe('GET /v1/models', () => {
  it('lists the published aliases of an unscoped key with their protocols and no upstream detail', async () => {
    const key = await t.key();
    const reply = await t.get('/v1/models', key.secret);
    expect(reply.status).toBe(200);
    const list = JSON.parse(reply.text) as {
      object: string;
      data: Array<{ id: string; protocols: string[] }>;
    };
    expect(list.object).toBe('list');
    expect(list.data.map((model) => [model.id, [...model.protocols].sort()])).toEqual([
      ['claude-all', ['chat_completions', 'count_tokens', 'messages', 'responses']],
      ['claude-test', ['count_tokens', 'messages']],
      ['gpt-all', ['chat_completions', 'count_tokens', 'messages', 'responses']],
      ['gpt-test', ['chat_completions', 'responses']],
      ['tokens-test', ['chat_completions']],
    ]);
    expect(list.data[0]).toEqual({
      id: 'claude-all',
      object: 'model',
      created: 0,
      owned_by: 'tollgate',
      protocols: ['messages', 'count_tokens', 'chat_completions', 'responses'],
      max_output_tokens: 4096,
      // Written as input 3 and output 15: cache reads and writes default to the input price.
      pricing: {
        unit: 'credits',
        input: '3',
        output: '15',
        cache_read: '3',
        cache_write: '3',
        cache_write_1h: '3',
        request: '0',
      },
      // Units of a weighted package per token (docs/pricing.md#weighted-packages).
      package_rate: '5',
    });
    // Only packages pay for tokens-test.
    expect(list.data.at(-1)).toMatchObject({ package_rate: '1' });
    expect(list.data.at(-1)).toMatchObject({ id: 'tokens-test', pricing: null });
    t.expectNothingLeaked(reply.text);
    // Listing costs nothing.
    await t.expectUntouched(key, {});
  });

  it("answers in Anthropic's model-list shape when the request carries anthropic-version", async () => {
    const key = await t.key();
    const reply = await t.get('/v1/models', key.secret, { headers: { 'anthropic-version': '2023-06-01' } });
    expect(reply.status).toBe(200);
    const list = JSON.parse(reply.text);
    expect(Object.keys(list).sort()).toEqual(['data', 'first_id', 'has_more', 'last_id']);
    expect(list).toMatchObject({ has_more: false, first_id: 'claude-all', last_id: 'tokens-test' });
    expect(list.data[2]).toEqual({
      type: 'model',
      id: 'gpt-all',
      display_name: 'gpt-all',
      created_at: '1970-01-01T00:00:00Z',
      protocols: ['messages', 'count_tokens', 'chat_completions', 'responses'],
      max_output_tokens: 4096,
      pricing: {
        unit: 'credits',
        input: '2',
        output: '8',
        cache_read: '2',
        cache_write: '2',
        cache_write_1h: '2',
        request: '0',
      },
      package_rate: '1',
    });
    t.expectNothingLeaked(reply.text);
    await t.expectUntouched(key, {});
  });

  it('never lists an alias outside the key scope, nor an unpublished one inside it', async () => {
    const key = await t.key({ scope: ['gpt-test', 'hidden-test'] });
    const reply = await t.get('/v1/models', key.secret);
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.text).data.map((model: { id: string }) => model.id)).toEqual(['gpt-test']);
    t.expectNothingLeaked(reply.text);
  });
});
