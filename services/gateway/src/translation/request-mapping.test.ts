import type { MeteredSurface } from '@tollgate/schemas';
/**
 * The request side: every accepted field of every surface has a translation decision (mapped or
 * refused), refusals name the caller's field, and reasoning proofs go back only to their issuer.
 */
import { describe, expect, it } from 'vitest';
import { listSupportedParameters } from '../request/parameters.ts';
import { codecFor } from './codecs.ts';
import type { WireProtocol } from './protocol.ts';
import { CHAT_TRANSLATED_FIELDS } from './protocols/chat/decode-request.ts';
import { MESSAGES_TRANSLATED_FIELDS } from './protocols/messages/decode-request.ts';
import { RESPONSES_TRANSLATED_FIELDS } from './protocols/responses/decode-request.ts';
import { mayReplay, openProof, providerTag, sealProof } from './signatures.ts';
import { ToolNames } from './tool-names.ts';
import { planTranslation } from './translate.ts';

const DECISIONS = {
  messages: MESSAGES_TRANSLATED_FIELDS,
  chat_completions: CHAT_TRANSLATED_FIELDS,
  responses: RESPONSES_TRANSLATED_FIELDS,
} as const;

function encodeFor(
  caller: MeteredSurface,
  upstream: WireProtocol,
  body: Record<string, unknown>,
  providerId = 'prov-a',
) {
  const translation = planTranslation(caller, upstream, body, 2048, {
    providerId,
    upstreamModel: 'up-model',
  });
  return codecFor(upstream).encodeRequest(translation.request, {
    upstreamModel: 'up-model',
    toolNames: translation.toolNames,
    providerTag: providerTag(providerId),
  });
}

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toMatchObject({ code: 'unsupported_parameter' });
    return (error as Error).message;
  }
  throw new Error('expected unsupported_parameter');
}

const user = (content: unknown) => ({ role: 'user', content });

describe('every accepted field has a translation decision', () => {
  it.each(Object.keys(DECISIONS) as MeteredSurface[])('%s: mapped or refused, nothing else', (surface) => {
    const decided = [...DECISIONS[surface].mapped, ...DECISIONS[surface].refused].sort();
    expect(decided).toEqual([...listSupportedParameters(surface)].sort());
  });

  it.each(
    Object.entries(DECISIONS).flatMap(([surface, fields]) =>
      fields.refused.map((field) => [surface, field] as const),
    ),
  )('%s refuses %s by name', (surface, field) => {
    const base: Record<string, unknown> =
      surface === 'responses'
        ? { model: 'm', input: 'hi' }
        : { model: 'm', max_tokens: 10, messages: [user('hi')] };
    const upstream: WireProtocol = surface === 'messages' ? 'chat_completions' : 'messages';
    expect(
      refusal(() =>
        planTranslation(surface as MeteredSurface, upstream, { ...base, [field]: 'x' }, 100, {
          providerId: 'p',
          upstreamModel: 'u',
        }),
      ),
    ).toContain(field);
  });
});

describe('what an upstream cannot express is refused, naming the caller field', () => {
  it.each([
    ['messages', 'chat_completions', { top_k: 5 }, 'top_k'],
    [
      'messages',
      'chat_completions',
      { tools: [{ type: 'web_search_20250305', name: 'web_search' }] },
      'tools[0].type',
    ],
    [
      'messages',
      'chat_completions',
      { context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] } },
      'context_management.edits[0].type',
    ],
    ['chat_completions', 'messages', { seed: 7 }, 'seed'],
    ['chat_completions', 'messages', { n: 2 }, 'n'],
    ['chat_completions', 'messages', { logprobs: true }, 'logprobs'],
    ['chat_completions', 'messages', { response_format: { type: 'json_object' } }, 'response_format'],
    [
      'chat_completions',
      'messages',
      { messages: [user([{ type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'low' } }])] },
      'messages[0].content[0].image_url.detail',
    ],
    [
      'chat_completions',
      'messages',
      { messages: [user([{ type: 'input_audio', input_audio: {} }])] },
      'messages[0].content[0].type',
    ],
    ['responses', 'messages', { previous_response_id: 'resp_1' }, 'previous_response_id'],
    [
      'responses',
      'messages',
      { tools: [{ type: 'web_search', external_web_access: false }] },
      'tools[0].type',
    ],
    ['responses', 'messages', { include: ['message.output_text.logprobs'] }, 'include[0]'],
    ['responses', 'messages', { store: true }, 'store'],
    ['responses', 'messages', { input: [{ type: 'item_reference', id: 'x' }] }, 'input[0].type'],
  ] as const)('%s -> %s: %j', (caller, upstream, extra, field) => {
    const base: Record<string, unknown> =
      caller === 'responses'
        ? { model: 'm', input: 'hi' }
        : { model: 'm', max_tokens: 10, messages: [user('hi')] };
    const message = refusal(() => encodeFor(caller, upstream, { ...base, ...extra }));
    expect(message).toContain(field);
  });

  it('explains that nothing is stored when previous_response_id is sent', () => {
    expect(
      refusal(() =>
        encodeFor('responses', 'messages', { model: 'm', input: 'hi', previous_response_id: 'r' }),
      ),
    ).toMatch(/nothing is stored/);
  });

  it('refuses a document by URL for chat completions, which takes files inline only', () => {
    const body = {
      model: 'm',
      max_tokens: 10,
      messages: [user([{ type: 'document', source: { type: 'url', url: 'https://x/a.pdf' } }])],
    };
    expect(refusal(() => encodeFor('messages', 'chat_completions', body))).toContain(
      'messages[0].content[0].source',
    );
  });
});

