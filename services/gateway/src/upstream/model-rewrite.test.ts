import { describe, expect, it } from 'vitest';
import { readFixture } from './fixtures/read-fixture.ts';
import { createModelRewriter } from './model-rewrite.ts';

describe('createModelRewriter', () => {
  const rewrite = createModelRewriter('claude-sonnet-4-5-20250929', 'smart');

  it('replaces the model member and leaves every other byte as sent', () => {
    const body = '{"id":"msg_1",\n  "model" : "claude-sonnet-4-5-20250929", "x": 1}';
    expect(rewrite(body)).toBe('{"id":"msg_1",\n  "model" : "smart", "x": 1}');
  });

  it('rewrites message_start of a stream but not text that quotes the id', () => {
    const rewritten = rewrite(readFixture('anthropic-stream-text.sse'));
    expect(rewritten).toContain('"content":[],"model":"smart","stop_reason"');
    // The quoted id inside a text delta is the model's own words: escaped quotes, left alone.
    expect(rewritten).toContain('The \\"model\\":\\"claude-sonnet-4-5-20250929\\" text stays.');
    expect(rewritten.match(/claude-sonnet-4-5-20250929/g)).toHaveLength(1);
  });

  it('rewrites a dated snapshot of the upstream id, and every chunk of a chat stream', () => {
    const chat = createModelRewriter('gpt-4o-mini', 'fast');
    const rewritten = chat(readFixture('openai-chat-stream-text.sse'));
    expect(rewritten).not.toContain('gpt-4o-mini');
    expect(rewritten.match(/"model":"fast"/g)).toHaveLength(5);
  });

  it('leaves other models, non-string values and escaped values alone', () => {
    const chat = createModelRewriter('gpt-4o', 'fast');
    const text = '{"model":"gpt-4oo","a":{"model":null},"b":{"model":"gpt-4o\\u002d1"},"model":"gpt-4o"}';
    expect(chat(text)).toBe(
      '{"model":"gpt-4oo","a":{"model":null},"b":{"model":"gpt-4o\\u002d1"},"model":"fast"}',
    );
  });

  it('escapes an alias that needs it and is a no-op when alias and id are equal', () => {
    expect(createModelRewriter('m', 'a"b')('{"model":"m"}')).toBe('{"model":"a\\"b"}');
    const same = '{"model":"m"}';
    expect(createModelRewriter('m', 'm')(same)).toBe(same);
  });

  it('replaces the first model whatever its value for a provider that names its own model', () => {
    // Azure answers a deployment call with the deployment's model name, Bedrock with Anthropic's.
    const azure = createModelRewriter('my-deployment', 'gpt-azure', { anyValue: true });
    expect(azure('{"choices":[],"model":"gpt-4o-2024-11-20","x":{"model":"m"}}')).toBe(
      '{"choices":[],"model":"gpt-azure","x":{"model":"m"}}',
    );
    expect(azure('{"model":""}')).toBe('{"model":"gpt-azure"}');
    expect(createModelRewriter('a', 'a', { anyValue: true })('{"model":"claude-x"}')).toBe('{"model":"a"}');
  });
});
