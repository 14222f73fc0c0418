/**
 * Any alias on any surface: each official client surface (Anthropic messages, OpenAI chat
 * completions, OpenAI responses) on an alias of each provider kind (one native pair, the others
 * translated), streamed and not, for a text answer, a forced tool, two parallel tools followed by
 * their results, an image input and reasoning. Each call checks what the client got (text,
 * calls, reasoning, stop), what reached the provider, and that the usage the client was told
 * equals what the ledger charged, which is the upstream's own figure.
 */

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  anthropicClient,
  expectAnthropicError,
  expectOpenAIError,
  mockRequests,
  openaiClient,
  rejection,
} from '../src/clients.ts';
import { signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger, expectSettledInCredits, Meter } from '../src/ledger.ts';
import { type E2EStack, PRICES, PROVIDER_KEY, startStack, UPSTREAM_MODELS } from '../src/stack.ts';
import { WEATHER_ARGUMENTS, WEATHER_PARAMETERS } from '../src/tools.ts';

let stack: E2EStack;
let meter: Meter;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  stack = await startStack('translation-matrix', { anyProtocol: true });
  const customer = await signUpCustomer(stack, { credits: 100_000_000n });
  const { secret } = await customer.createKey({ name: 'matrix', limits: { requestsPerMinute: 600 } });
  openai = openaiClient(stack.gatewayUrl, secret);
  anthropic = anthropicClient(stack.gatewayUrl, { apiKey: secret });
  meter = new Meter(stack, customer.accountId);
});

beforeEach(() => meter.mark());

afterAll(() => closeCheckingLedger(stack));

const TIME_PARAMETERS = { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] };
const TIME_ARGUMENTS = { zone: 'mock' };
/** The text every answer of the mock starts with. */
const ANSWER = /^Hello from the mock upstream\./;
/** What the mock reasons under its `thinking` directive (services/mock-upstream README). */
const THINKING_TEXT = 'The mock considers the request.';
/** A 1x1 PNG. */
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

type Alias =
  | 'claude-any-e2e'
  | 'gpt-any-e2e'
  | 'gpt-azure-any-e2e'
  | 'claude-bedrock-any-e2e'
  | 'gemini-any-e2e'
  | 'claude-vertex-any-e2e'
  | 'gemini-vertex-any-e2e';
const ALIASES: Alias[] = [
  'claude-any-e2e',
  'gpt-any-e2e',
  'gpt-azure-any-e2e',
  'claude-bedrock-any-e2e',
  'gemini-any-e2e',
  'claude-vertex-any-e2e',
  'gemini-vertex-any-e2e',
];
/** Aliases whose provider speaks Anthropic's messages (its input figure leaves cache reads out). */
const MESSAGES_KIND = new Set<Alias>(['claude-any-e2e', 'claude-bedrock-any-e2e', 'claude-vertex-any-e2e']);
/** Gemini's protocol: thoughts are reported apart from the candidates and billed as output. */
const GEMINI_PROTOCOL = new Set<Alias>(['gemini-any-e2e', 'gemini-vertex-any-e2e']);
const VERTEX_BASE = '/v1/projects/e2e-project/locations/us-east5/publishers';

/** One request, in neutral words; each surface writes it in its own protocol. */
interface Ask {
  prompt: string;
  tools?: boolean;
  /** Force this tool. */
  force?: 'get_weather';
  image?: boolean;
  thinking?: boolean;
}

interface Call {
  id: string;
  name: string;
  arguments: unknown;
}

/** What the client got, read from the surface's own answer. */
interface Answer {
  text: string;
  reasoning: string;
  calls: Call[];
  stop: 'end' | 'tool' | 'max';
  /** Total input and output, added up as the caller's protocol defines them. */
  usage: { input: number; output: number };
  model: string;
  /** The surface's own form of the answer, to send back in the next turn. */
  // biome-ignore lint/suspicious/noExplicitAny: each protocol's own type
  raw: any;
}

