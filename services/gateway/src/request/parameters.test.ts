import { AppError } from '@tollgate/errors';
import { describe, expect, it } from 'vitest';
import { assertSupportedParameters, listSupportedParameters } from './parameters.ts';
import { SURFACES, type Surface } from './surface.ts';

function refusal(surface: Surface, body: Record<string, unknown>): AppError {
  try {
    assertSupportedParameters(surface, body);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error('expected a refusal');
}

/** Bodies shaped like what the official clients and coding tools send today. */
const CLAUDE_CODE_MESSAGES = {
  model: 'alias',
  max_tokens: 32000,
  messages: [{ role: 'user', content: 'hi' }],
  system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
  tools: [{ name: 'Bash', description: 'Run', input_schema: { type: 'object' } }],
  tool_choice: { type: 'auto' },
  metadata: { user_id: 'u' },
  thinking: { type: 'enabled', budget_tokens: 1024 },
  context_management: { edits: [{ type: 'clear_thinking_20251015' }] },
  output_config: { effort: 'high' },
  mcp_servers: [],
  container: 'c',
  service_tier: 'auto',
  temperature: 1,
  top_k: 5,
  top_p: 0.9,
  stop_sequences: ['\n\nHuman:'],
  stream: true,
};

const CODEX_RESPONSES = {
  model: 'alias',
  instructions: 'You are Codex.',
  input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }],
  tools: [],
  tool_choice: 'auto',
  parallel_tool_calls: false,
  reasoning: { effort: 'medium', summary: 'auto' },
  store: false,
  stream: true,
  include: ['reasoning.encrypted_content'],
  service_tier: 'priority',
  prompt_cache_key: 'thread-1',
  prompt_cache_retention: '24h',
  text: { verbosity: 'low' },
  client_metadata: { 'x-codex-installation-id': 'i' },
};

const OPENAI_CHAT = {
  model: 'alias',
  messages: [{ role: 'user', content: 'hi' }],
  max_completion_tokens: 100,
  max_tokens: 100,
  stream: true,
  stream_options: { include_usage: true },
  tools: [],
  tool_choice: 'auto',
  response_format: { type: 'json_object' },
  reasoning_effort: 'low',
  temperature: 0.2,
  user: 'u',
  n: 1,
  seed: 1,
  stop: ['x'],
};

describe('assertSupportedParameters', () => {
  it('admits what Claude Code sends on /v1/messages', () => {
    expect(() => assertSupportedParameters('messages', CLAUDE_CODE_MESSAGES)).not.toThrow();
  });

  it('admits what Codex CLI sends on /v1/responses', () => {
    expect(() => assertSupportedParameters('responses', CODEX_RESPONSES)).not.toThrow();
  });

  it('admits an OpenAI client chat completion with the usual options', () => {
    expect(() => assertSupportedParameters('chat_completions', OPENAI_CHAT)).not.toThrow();
  });

  it('admits a count_tokens body with tools, system and thinking', () => {
    const body = {
      model: 'a',
      messages: [],
      system: 's',
      tools: [],
      tool_choice: { type: 'auto' },
      thinking: {},
    };
    expect(() => assertSupportedParameters('count_tokens', body)).not.toThrow();
  });

  it('refuses an unknown field with unsupported_parameter naming it', () => {
    const error = refusal('messages', { model: 'a', messages: [], max_tokens: 1, foo: 1 });
    expect(error.code).toBe('unsupported_parameter');
    expect(error.status).toBe(400);
    expect(error.message).toBe('Unsupported parameter: foo');
  });

  it('refuses a field that belongs to another surface', () => {
    expect(refusal('messages', { model: 'a', max_completion_tokens: 5 }).message).toContain(
      'max_completion_tokens',
    );
    expect(refusal('chat_completions', { model: 'a', max_output_tokens: 5 }).message).toContain(
      'max_output_tokens',
    );
    expect(refusal('responses', { model: 'a', messages: [] }).message).toContain('messages');
    expect(refusal('count_tokens', { model: 'a', messages: [], max_tokens: 5 }).message).toContain(
      'max_tokens',
    );
    expect(refusal('count_tokens', { model: 'a', messages: [], stream: true }).message).toContain('stream');
  });

  it('names several unknown fields, bounded in count and length', () => {
    const body: Record<string, unknown> = { model: 'a' };
    for (const name of ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7']) body[name] = 1;
    body['x'.repeat(500)] = 1;
    const error = refusal('responses', body);
    expect(error.message).toBe('Unsupported parameters: a1, a2, a3, a4, a5 (and 3 more)');
    const long = refusal('responses', { ['y'.repeat(500)]: 1 });
    expect(long.message.length).toBeLessThan(120);
  });

  it('does not treat header-only SDK options as body fields', () => {
    expect(refusal('messages', { model: 'a', betas: ['x'] }).message).toContain('betas');
  });

  it('matches field names exactly, including prototype names', () => {
    expect(refusal('chat_completions', { Model: 'a' }).message).toContain('Model');
    expect(refusal('chat_completions', JSON.parse('{"__proto__":1}')).message).toContain('__proto__');
    expect(refusal('responses', { constructor: 1 }).message).toContain('constructor');
  });

  it('gives every surface a list containing model', () => {
    for (const surface of SURFACES) expect(listSupportedParameters(surface)).toContain('model');
  });
});
