import { describe, expect, it } from 'vitest';
import { costMembers, UNCONFIRMED, withCostInBody, withCostInStreamEnd } from './receipt.ts';

const ID = '0190a3b4-0000-7000-8000-000000000001';
const settled = costMembers(
  {
    confirmed: true,
    result: {
      reservationId: ID,
      status: 'settled',
      replay: false,
      charged: { tokens: '0', credits: '129' },
      writtenOff: { tokens: '0', credits: '0' },
    },
  },
  ID,
);

describe('the cost beside usage', () => {
  it('is added to a whole answer with every other byte unchanged', () => {
    const body = '{"id":"x","usage":{"prompt_tokens":12,"completion_tokens":3} ,"model":"m"}\n';
    expect(withCostInBody(body, settled)).toBe(
      '{"id":"x","usage":{"prompt_tokens":12,"completion_tokens":3,"cost":129,"cost_details":' +
        `{"status":"settled","credits":129,"entitlement_tokens":0,"written_off_credits":0,"written_off_tokens":0,"request_id":"${ID}"}} ,"model":"m"}\n`,
    );
  });

  it("replaces a provider's own cost, which the caller must never see", () => {
    const body = '{"usage":{"prompt_tokens":1,"cost":0.0042}}';
    expect(JSON.parse(withCostInBody(body, settled)).usage.cost).toBe(129);
  });

  it('is null and marked unconfirmed when the settlement did not answer', () => {
    const body = '{"usage":{"input_tokens":1,"output_tokens":2}}';
    expect(JSON.parse(withCostInBody(body, costMembers(UNCONFIRMED, ID))).usage).toEqual({
      input_tokens: 1,
      output_tokens: 2,
      cost: null,
      cost_details: { status: 'unconfirmed', request_id: ID },
    });
  });

  it('is null and says so when the control plane held the call instead of settling it', () => {
    const held = costMembers(
      {
        confirmed: true,
        result: {
          reservationId: ID,
          status: 'held',
          replay: false,
          charged: { tokens: '0', credits: '0' },
          writtenOff: { tokens: '0', credits: '0' },
        },
      },
      ID,
    );
    const usage = JSON.parse(withCostInBody('{"usage":{"output_tokens":2}}', held)).usage;
    expect(usage.cost).toBeNull();
    expect(usage.cost_details).toMatchObject({ status: 'held', credits: 0, request_id: ID });
  });

  it('leaves an answer without usage, or not JSON, as it was', () => {
    for (const body of ['{"id":"x"}', '{"usage":null}', 'not json', '{"usage":{"a":1}} trailing']) {
      expect(withCostInBody(body, settled)).toBe(body);
    }
  });
});

describe('the cost in the final usage event of a stream', () => {
  it('chat completions: the usage chunk, [DONE] unchanged', () => {
    const end = 'data: {"choices":[],"usage":{"prompt_tokens":5}}\n\ndata: [DONE]\n\n';
    const priced = withCostInStreamEnd('chat_completions', end, settled);
    expect(priced.endsWith('\n\ndata: [DONE]\n\n')).toBe(true);
    expect(JSON.parse(priced.split('\n')[0]!.slice(6)).usage.cost).toBe(129);
  });

  it('messages: message_delta, message_stop unchanged', () => {
    const end =
      'event: message_delta\r\ndata: {"type":"message_delta","usage":{"output_tokens":9}}\r\n\r\n' +
      'event: message_stop\r\ndata: {"type":"message_stop"}\r\n\r\n';
    const priced = withCostInStreamEnd('messages', end, settled);
    expect(priced.endsWith('event: message_stop\r\ndata: {"type":"message_stop"}\r\n\r\n')).toBe(true);
    expect(JSON.parse(priced.split('\n')[1]!.slice(6)).usage).toMatchObject({ output_tokens: 9, cost: 129 });
  });

  it('responses: the usage inside response.completed, named by its type alone too', () => {
    const end =
      'data: {"type":"response.completed","sequence_number":7,"response":{"usage":{"input_tokens":1}}}\n\n';
    const priced = withCostInStreamEnd('responses', end, settled);
    const event = JSON.parse(priced.slice(6));
    expect(event.sequence_number).toBe(7);
    expect(event.response.usage).toMatchObject({ input_tokens: 1, cost: 129 });
  });

  it('leaves an end without a usage event as it was', () => {
    const end = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';
    expect(withCostInStreamEnd('messages', end, settled)).toBe(end);
    expect(withCostInStreamEnd('chat_completions', 'data: [DONE]\n\n', settled)).toBe('data: [DONE]\n\n');
  });
});