interface Surface {
  name: 'messages' | 'chat_completions' | 'responses';
  ask(alias: Alias, stream: boolean, ask: Ask): Promise<Answer>;
  /** The next turn: the question, the answer's calls and one result per call. */
  answerCalls(alias: Alias, stream: boolean, ask: Ask, answer: Answer, results: string[]): Promise<Answer>;
}

const MAX_OUTPUT = 2048;

const messagesSurface: Surface = {
  name: 'messages',
  async ask(alias, stream, ask) {
    const content: Anthropic.ContentBlockParam[] = [{ type: 'text', text: ask.prompt }];
    if (ask.image)
      content.unshift({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } });
    return this.send(alias, stream, ask, [{ role: 'user', content }]);
  },
  async answerCalls(alias, stream, ask, answer, results) {
    const calls = answer.raw.content as Anthropic.ContentBlock[];
    const toolUses = calls.filter((block) => block.type === 'tool_use');
    return this.send(alias, stream, ask, [
      { role: 'user', content: question(ask) },
      { role: 'assistant', content: calls },
      {
        role: 'user',
        content: toolUses.map((block, index) => ({
          type: 'tool_result' as const,
          tool_use_id: block.id,
          content: results[index]!,
        })),
      },
    ]);
  },
  async send(alias: Alias, stream: boolean, ask: Ask, messages: Anthropic.MessageParam[]): Promise<Answer> {
    const params: Anthropic.MessageCreateParamsNonStreaming = {
      model: alias,
      max_tokens: MAX_OUTPUT,
      messages,
      ...(ask.tools
        ? {
            tools: [
              { name: 'get_time', input_schema: TIME_PARAMETERS as Anthropic.Tool.InputSchema },
              { name: 'get_weather', input_schema: WEATHER_PARAMETERS as Anthropic.Tool.InputSchema },
            ],
          }
        : {}),
      ...(ask.force ? { tool_choice: { type: 'tool', name: ask.force } } : {}),
      ...(ask.thinking ? { thinking: { type: 'enabled', budget_tokens: 1024 } } : {}),
    };
    const message = stream
      ? await anthropic.messages.stream(params).finalMessage()
      : await anthropic.messages.create(params);
    const stops = { end_turn: 'end', tool_use: 'tool', max_tokens: 'max' } as const;
    return {
      text: message.content.map((block) => (block.type === 'text' ? block.text : '')).join(''),
      reasoning: message.content.map((block) => (block.type === 'thinking' ? block.thinking : '')).join(''),
      calls: message.content.flatMap((block) =>
        block.type === 'tool_use' ? [{ id: block.id, name: block.name, arguments: block.input }] : [],
      ),
      stop: stops[message.stop_reason as keyof typeof stops],
      usage: {
        input:
          message.usage.input_tokens +
          (message.usage.cache_creation_input_tokens ?? 0) +
          (message.usage.cache_read_input_tokens ?? 0),
        output: message.usage.output_tokens,
      },
      model: message.model,
      raw: message,
    };
  },
} as Surface & {
  send(alias: Alias, stream: boolean, ask: Ask, messages: Anthropic.MessageParam[]): Promise<Answer>;
};

/** The first turn's question without its directive, as an application keeps it in the history. */
const question = (ask: Ask) => ask.prompt.replace(/@mock\([^)]*\)/, '').trim();

type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

