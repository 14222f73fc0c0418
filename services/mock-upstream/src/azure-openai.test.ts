import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AZURE_MODEL } from './protocols/azure-openai.ts';
import { type RunningMockUpstream, startMockUpstream } from './server.ts';
import { dataOf, postJson, readSse } from './test-support.ts';

let mock: RunningMockUpstream;
beforeAll(async () => {
  mock = await startMockUpstream({ expectedApiKey: 'azure-key' });
});
afterAll(() => mock.close());

const CHAT = '/openai/deployments/my-gpt/chat/completions?api-version=2024-10-21';
const RESPONSES = '/openai/responses?api-version=2025-04-01-preview';
const key = { 'api-key': 'azure-key' };

function chat(content: string, extra: Record<string, unknown> = {}) {
  return { messages: [{ role: 'user', content }], ...extra };
}

// biome-ignore lint/suspicious/noExplicitAny: provider JSON read in assertions
type Json = Record<string, any>;

describe('Azure OpenAI chat completions', () => {
  it("answers as the deployment's model with content filter results", async () => {
    const response = await postJson(mock.url, CHAT, chat('Hi @mock(input_tokens=7,output_tokens=5)'), key);
    expect(response.status).toBe(200);
    const body = (await response.json()) as Json;
    expect(body).toMatchObject({
      model: AZURE_MODEL,
      choices: [{ finish_reason: 'stop', content_filter_results: { hate: { filtered: false } } }],
      prompt_filter_results: [{ prompt_index: 0 }],
      usage: { prompt_tokens: 7, completion_tokens: 5 },
    });
  });

  it('takes an Entra token as Bearer, refuses a wrong key and a call without api-version', async () => {
    const bearer = await postJson(mock.url, CHAT, chat('Hi'), { authorization: 'Bearer azure-key' });
    expect(bearer.status).toBe(200);
    const wrong = await postJson(mock.url, CHAT, chat('Hi'), { 'api-key': 'other' });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({ error: { code: '401', message: 'Invalid API key.' } });
    const unversioned = await postJson(
      mock.url,
      '/openai/deployments/my-gpt/chat/completions',
      chat('Hi'),
      key,
    );
    expect(unversioned.status).toBe(404);
  });

  it('opens a stream with the prompt filter chunk and ends it with the usage chunk', async () => {
    const body = chat('Hi @mock(words=2,input_tokens=9,output_tokens=2)', {
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = dataOf((await readSse(await postJson(mock.url, CHAT, body, key))).slice(0, -1)) as Json[];
    expect(chunks[0]).toEqual({
      choices: [],
      created: 0,
      id: '',
      model: '',
      object: '',
      prompt_filter_results: [expect.objectContaining({ prompt_index: 0 })],
    });
    expect(chunks.slice(1, -1).every((chunk) => chunk.model === AZURE_MODEL)).toBe(true);
    expect(chunks.at(-2)?.choices[0]).toMatchObject({ finish_reason: 'stop', content_filter_results: {} });
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 2 } });
  });

  it('refuses a filtered prompt with 400 content_filter and stops a filtered completion', async () => {
    const refused = await postJson(mock.url, CHAT, chat('Hi @mock(content_filter=prompt)'), key);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({
      error: { code: 'content_filter', innererror: { code: 'ResponsibleAIPolicyViolation' } },
    });

    const stopped = (await (
      await postJson(mock.url, CHAT, chat('Hi @mock(content_filter=completion,output_tokens=3)'), key)
    ).json()) as Json;
    expect(stopped.choices[0]).toMatchObject({
      finish_reason: 'content_filter',
      message: { content: 'Hello' },
      content_filter_results: { violence: { filtered: true } },
    });
    expect(stopped.usage.completion_tokens).toBe(3);

    const body = chat('Hi @mock(content_filter=completion,words=4)', {
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = dataOf((await readSse(await postJson(mock.url, CHAT, body, key))).slice(0, -1)) as Json[];
    expect(chunks.map((chunk) => chunk.choices[0]?.finish_reason ?? null)).toEqual([
      null,
      null,
      null,
      'content_filter',
      null,
    ]);
    expect(chunks.at(-1)?.usage).toMatchObject({ completion_tokens: 4 });
  });
});

describe('Azure OpenAI responses', () => {
  it('answers a response as the deployment model, streamed or not', async () => {
    const response = await postJson(mock.url, RESPONSES, { model: 'my-gpt', input: 'Hi' }, key);
    expect(((await response.json()) as Json).model).toBe(AZURE_MODEL);
    const frames = await readSse(
      await postJson(mock.url, RESPONSES, { model: 'my-gpt', input: 'Hi', stream: true }, key),
    );
    expect(frames.at(-1)?.event).toBe('response.completed');
    expect((dataOf(frames).at(-1) as Json).response.model).toBe(AZURE_MODEL);
  });
});
