import { describe, expect, it } from 'vitest';
import { type ProtocolRequest, planReply, sampleArguments, THINKING_TEXT } from './reply-plan.ts';

const request: ProtocolRequest = { model: 'm', stream: false, includeUsage: true };

describe('sampleArguments', () => {
  it('fills every declared property by type, enum or const', () => {
    const schema = {
      type: 'object',
      properties: {
        city: { type: 'string' },
        days: { type: 'integer' },
        ratio: { type: 'number' },
        metric: { type: 'boolean' },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        kind: { const: 'forecast' },
        tags: { type: 'array', items: { type: 'string' } },
        where: { type: 'object', properties: { lat: { type: 'number' } } },
        note: { type: ['string', 'null'] },
      },
      required: ['city'],
    };
    expect(JSON.parse(sampleArguments(schema))).toEqual({
      city: 'mock',
      days: 1,
      ratio: 1,
      metric: true,
      unit: 'celsius',
      kind: 'forecast',
      tags: [],
      where: { lat: 1 },
      note: 'mock',
    });
  });

  it('gives an empty object for a missing or non-object schema', () => {
    expect(sampleArguments(undefined)).toBe('{}');
    expect(sampleArguments({ type: 'string' })).toBe('{}');
  });
});

describe('planReply', () => {
  it('answers five words by default and counts one output token per word', () => {
    const plan = planReply(request, {}, 40);
    expect(plan.text).toBe('Hello from the mock upstream.');
    expect(plan.usage).toMatchObject({ inputTokens: 10, outputTokens: 5 });
    expect(plan.stop).toBe('end');
  });

  it('caps words at the max output and says so in the stop reason', () => {
    const plan = planReply({ ...request, maxOutput: 3 }, { words: 8 }, 1);
    expect(plan.text.split(' ')).toHaveLength(3);
    expect(plan.usage?.outputTokens).toBe(3);
    expect(plan.stop).toBe('max');
  });

  it('reports explicit figures as given', () => {
    const plan = planReply(request, { inputTokens: 1234, outputTokens: 77, cacheRead: 5 }, 10);
    expect(plan.usage).toEqual({
      inputTokens: 1234,
      outputTokens: 77,
      cacheRead: 5,
      cacheWrite: 0,
      cacheWrite1h: 0,
      reasoningTokens: 0,
    });
    expect(plan.pieces).toHaveLength(77);
  });

  it('plans a tool call only when a tool is declared', () => {
    const tool = { name: 'lookup', schema: { type: 'object', properties: { q: { type: 'string' } } } };
    expect(planReply({ ...request, tool }, { tool: true }, 1).toolCalls).toEqual([
      { name: 'lookup', arguments: '{"q":"mock"}' },
    ]);
    expect(planReply(request, { tool: true }, 1).toolCalls).toEqual([]);
  });

  it('calls tools by name or several in parallel, and answers once a tool result came back', () => {
    const lookup = { name: 'lookup', schema: { type: 'object', properties: { q: { type: 'string' } } } };
    const clock = { name: 'clock', schema: { type: 'object', properties: {} } };
    const tools = { ...request, tool: lookup, tools: [lookup, clock] };
    expect(planReply(tools, { toolName: 'clock' }, 1).toolCalls).toEqual([
      { name: 'clock', arguments: '{}' },
    ]);
    expect(planReply(tools, { tools: 2 }, 1).toolCalls.map((call) => call.name)).toEqual(['lookup', 'clock']);
    const answered = planReply({ ...tools, afterToolResult: true }, { tools: 2 }, 1);
    expect(answered.toolCalls).toEqual([]);
    expect(answered.stop).toBe('end');
    // A forced choice still calls, as a provider must.
    expect(
      planReply({ ...tools, afterToolResult: true, toolChoice: 'required' }, {}, 1).toolCalls,
    ).toHaveLength(1);
  });

  it('reasons first only on the thinking directive', () => {
    expect(planReply(request, { thinking: true }, 1).thinking).toBe(THINKING_TEXT);
    expect(planReply(request, {}, 1).thinking).toBeUndefined();
  });

  it('drops usage under no_usage and gives each answer its own id', () => {
    const first = planReply(request, { noUsage: true }, 1);
    expect(first.usage).toBeUndefined();
    expect(planReply(request, {}, 1).id).not.toBe(first.id);
  });
});