const chatSurface = {
  name: 'chat_completions' as const,
  async ask(alias: Alias, stream: boolean, ask: Ask) {
    const content: OpenAI.Chat.Completions.ChatCompletionContentPart[] = [{ type: 'text', text: ask.prompt }];
    if (ask.image) content.unshift({ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } });
    return this.send(alias, stream, ask, [{ role: 'user', content }]);
  },
  async answerCalls(alias: Alias, stream: boolean, ask: Ask, answer: Answer, results: string[]) {
    return this.send(alias, stream, ask, [
      { role: 'user', content: question(ask) },
      answer.raw as ChatMessage,
      ...answer.calls.map((call, index) => ({
        role: 'tool' as const,
        tool_call_id: call.id,
        content: results[index]!,
      })),
    ]);
  },
  async send(alias: Alias, stream: boolean, ask: Ask, messages: ChatMessage[]): Promise<Answer> {
    const params = {
      model: alias,
      max_completion_tokens: MAX_OUTPUT,
      messages,
      ...(ask.tools
        ? {
            tools: [
              { type: 'function' as const, function: { name: 'get_time', parameters: TIME_PARAMETERS } },
              {
                type: 'function' as const,
                function: { name: 'get_weather', parameters: WEATHER_PARAMETERS },
              },
            ],
          }
        : {}),
      ...(ask.force ? { tool_choice: { type: 'function' as const, function: { name: ask.force } } } : {}),
      ...(ask.thinking ? { reasoning_effort: 'low' as const } : {}),
    };
    let text = '';
    let reasoning = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    let model = '';
    const calls: Array<{ id: string; name: string; arguments: string }> = [];
    if (stream) {
      const chunks = await openai.chat.completions.create({
        ...params,
        stream: true,
        stream_options: { include_usage: true },
      });
      for await (const chunk of chunks) {
        model = chunk.model;
        if (chunk.usage) usage = chunk.usage;
        const choice = chunk.choices[0];
        if (!choice) continue;
        const delta = choice.delta as typeof choice.delta & { reasoning_content?: string };
        text += delta.content ?? '';
        reasoning += delta.reasoning_content ?? '';
        for (const call of delta.tool_calls ?? []) {
          calls[call.index] ??= { id: '', name: '', arguments: '' };
          const slot = calls[call.index]!;
          slot.id ||= call.id ?? '';
          slot.name ||= call.function?.name ?? '';
          slot.arguments += call.function?.arguments ?? '';
        }
        finish = choice.finish_reason ?? finish;
      }
    } else {
      const completion = await openai.chat.completions.create(params);
      model = completion.model;
      usage = completion.usage;
      const choice = completion.choices[0]!;
      const message = choice.message as typeof choice.message & { reasoning_content?: string };
      text = message.content ?? '';
      reasoning = message.reasoning_content ?? '';
      for (const call of message.tool_calls ?? []) {
        if (call.type === 'function') calls.push({ id: call.id, ...call.function });
      }
      finish = choice.finish_reason;
    }
    const stops = { stop: 'end', tool_calls: 'tool', length: 'max' } as const;
    const raw: ChatMessage = {
      role: 'assistant',
      content: text === '' ? null : text,
      ...(calls.length > 0
        ? {
            tool_calls: calls.map((call) => ({
              id: call.id,
              type: 'function' as const,
              function: { name: call.name, arguments: call.arguments },
            })),
          }
        : {}),
    };
    return {
      text,
      reasoning,
      calls: calls.map((call) => ({ id: call.id, name: call.name, arguments: JSON.parse(call.arguments) })),
      stop: stops[finish as keyof typeof stops],
      usage: { input: usage?.prompt_tokens ?? -1, output: usage?.completion_tokens ?? -1 },
      model,
      raw,
    };
  },
};

