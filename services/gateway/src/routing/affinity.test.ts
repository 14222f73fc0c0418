import type { GatewayUpstream } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { createMemoryAffinityStore } from './affinity-store.ts';
import { affinityKey, CLAUDE_CODE_SESSION_HEADER, conversationOf } from './conversation.ts';
import { withoutReasoningProofs } from './proofs.ts';
import { preferUpstream, READY, type Standing, upstreamKey } from './upstream-order.ts';

const headers = (values: Record<string, string> = {}) => ({ get: (name: string) => values[name] ?? null });

describe('conversationOf', () => {
  const turns = (count: number) => {
    const messages: unknown[] = [{ role: 'user', content: 'Plan a trip' }];
    for (let turn = 1; turn < count; turn++) {
      messages.push(
        { role: 'assistant', content: `answer ${turn}` },
        { role: 'user', content: `more ${turn}` },
      );
    }
    return messages;
  };

  it('is the same for every turn of one conversation, another for another conversation', () => {
    const first = conversationOf('messages', { system: 'Be brief', messages: turns(1) }, headers());
    const tenth = conversationOf('messages', { system: 'Be brief', messages: turns(10) }, headers());
    expect(first).toMatch(/^prefix:/);
    expect(tenth).toBe(first);
    const other = conversationOf(
      'messages',
      { system: 'Be brief', messages: [{ role: 'user', content: 'Hi' }] },
      headers(),
    );
    expect(other).not.toBe(first);
    expect(conversationOf('messages', { system: 'Be long', messages: turns(3) }, headers())).not.toBe(first);
    // Chat's instructions are the messages before the first user turn.
    const chat = (count: number) =>
      conversationOf(
        'chat_completions',
        { messages: [{ role: 'system', content: 'x' }, ...turns(count)] },
        headers(),
      );
    expect(chat(5)).toBe(chat(1));
    const responses = (count: number) =>
      conversationOf('responses', { instructions: 'x', input: turns(count) }, headers());
    expect(responses(4)).toBe(responses(1));
    expect(conversationOf('responses', { input: 'Hello' }, headers())).toMatch(/^prefix:/);
  });

  it('prefers prompt_cache_key, then metadata.user_id, then the Claude Code session header', () => {
    const body = { messages: turns(2), metadata: { user_id: 'user_1_session_9' }, prompt_cache_key: 'k1' };
    const session = headers({ [CLAUDE_CODE_SESSION_HEADER]: 'sess-7' });
    expect(conversationOf('messages', body, session)).toBe('cache-key:k1');
    expect(conversationOf('messages', { ...body, prompt_cache_key: undefined }, session)).toBe(
      'user:user_1_session_9',
    );
    expect(conversationOf('messages', { messages: turns(2) }, session)).toBe('session:sess-7');
    expect(
      conversationOf('messages', { messages: [{ role: 'assistant', content: 'x' }] }, headers()),
    ).toBeNull();
  });

  it('names the record per key and alias under the account, without the conversation in clear', () => {
    const key = affinityKey('acct-1', 'key-1', 'alias', 'cache-key:secret-topic');
    expect(key).not.toContain('secret');
    expect(key).toMatch(/^affinity:\{a:acct-1\}:[A-Za-z0-9_-]{43}$/);
    expect(affinityKey('acct-1', 'key-2', 'alias', 'cache-key:secret-topic')).not.toBe(key);
    expect(affinityKey('acct-1', 'key-1', 'other', 'cache-key:secret-topic')).not.toBe(key);
  });
});

describe('preferUpstream', () => {
  const a: GatewayUpstream = { providerId: 'p', upstreamModel: 'a', priority: 0, weight: 1 };
  const b: GatewayUpstream = { providerId: 'q', upstreamModel: 'b', priority: 0, weight: 1 };
  const c: GatewayUpstream = { providerId: 'q', upstreamModel: 'c', priority: 1, weight: 1 };
  const ready = (): Standing => READY;

  it("puts the conversation's upstream first, whatever its priority, while it is ready", () => {
    expect(preferUpstream([a, b, c], upstreamKey(c), ready)).toEqual([c, a, b]);
    expect(preferUpstream([a, b, c], upstreamKey(a), ready)).toEqual([a, b, c]);
    expect(preferUpstream([a, b, c], null, ready)).toEqual([a, b, c]);
    expect(preferUpstream([a, b], upstreamKey(c), ready)).toEqual([a, b]);
  });

  it('leaves the order alone when that upstream is cooling or out', () => {
    expect(preferUpstream([a, b, c], upstreamKey(b), () => ({ kind: 'cooling' }))).toEqual([a, b, c]);
    expect(
      preferUpstream([a, b, c], upstreamKey(c), (u) => (u === c ? { kind: 'out', until: 1 } : READY)),
    ).toEqual([a, b, c]);
  });
});

describe('the memory affinity store', () => {
  it('keeps a record for its time to live after its last turn, the last used when full', async () => {
    let now = 0;
    const store = createMemoryAffinityStore({ ttlMs: 1_000, maxEntries: 2, now: () => now });
    store.set('one', 'up-a');
    store.set('two', 'up-b');
    expect(await store.get('one')).toBe('up-a');
    store.set('three', 'up-a');
    // 'two' was used least lately: it went to make room.
    expect(await store.get('two')).toBeNull();
    now = 900;
    // Read at 900: renewed until 1,900.
    expect(await store.get('one')).toBe('up-a');
    now = 1_500;
    expect(await store.get('one')).toBe('up-a');
    expect(await store.get('three')).toBeNull();
    now = 2_500;
    expect(await store.get('one')).toBeNull();
  });
});

describe('withoutReasoningProofs', () => {
  it('drops Anthropic thinking blocks and a turn left empty; the rest as sent', () => {
    const body = {
      messages: [
        { role: 'user', content: 'Q' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 't', signature: 'sig' },
            { type: 'text', text: 'A' },
          ],
        },
        { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'r' }] },
        { role: 'user', content: 'Q2' },
      ],
    };
    expect(withoutReasoningProofs('messages', body)).toEqual({
      field: 'messages',
      value: [
        { role: 'user', content: 'Q' },
        { role: 'assistant', content: [{ type: 'text', text: 'A' }] },
        { role: 'user', content: 'Q2' },
      ],
    });
    expect(withoutReasoningProofs('messages', { messages: [{ role: 'user', content: 'Q' }] })).toBeNull();
  });

  it('drops Responses reasoning items (their encrypted content)', () => {
    const input = [
      { role: 'user', content: 'Q' },
      { type: 'reasoning', id: 'rs_1', encrypted_content: 'enc', summary: [] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'A' }] },
    ];
    expect(withoutReasoningProofs('responses', { input })).toEqual({
      field: 'input',
      value: [input[0], input[2]],
    });
    expect(withoutReasoningProofs('chat_completions', { messages: [] })).toBeNull();
  });
});