describe('what Claude Code sends reaches an OpenAI upstream', () => {
  it('maps adaptive thinking with effort, deferred tools, metadata and no-op context editing', () => {
    const body = {
      model: 'gpt-mock',
      max_tokens: 32000,
      system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
      messages: [user([{ type: 'text', text: 'say hi', cache_control: { type: 'ephemeral' } }])],
      tools: [
        {
          name: 'Bash',
          description: 'Run',
          input_schema: { type: 'object', properties: { command: { type: 'string' } } },
        },
        {
          name: 'Later',
          description: 'Deferred',
          input_schema: { type: 'object', properties: {} },
          defer_loading: true,
        },
      ],
      metadata: { user_id: '{"device_id":"d","session_id":"s"}' },
      thinking: { type: 'adaptive', display: 'omitted' },
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      output_config: { effort: 'high' },
      stream: true,
    };
    expect(encodeFor('messages', 'chat_completions', body)).toEqual({
      model: 'up-model',
      messages: [
        { role: 'system', content: 'You are Claude Code.' },
        { role: 'user', content: 'say hi' },
      ],
      max_completion_tokens: 2048,
      tools: [
        {
          type: 'function',
          function: {
            name: 'Bash',
            description: 'Run',
            parameters: { type: 'object', properties: { command: { type: 'string' } } },
          },
        },
        {
          type: 'function',
          function: {
            name: 'Later',
            description: 'Deferred',
            parameters: { type: 'object', properties: {} },
          },
        },
      ],
      user: '{"device_id":"d","session_id":"s"}',
      reasoning_effort: 'high',
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('takes the system turn Claude Code puts in messages as instructions, in order', () => {
    const body = {
      model: 'gpt-mock',
      max_tokens: 1000,
      system: 'You are Claude Code.',
      messages: [
        user('say hi'),
        {
          role: 'system',
          content: [{ type: 'text', text: '# Environment', cache_control: { type: 'ephemeral' } }],
        },
      ],
    };
    expect(encodeFor('messages', 'chat_completions', body).messages).toEqual([
      { role: 'system', content: 'You are Claude Code.' },
      { role: 'system', content: '# Environment' },
      { role: 'user', content: 'say hi' },
    ]);
    const image = { type: 'image', source: { type: 'url', url: 'https://x/a.png' } };
    const refused = { ...body, messages: [user('hi'), { role: 'system', content: [image] }] };
    expect(refusal(() => encodeFor('messages', 'chat_completions', refused))).toContain(
      'messages[1].content[0].type',
    );
  });
});

describe('reasoning proofs', () => {
  const tag = providerTag('prov-a');
  const thinkingTurn = (signature: string) => ({
    model: 'm',
    max_tokens: 4096,
    thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [
      user('q'),
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'hmm', signature },
          { type: 'text', text: 'a' },
        ],
      },
      user('q2'),
    ],
  });

  it('seals with the issuer, opens again, and replays only to the issuer', () => {
    const proof = { origin: tag, kind: 'signature' as const, value: 'c2ln+/=' };
    const sealed = sealProof(proof);
    expect(sealed).not.toContain('prov-a');
    expect(openProof(sealed, 'signature')).toEqual(proof);
    expect(mayReplay(openProof(sealed, 'signature'), tag)).toBe(true);
    expect(mayReplay(openProof(sealed, 'signature'), providerTag('prov-b'))).toBe(false);
    // A raw signature came through a native call from a provider the gateway cannot name.
    expect(mayReplay(openProof('c2ln', 'signature'), tag)).toBe(false);
  });

  it('sends a thinking block back, unsealed, to the provider that signed it, and to no other', () => {
    const sealed = sealProof({ origin: tag, kind: 'signature', value: 'real-signature' });
    const same = encodeFor('messages', 'messages', thinkingTurn(sealed), 'prov-a');
    const assistant = (same.messages as Array<{ content: unknown[] }>)[1]!;
    expect(assistant.content[0]).toEqual({ type: 'thinking', thinking: 'hmm', signature: 'real-signature' });
    for (const [upstream, providerId] of [
      ['messages', 'prov-b'],
      ['responses', 'prov-a'],
      ['chat_completions', 'prov-a'],
    ] as const) {
      const other = JSON.stringify(encodeFor('messages', upstream, thinkingTurn(sealed), providerId));
      expect(other).not.toContain('real-signature');
      expect(other).not.toContain('hmm');
    }
  });

  it("carries OpenAI's encrypted reasoning, with its item id, back to the OpenAI provider that issued it", () => {
    const sealed = sealProof({ origin: tag, kind: 'encrypted', value: 'gAAAA-enc', itemId: 'rs_9' });
    const encoded = encodeFor('messages', 'responses', thinkingTurn(sealed), 'prov-a');
    expect(encoded.input).toContainEqual({
      type: 'reasoning',
      id: 'rs_9',
      summary: [{ type: 'summary_text', text: 'hmm' }],
      encrypted_content: 'gAAAA-enc',
    });
    expect(encoded.include).toEqual(['reasoning.encrypted_content']);
  });
});

describe('tool names', () => {
  it('maps a namespaced Responses tool to one flat name and back', () => {
    const names = new ToolNames([{ name: 'close_agent', namespace: 'multi_agent_v1', parameters: {} }]);
    expect(names.upstream('close_agent', 'multi_agent_v1')).toBe('multi_agent_v1__close_agent');
    expect(names.caller('multi_agent_v1__close_agent')).toEqual({
      name: 'close_agent',
      namespace: 'multi_agent_v1',
      custom: false,
    });
  });
});