const responsesSurface = {
  name: 'responses' as const,
  async ask(alias: Alias, stream: boolean, ask: Ask) {
    const content: OpenAI.Responses.ResponseInputContent[] = [{ type: 'input_text', text: ask.prompt }];
    if (ask.image) {
      content.unshift({ type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'auto' });
    }
    return this.send(alias, stream, ask, [{ role: 'user', content }]);
  },
  async answerCalls(alias: Alias, stream: boolean, ask: Ask, answer: Answer, results: string[]) {
    return this.send(alias, stream, ask, [
      { role: 'user', content: question(ask) },
      ...answer.calls.map((call) => ({
        type: 'function_call' as const,
        call_id: call.id,
        name: call.name,
        arguments: JSON.stringify(call.arguments),
      })),
      ...answer.calls.map((call, index) => ({
        type: 'function_call_output' as const,
        call_id: call.id,
        output: results[index]!,
      })),
    ]);
  },
  async send(
    alias: Alias,
    stream: boolean,
    ask: Ask,
    input: OpenAI.Responses.ResponseInput,
  ): Promise<Answer> {
    const params: OpenAI.Responses.ResponseCreateParamsNonStreaming = {
      model: alias,
      max_output_tokens: MAX_OUTPUT,
      store: false,
      input,
      ...(ask.tools
        ? {
            tools: [
              { type: 'function', name: 'get_time', parameters: TIME_PARAMETERS, strict: false },
              { type: 'function', name: 'get_weather', parameters: WEATHER_PARAMETERS, strict: false },
            ],
          }
        : {}),
      ...(ask.force ? { tool_choice: { type: 'function', name: ask.force } } : {}),
      ...(ask.thinking
        ? { reasoning: { effort: 'low', summary: 'auto' }, include: ['reasoning.encrypted_content'] }
        : {}),
    };
    const response = stream
      ? await openai.responses.stream(params as Parameters<typeof openai.responses.stream>[0]).finalResponse()
      : await openai.responses.create(params);
    const calls = response.output.flatMap((item) =>
      item.type === 'function_call'
        ? [{ id: item.call_id, name: item.name, arguments: JSON.parse(item.arguments) }]
        : [],
    );
    const reasoning = response.output
      .flatMap((item) => (item.type === 'reasoning' ? item.summary.map((part) => part.text) : []))
      .join('');
    return {
      text: response.output_text,
      reasoning,
      calls,
      stop: response.status === 'incomplete' ? 'max' : calls.length > 0 ? 'tool' : 'end',
      usage: { input: response.usage?.input_tokens ?? -1, output: response.usage?.output_tokens ?? -1 },
      model: response.model,
      raw: response,
    };
  },
};

const SURFACES: Surface[] = [messagesSurface, chatSurface, responsesSurface];

const CASES = SURFACES.flatMap((surface) =>
  ALIASES.flatMap((alias) => [false, true].map((stream) => ({ surface, alias, stream }))),
);

/**
 * Where the upstream's input figure comes from: an Anthropic (or Bedrock) provider reports input
 * without its cache reads, an OpenAI (or Azure) one with them. The ledger charges the total either way.
 */
/** The mock's input_tokens are uncached on every protocol: each kind bills them plus the cache reads. */
function billedInput(_alias: Alias, input: number, cacheRead: number): number {
  return input + cacheRead;
}

/** The one reservation of the last call: its alias, surface and the charge at its usage. */
async function expectCharged(
  surface: Surface,
  alias: Alias,
  answer: Answer,
  usage: { input: number; output: number },
) {
  expect(answer.usage).toEqual(usage);
  const [row] = await meter.finished();
  expect(row).toMatchObject({ alias, surface: surface.name });
  expectSettledInCredits(row!, PRICES[alias], usage);
}

/**
 * The provider's kind decides which protocol the mock was spoken to in, and where the model is:
 * Bedrock's and Azure's chat URLs carry it (Azure's Responses take the deployment as `model`).
 */
