import { describe, expect, it } from 'vitest';
import { type ProviderRefusal, refusalMessage } from './refusal-messages.ts';

const FIELDS = new Set(['model', 'messages', 'max_tokens', 'tools', 'temperature']);

function say(refusal: Partial<ProviderRefusal>): string {
  return refusalMessage(
    { status: 400, kinds: [], message: '', param: null, ...refusal },
    'claude-fast',
    FIELDS,
  );
}

/** What providers have been seen to put in a refusal: none of it may reach the client. */
const LEAKS = [
  'gpt-4o-2024-08-06',
  'ft:gpt-4o-mini:acme-corp::9xYz',
  'org-Zx81pQ',
  'proj_4f9a2c',
  'acme-gpt4o-prod-eastus2',
  '2001:db8:85a3::8a2e:370:7334',
  '[fe80::1%eth0]',
  'llm-proxy.internal.corp:8443',
  'vllm-0.vllm.svc.cluster.local',
  'sk-proj-abcdef123456',
  'req_011CQ',
  'Anthropic',
  'OpenAI',
  'Azure',
];
const LEAKY =
  `Project ${LEAKS[3]} in organization ${LEAKS[2]} cannot use model ${LEAKS[0]} (fine-tune ${LEAKS[1]}) ` +
  `on deployment ${LEAKS[4]} at ${LEAKS[5]} / ${LEAKS[6]} via ${LEAKS[7]} and ${LEAKS[8]}; key ${LEAKS[9]}, ` +
  `request ${LEAKS[10]}. ${LEAKS[11]} ${LEAKS[12]} ${LEAKS[13]}.`;

describe('refusalMessage', () => {
  it('never repeats the provider’s words, whatever they carry', () => {
    for (const status of [400, 404, 409, 413, 422]) {
      for (const refusal of [
        { status, message: LEAKY },
        { status, message: `prompt is too long: ${LEAKY}` },
        { status, message: `tools.0: ${LEAKY}`, kinds: ['invalid_request_error'] },
        { status, message: LEAKY, param: LEAKS[2]! },
        { status, message: LEAKY, param: `messages[0].${LEAKS[7]}` },
      ]) {
        const message = say(refusal);
        for (const leak of LEAKS) expect(message, `${message} leaks ${leak}`).not.toContain(leak);
        expect(message).toContain('claude-fast');
        expect(message).toMatch(/Nothing was charged\.$/);
      }
    }
  });

  it('says what it recognises in its own words', () => {
    expect(say({ message: 'prompt is too long: 210000 tokens > 200000 maximum' })).toBe(
      'The input is longer than claude-fast accepts. Nothing was charged.',
    );
    expect(say({ kinds: ['invalid_request_error', 'context_length_exceeded'], message: '...' })).toContain(
      'longer than claude-fast accepts',
    );
    expect(say({ message: 'max_tokens: 100000 > 64000, which is the maximum allowed' })).toContain(
      'maximum output asked for is more than claude-fast allows',
    );
    expect(say({ message: 'messages: roles must alternate between "user" and "assistant"' })).toContain(
      'roles or the order of the messages',
    );
    expect(say({ status: 404, message: `model: ${LEAKS[0]}` })).toContain('not available from its provider');
    expect(say({ message: 'something new' })).toBe(
      'The model provider refused the request for claude-fast (HTTP 400). Nothing was charged.',
    );
  });

  it('names the field the provider pointed at only when it is a path of the client’s own request', () => {
    expect(say({ message: 'Invalid value', param: 'messages[3].content' })).toContain(
      'The field it named: messages[3].content.',
    );
    expect(say({ message: 'Invalid value', param: 'deployment_id' })).not.toContain('field');
    expect(say({ message: 'Invalid value', param: 'messages[0].x y' })).not.toContain('field');
  });

  it('names no field for a content filter refusal: it judges the content (Azure points at `prompt`)', () => {
    expect(say({ kinds: ['content_filter'], message: LEAKY, param: 'messages' })).toBe(
      'claude-fast refused the request under its content policy. Nothing was charged.',
    );
  });
});
