import { describe, expect, it } from 'vitest';
import { type SseEvent, SseParser } from './sse.ts';

function parseInPieces(pieces: Array<Uint8Array | string>): SseEvent[] {
  const parser = new SseParser();
  const events: SseEvent[] = [];
  for (const piece of pieces) events.push(...parser.push(piece));
  events.push(...parser.flush());
  return events;
}

/** Every way of cutting `bytes` in two, to prove chunk boundaries never matter. */
function everySplit(bytes: Uint8Array): Array<[Uint8Array, Uint8Array]> {
  const splits: Array<[Uint8Array, Uint8Array]> = [];
  for (let at = 0; at <= bytes.length; at++) splits.push([bytes.subarray(0, at), bytes.subarray(at)]);
  return splits;
}

const ANTHROPIC_SAMPLE =
  'event: message_start\n' +
  'data: {"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":3}}}\n\n' +
  'event: ping\ndata: {"type": "ping"}\n\n' +
  'event: content_block_delta\n' +
  'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Grüße 👋"}}\n\n';

describe('SseParser', () => {
  it('reads named events and keeps each block raw, blank line included', () => {
    const events = parseInPieces([ANTHROPIC_SAMPLE]);
    expect(events.map((event) => event.event)).toEqual(['message_start', 'ping', 'content_block_delta']);
    expect(events[1]).toEqual({
      event: 'ping',
      data: '{"type": "ping"}',
      raw: 'event: ping\ndata: {"type": "ping"}\n\n',
    });
    expect(events.map((event) => event.raw).join('')).toBe(ANTHROPIC_SAMPLE);
  });

  it('gives the same events for every split point, even inside a UTF-8 character', () => {
    const bytes = new TextEncoder().encode(ANTHROPIC_SAMPLE);
    const whole = parseInPieces([bytes]);
    expect(whole[2]?.data).toContain('Grüße 👋');
    for (const [head, tail] of everySplit(bytes)) {
      expect(parseInPieces([head, tail])).toEqual(whole);
    }
  });

  it('gives the same events when fed one byte at a time', () => {
    const bytes = new TextEncoder().encode(ANTHROPIC_SAMPLE);
    const pieces = Array.from(bytes, (_, index) => bytes.subarray(index, index + 1));
    expect(parseInPieces(pieces)).toEqual(parseInPieces([bytes]));
  });

  it('accepts CRLF, CR and LF line endings, mixed, even split between CR and LF', () => {
    const text = 'event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\rdata: 3\n\n';
    const expected = [
      { event: 'a', data: '1', raw: 'event: a\r\ndata: 1\r\n\r\n' },
      { event: 'b', data: '2', raw: 'event: b\rdata: 2\r\r' },
      { event: undefined, data: '3', raw: 'data: 3\n\n' },
    ];
    expect(parseInPieces([text])).toEqual(expected);
    for (let at = 0; at <= text.length; at++) {
      expect(parseInPieces([text.slice(0, at), text.slice(at)])).toEqual(expected);
    }
  });

  it('does not take a CRLF split across chunks for two line endings', () => {
    const events = parseInPieces(['data: x\r', '\ndata: y\r\n\r\n']);
    expect(events).toEqual([{ event: undefined, data: 'x\ny', raw: 'data: x\r\ndata: y\r\n\r\n' }]);
  });

  it('joins multi-line data with LF and strips exactly one leading space', () => {
    const events = parseInPieces(['data: first\ndata:second\ndata:  third\ndata\n\n']);
    expect(events[0]?.data).toBe('first\nsecond\n third\n');
  });

  it('drops comments and comment-only blocks but keeps them in the raw text of an event', () => {
    const events = parseInPieces([': ping\n\n: keep-alive\ndata: {"a":1}\nid: 7\nretry: 10\n\n:\n\n']);
    expect(events).toEqual([
      { event: undefined, data: '{"a":1}', raw: ': keep-alive\ndata: {"a":1}\nid: 7\nretry: 10\n\n' },
    ]);
  });

  it('skips a block with an event name but no data, as browsers do', () => {
    expect(parseInPieces(['event: lonely\n\ndata: [DONE]\n\n']).map((event) => event.data)).toEqual([
      '[DONE]',
    ]);
  });

  it('returns nothing for an incomplete block until it is completed', () => {
    const parser = new SseParser();
    expect(parser.push('event: message_stop\ndata: {"type":"mess')).toEqual([]);
    expect(parser.push('age_stop"}\n')).toEqual([]);
    expect(parser.push('\n')).toEqual([
      {
        event: 'message_stop',
        data: '{"type":"message_stop"}',
        raw: 'event: message_stop\ndata: {"type":"message_stop"}\n\n',
      },
    ]);
  });

  it('on flush returns a final event that lacks its blank line, completed', () => {
    expect(parseInPieces(['data: {"a":1}\n\ndata: [DONE]'])).toEqual([
      { event: undefined, data: '{"a":1}', raw: 'data: {"a":1}\n\n' },
      { event: undefined, data: '[DONE]', raw: 'data: [DONE]\n\n' },
    ]);
    expect(parseInPieces(['data: [DONE]\n']).map((event) => event.raw)).toEqual(['data: [DONE]\n\n']);
  });

  it('ignores a byte-order mark at the start and treats a field without colon as empty', () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('data\n\n')]);
    expect(parseInPieces([bytes])).toEqual([{ event: undefined, data: '', raw: 'data\n\n' }]);
  });
});