const UPSTREAM: Record<Alias, { paths: string[]; model?: string }> = {
  'claude-any-e2e': { paths: ['/v1/messages'], model: UPSTREAM_MODELS.claude },
  'gpt-any-e2e': { paths: ['/v1/chat/completions', '/v1/responses'], model: UPSTREAM_MODELS.gpt },
  'gpt-azure-any-e2e': {
    paths: [`/openai/deployments/${UPSTREAM_MODELS.azure}/chat/completions`, '/openai/responses'],
  },
  'claude-bedrock-any-e2e': {
    paths: ['invoke', 'invoke-with-response-stream'].map(
      (action) => `/model/${encodeURIComponent(UPSTREAM_MODELS.bedrock)}/${action}`,
    ),
  },
  'gemini-any-e2e': {
    paths: ['generateContent', 'streamGenerateContent'].map(
      (method) => `/v1beta/models/${UPSTREAM_MODELS.gemini}:${method}`,
    ),
  },
  'claude-vertex-any-e2e': {
    paths: ['rawPredict', 'streamRawPredict'].map(
      (method) =>
        `${VERTEX_BASE}/anthropic/models/${encodeURIComponent(UPSTREAM_MODELS.vertexClaude)}:${method}`,
    ),
  },
  'gemini-vertex-any-e2e': {
    paths: ['generateContent', 'streamGenerateContent'].map(
      (method) => `${VERTEX_BASE}/google/models/${UPSTREAM_MODELS.vertexGemini}:${method}`,
    ),
  },
};

async function upstreamBody(tag: string, alias: Alias, index = 0) {
  const requests = await mockRequests(stack.mockUrl, tag);
  const request = requests[index];
  expect(UPSTREAM[alias].paths).toContain(request?.path);
  // biome-ignore lint/suspicious/noExplicitAny: the provider's own request shape
  const body = JSON.parse(request?.body ?? '{}') as any;
  const model = UPSTREAM[alias].model;
  if (model) expect(body.model).toBe(model);
  if (alias === 'claude-bedrock-any-e2e') expect(body.anthropic_version).toBe('bedrock-2023-05-31');
  if (request?.path === '/openai/responses') expect(body.model).toBe(UPSTREAM_MODELS.azure);
  // Gemini's body names no model: the URL does, and the key travels in x-goog-api-key only.
  if (alias === 'gemini-any-e2e') {
    expect(body).not.toHaveProperty('model');
    expect(request?.headers['x-goog-api-key']).toBe(PROVIDER_KEY);
  }
  // Vertex: the model in the URL, the service account's OAuth token as the credential.
  if (alias === 'claude-vertex-any-e2e' || alias === 'gemini-vertex-any-e2e') {
    expect(body).not.toHaveProperty('model');
    expect(request?.headers.authorization).toBe('Bearer ya29.mock-vertex-access-token');
  }
  if (alias === 'claude-vertex-any-e2e') expect(body.anthropic_version).toBe('vertex-2023-10-16');
  return { path: request!.path, body };
}

const label = ({ surface, alias, stream }: (typeof CASES)[number]) =>
  `${surface.name} on ${alias}${stream ? ', streamed' : ''}`;

describe.each(CASES.map((entry) => [label(entry), entry] as const))('%s', (_, { surface, alias, stream }) => {
  const tag = (what: string) => `${what}-${surface.name}-${alias}-${stream ? 's' : 'n'}-${Date.now()}`;

  it('answers text, with cache reads counted once', async () => {
    const answer = await surface.ask(alias, stream, {
      prompt: 'Hello @mock(input_tokens=300,cache_read=100,output_tokens=7)',
    });
    expect(answer.text).toMatch(ANSWER);
    expect(answer.calls).toEqual([]);
    expect(answer.stop).toBe('end');
    expect(answer.model).toBe(alias);
    await expectCharged(surface, alias, answer, { input: billedInput(alias, 300, 100), output: 7 });
  });

  it('calls the forced tool', async () => {
    const answer = await surface.ask(alias, stream, {
      prompt: 'Weather in Oslo? @mock(input_tokens=120,output_tokens=9)',
      tools: true,
      force: 'get_weather',
    });
    expect(answer.calls).toMatchObject([{ name: 'get_weather', arguments: WEATHER_ARGUMENTS }]);
    expect(answer.stop).toBe('tool');
    await expectCharged(surface, alias, answer, { input: 120, output: 9 });
  });

  it('calls two tools in parallel, then answers with both results', async () => {
    const ask: Ask = {
      prompt: 'Time and weather? @mock(tools=2,input_tokens=140,output_tokens=12)',
      tools: true,
    };
    const answer = await surface.ask(alias, stream, ask);
    expect(answer.calls).toMatchObject([
      { name: 'get_time', arguments: TIME_ARGUMENTS },
      { name: 'get_weather', arguments: WEATHER_ARGUMENTS },
    ]);
    expect(new Set(answer.calls.map((call) => call.id)).size).toBe(2);
    expect(answer.stop).toBe('tool');
    await expectCharged(surface, alias, answer, { input: 140, output: 12 });

    const followTag = tag('results');
    const followUp = await surface.answerCalls(alias, stream, ask, answer, [
      `12:00 @mock(tag=${followTag},input_tokens=210,output_tokens=6)`,
      '{"celsius": 21}',
    ]);
    expect(followUp.text).toMatch(ANSWER);
    expect(followUp.stop).toBe('end');
    await expectCharged(surface, alias, followUp, { input: 210, output: 6 });
    // Both results reached the provider, each tied to its call.
    const { body } = await upstreamBody(followTag, alias);
    const sent = JSON.stringify(body);
    expect(sent).toContain('12:00');
    expect(sent).toContain('celsius');
  });

  it('passes an image on', async () => {
    const imageTag = tag('image');
    const answer = await surface.ask(alias, stream, {
      prompt: `What is this? @mock(tag=${imageTag},input_tokens=90,output_tokens=5)`,
      image: true,
    });
    expect(answer.text).toMatch(ANSWER);
    await expectCharged(surface, alias, answer, { input: 90, output: 5 });
    const { body } = await upstreamBody(imageTag, alias);
    expect(JSON.stringify(body)).toContain(PNG);
  });

  it('asks for reasoning and shows it', async () => {
    const thinkingTag = tag('thinking');
    const answer = await surface.ask(alias, stream, {
      prompt: `Think first. @mock(thinking,tag=${thinkingTag},input_tokens=80,output_tokens=40,reasoning_tokens=30)`,
      thinking: true,
    });
    expect(answer.text).toMatch(ANSWER);
    expect(answer.reasoning).toBe(THINKING_TEXT);
    // Gemini reports thoughts apart from the candidates, and bills them as output: 40 + 30.
    const output = GEMINI_PROTOCOL.has(alias) ? 70 : 40;
    await expectCharged(surface, alias, answer, { input: 80, output });
    const { path, body } = await upstreamBody(thinkingTag, alias);
    if (MESSAGES_KIND.has(alias)) expect(body.thinking).toMatchObject({ type: 'enabled' });
    else if (GEMINI_PROTOCOL.has(alias))
      expect(body.generationConfig.thinkingConfig).toMatchObject({
        thinkingBudget: 1024,
        includeThoughts: true,
      });
    else if (path.endsWith('/chat/completions')) expect(body.reasoning_effort).toBe('low');
    else expect(body.reasoning).toMatchObject({ effort: 'low' });
  });
});

describe('discovery and counting on any alias', () => {
  it("lists every alias with its protocols, in Anthropic's shape for the Anthropic client", async () => {
    const anthropicModels: Array<Record<string, unknown>> = [];
    for await (const model of anthropic.models.list()) anthropicModels.push(model as never);
    const gpt = anthropicModels.find((model) => model.id === 'gpt-any-e2e');
    expect(gpt).toMatchObject({ type: 'model', display_name: expect.any(String) });
    expect(gpt?.protocols).toEqual(expect.arrayContaining(['messages', 'chat_completions', 'responses']));

    const openaiModels: Array<Record<string, unknown>> = [];
    for await (const model of openai.models.list()) openaiModels.push(model as never);
    const claude = openaiModels.find((model) => model.id === 'claude-any-e2e');
    expect(claude).toMatchObject({ object: 'model' });
    expect(claude?.protocols).toEqual(expect.arrayContaining(['messages', 'chat_completions', 'responses']));
    await meter.expectUntouched();
  });

  it.each(ALIASES)('counts tokens on %s with the Anthropic client, at no charge', async (alias) => {
    const counted = await anthropic.messages.countTokens({
      model: alias,
      messages: [{ role: 'user', content: 'How many tokens is this?' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
    await meter.expectUntouched();
  });
});

/**
 * Azure's and Bedrock's failures as the official clients see them: each ends with the spec's code,
 * names no provider, and charges nothing for what was not received (released when nothing came,
 * held for reconciliation when a stream broke after it started).
 */
describe('provider failures through the official clients', () => {
  const PROVIDER_WORDS = /bedrock|azure|amazon|aws|signature|throttl|content management|upstream-/i;

  it('a wrong SigV4 signature is upstream_unavailable on every surface, released', async () => {
    const error = await expectAnthropicError(
      anthropic.messages.create({
        model: 'claude-bedrock-badsig-e2e',
        max_tokens: 32,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
      Anthropic.InternalServerError,
      503,
      'upstream_unavailable',
    );
    expect(error.message).not.toMatch(PROVIDER_WORDS);
    await expectOpenAIError(
      openai.chat.completions.create({
        model: 'claude-bedrock-badsig-e2e',
        messages: [{ role: 'user', content: 'Hi' }],
      }),
      OpenAI.InternalServerError,
      503,
      'upstream_unavailable',
    );
    await expectOpenAIError(
      openai.responses.create({ model: 'claude-bedrock-badsig-e2e', input: 'Hi', stream: true }),
      OpenAI.InternalServerError,
      503,
      'upstream_unavailable',
    );
    const rows = await meter.finished(3);
    expect(rows.map((row) => [row.status, row.chargedCredits])).toEqual([
      ['released', 0n],
      ['released', 0n],
      ['released', 0n],
    ]);
  });

  it('a Bedrock throttle and an Azure one are upstream_unavailable, released', async () => {
    await expectAnthropicError(
      anthropic.messages.create({
        model: 'claude-bedrock-any-e2e',
        max_tokens: 32,
        messages: [{ role: 'user', content: 'Hi @mock(status=429)' }],
      }),
      Anthropic.InternalServerError,
      503,
      'upstream_unavailable',
    );
    await expectOpenAIError(
      openai.chat.completions.create({
        model: 'gpt-azure-any-e2e',
        messages: [{ role: 'user', content: 'Hi @mock(status=429)' }],
      }),
      OpenAI.InternalServerError,
      503,
      'upstream_unavailable',
    );
    const rows = await meter.finished(2);
    expect(rows.every((row) => row.status === 'released' && row.chargedCredits === 0n)).toBe(true);
  });

  it("Azure's content filter refusal is upstream_rejected 400 naming no provider, released", async () => {
    const error = await expectOpenAIError(
      openai.chat.completions.create({
        model: 'gpt-azure-any-e2e',
        messages: [{ role: 'user', content: 'Hi @mock(content_filter=prompt)' }],
      }),
      OpenAI.BadRequestError,
      400,
      'upstream_rejected',
    );
    expect(error.message).toContain('gpt-azure-any-e2e refused the request under its content policy');
    expect(error.message.replace('gpt-azure-any-e2e', '')).not.toMatch(PROVIDER_WORDS);
    const [row] = await meter.finished();
    expect(row).toMatchObject({ status: 'released', chargedCredits: 0n });
  });

  it('a modelStreamErrorException mid-stream fails the client’s stream, held and not charged', async () => {
    const stream = anthropic.messages.stream({
      model: 'claude-bedrock-any-e2e',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hi @mock(stream_error,words=4)' }],
    });
    const error = (await rejection(stream.finalMessage())) as InstanceType<typeof Anthropic.APIError>;
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(JSON.stringify(error.error)).toContain('upstream_unavailable');
    expect(error.message).not.toMatch(PROVIDER_WORDS);

    const chat = await openai.chat.completions.create({
      model: 'claude-bedrock-any-e2e',
      stream: true,
      messages: [{ role: 'user', content: 'Hi @mock(stream_error,words=4)' }],
    });
    const chatError = await rejection(
      (async () => {
        for await (const _chunk of chat) {
          // read until the error chunk
        }
      })(),
    );
    expect(chatError).toBeInstanceOf(OpenAI.APIError);
    const rows = await meter.finished(2);
    expect(rows.map((row) => [row.status, row.outcome, row.chargedCredits])).toEqual([
      ['held', 'upstream_unavailable', 0n],
      ['held', 'upstream_unavailable', 0n],
    ]);
  });

  const GEMINI_WORDS =
    /google|API_KEY|API key|INVALID_ARGUMENT|PERMISSION_DENIED|RESOURCE_EXHAUSTED|upstream-/;

  it("a wrong Gemini key (Gemini's 400 API_KEY_INVALID) is upstream_unavailable on every surface, released", async () => {
    const error = await expectAnthropicError(
      anthropic.messages.create({
        model: 'gemini-badkey-e2e',
        max_tokens: 32,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
      Anthropic.InternalServerError,
      503,
      'upstream_unavailable',
    );
    expect(error.message).not.toMatch(GEMINI_WORDS);
    const chatError = await expectOpenAIError(
      openai.chat.completions.create({
        model: 'gemini-badkey-e2e',
        messages: [{ role: 'user', content: 'Hi' }],
      }),
      OpenAI.InternalServerError,
      503,
      'upstream_unavailable',
    );
    expect(chatError.message).not.toMatch(GEMINI_WORDS);
    await expectOpenAIError(
      openai.responses.create({ model: 'gemini-badkey-e2e', input: 'Hi', stream: true }),
      OpenAI.InternalServerError,
      503,
      'upstream_unavailable',
    );
    const rows = await meter.finished(3);
    expect(rows.map((row) => [row.status, row.chargedCredits])).toEqual([
      ['released', 0n],
      ['released', 0n],
      ['released', 0n],
    ]);
  });

  it("Gemini's 429 RESOURCE_EXHAUSTED and 503 are upstream_unavailable, released", async () => {
    for (const status of [429, 503]) {
      const error = await expectAnthropicError(
        anthropic.messages.create({
          model: 'gemini-any-e2e',
          max_tokens: 32,
          messages: [{ role: 'user', content: `Hi @mock(status=${status})` }],
        }),
        Anthropic.InternalServerError,
        503,
        'upstream_unavailable',
      );
      expect(error.message).not.toMatch(GEMINI_WORDS);
      await expectOpenAIError(
        openai.chat.completions.create({
          model: 'gemini-any-e2e',
          messages: [{ role: 'user', content: `Hi @mock(status=${status})` }],
        }),
        OpenAI.InternalServerError,
        503,
        'upstream_unavailable',
      );
    }
    const rows = await meter.finished(4);
    expect(rows.every((row) => row.status === 'released' && row.chargedCredits === 0n)).toBe(true);
  });

  it('a Gemini stream cut before the chunk with its usage fails the client’s stream, held and not charged', async () => {
    const stream = anthropic.messages.stream({
      model: 'gemini-any-e2e',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hi @mock(cut_after=2,words=5)' }],
    });
    const error = (await rejection(stream.finalMessage())) as InstanceType<typeof Anthropic.APIError>;
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(error.message).not.toMatch(GEMINI_WORDS);
    const [row] = await meter.finished();
    expect(row).toMatchObject({ status: 'held', chargedCredits: 0n });
  });
});
