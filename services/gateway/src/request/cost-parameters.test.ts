import { AppError } from '@tollgate/errors';
import type { MeteredSurface } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { type CostParameterSettings, checkCostParameters } from './cost-parameters.ts';

const SETTINGS: CostParameterSettings = { maxChoices: 16, extraAnthropicBetas: new Set() };

function headers(values: Record<string, string> = {}) {
  return { get: (name: string) => values[name] ?? null };
}

function check(
  surface: MeteredSurface,
  body: Record<string, unknown>,
  header: Record<string, string> = {},
  settings = SETTINGS,
) {
  return checkCostParameters(surface, body, headers(header), settings);
}

/** The refusal's message, failing unless it is unsupported_parameter. */
function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('unsupported_parameter');
    return (error as AppError).message;
  }
  throw new Error('expected unsupported_parameter');
}

describe('chat n', () => {
  it('multiplies the reservation by the choices asked for', () => {
    expect(check('chat_completions', {})).toEqual({ choices: 1 });
    expect(check('chat_completions', { n: null })).toEqual({ choices: 1 });
    expect(check('chat_completions', { n: 64 }, {}, { ...SETTINGS, maxChoices: 64 })).toEqual({
      choices: 64,
    });
  });

  it('refuses choices it cannot reserve for: above the maximum, zero, fractions, strings', () => {
    for (const n of [17, 0, -1, 1.5, '2', true]) {
      expect(refusal(() => check('chat_completions', { n }))).toContain(
        'n (a whole number of choices from 1 to 16)',
      );
    }
  });
});

describe('state kept at the provider', () => {
  it.each([
    ['responses', 'previous_response_id', 'resp_123'],
    ['responses', 'conversation', 'conv_123'],
    ['responses', 'conversation', { id: 'conv_123' }],
    ['responses', 'prompt', { id: 'pmpt_123', version: '2' }],
    ['messages', 'thread', { type: 'continue', previous_message_id: 'msg_1' }],
  ] as const)('%s refuses %s', (surface, field, value) => {
    expect(refusal(() => check(surface, { [field]: value }))).toContain(`Unsupported parameter: ${field}`);
  });

  it('admits them as null (the SDKs send null for "not given")', () => {
    expect(check('responses', { previous_response_id: null, conversation: null, prompt: null })).toEqual({
      choices: 1,
    });
  });
});

describe('tools', () => {
  it('admits the tools a client runs itself on each surface', () => {
    expect(() =>
      check('messages', {
        tools: [
          { name: 'Bash', input_schema: { type: 'object' } },
          { type: 'custom', name: 'x', input_schema: { type: 'object' } },
          { type: 'bash_20250124', name: 'bash' },
          { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' },
          { type: 'computer_20250124', name: 'computer', display_width_px: 1, display_height_px: 1 },
          { type: 'memory_20250818', name: 'memory' },
        ],
      }),
    ).not.toThrow();
    expect(() =>
      check('chat_completions', {
        tools: [
          { type: 'function', function: { name: 'f' } },
          { type: 'custom', custom: { name: 'g' } },
        ],
      }),
    ).not.toThrow();
    expect(() =>
      check('responses', {
        tools: [
          { type: 'function', name: 'shell' },
          { type: 'custom', name: 'apply_patch' },
          { type: 'local_shell' },
          { type: 'shell' },
          { type: 'shell', environment: { type: 'local' } },
          { type: 'apply_patch' },
          { type: 'namespace', name: 'crm', tools: [] },
          { type: 'tool_search', execution: 'client' },
          { type: 'computer_use_preview', display_width: 1, display_height: 1, environment: 'linux' },
        ],
      }),
    ).not.toThrow();
  });

  it.each([
    ['messages', { type: 'web_search_20250305', name: 'web_search' }],
    ['messages', { type: 'web_fetch_20250910', name: 'web_fetch' }],
    ['messages', { type: 'code_execution_20250825', name: 'code_execution' }],
    ['messages', { type: 'tool_search_tool_regex_20251119', name: 'tool_search' }],
    ['messages', { type: 'mcp_toolset', mcp_server_name: 'x' }],
    ['chat_completions', { type: 'web_search' }],
    ['responses', { type: 'web_search' }],
    ['responses', { type: 'web_search_preview' }],
    ['responses', { type: 'file_search', vector_store_ids: ['vs_1'] }],
    ['responses', { type: 'code_interpreter', container: { type: 'auto' } }],
    ['responses', { type: 'image_generation' }],
    ['responses', { type: 'mcp', server_label: 'x', server_url: 'https://example.test' }],
    ['responses', { type: 'shell', environment: { type: 'container_auto' } }],
    ['responses', { type: 'tool_search' }],
    ['responses', { type: 'programmatic_tool_calling' }],
  ] as const)('%s refuses a tool the provider runs: %o', (surface, tool) => {
    const mine =
      surface === 'messages' ? { name: 'mine', input_schema: {} } : { type: 'function', name: 'mine' };
    const message = refusal(() => check(surface, { tools: [mine, tool] }));
    expect(message).toContain('Unsupported parameter: tools[1]');
  });

  it('refuses remote MCP servers, code-execution containers, web search and fallback models', () => {
    expect(refusal(() => check('messages', { mcp_servers: [] }))).toContain('mcp_servers');
    expect(refusal(() => check('messages', { container: 'container_1' }))).toContain('container');
    expect(refusal(() => check('messages', { fallbacks: ['default'] }))).toContain('fallbacks');
    expect(refusal(() => check('chat_completions', { web_search_options: {} }))).toContain(
      'web_search_options',
    );
    expect(refusal(() => check('responses', { background: true }))).toContain('background');
    expect(check('responses', { background: false })).toEqual({ choices: 1 });
  });
});

describe('premium prices', () => {
  it('refuses fast speed, priority tiers and regional inference; admits the standard ones', () => {
    expect(refusal(() => check('messages', { speed: 'fast' }))).toContain('speed fast');
    expect(refusal(() => check('messages', { inference_geo: 'us' }))).toContain('inference_geo us');
    expect(refusal(() => check('chat_completions', { service_tier: 'priority' }))).toContain('service_tier');
    expect(refusal(() => check('responses', { service_tier: 'scale' }))).toContain('service_tier');
    expect(() =>
      check('messages', { speed: 'standard', inference_geo: 'global', service_tier: 'auto' }),
    ).not.toThrow();
    for (const tier of ['auto', 'default', 'flex', null])
      expect(() => check('chat_completions', { service_tier: tier })).not.toThrow();
  });
});

describe('anthropic-beta', () => {
  it('admits what Claude Code sends, repeated headers joined with commas', () => {
    const beta =
      'claude-code-20250219, interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14,context-management-2025-06-27';
    expect(check('messages', {}, { 'anthropic-beta': beta })).toEqual({ choices: 1 });
  });

  it.each([
    'context-1m-2025-08-07',
    'extended-cache-ttl-2025-04-11',
    'code-execution-2025-08-25',
    'files-api-2025-04-14',
    'mcp-client-2025-11-20',
    'fast-mode-2026-02-01',
    'some-future-beta-2099-01-01',
  ])('refuses %s, which the reservation cannot cover', (beta) => {
    const message = refusal(() =>
      check('messages', {}, { 'anthropic-beta': `interleaved-thinking-2025-05-14,${beta}` }),
    );
    expect(message).toContain(`beta ${beta}`);
    expect(message).not.toMatch(/anthropic/i);
  });

  it('admits the betas the operator adds, and reads the header on /v1/messages only', () => {
    const settings = { ...SETTINGS, extraAnthropicBetas: new Set(['context-1m-2025-08-07']) };
    expect(() =>
      check('messages', {}, { 'anthropic-beta': 'context-1m-2025-08-07' }, settings),
    ).not.toThrow();
    expect(() => check('chat_completions', {}, { 'anthropic-beta': 'context-1m-2025-08-07' })).not.toThrow();
  });

  it('quotes at most 64 characters of what the client sent', () => {
    const message = refusal(() => check('messages', {}, { 'anthropic-beta': 'x'.repeat(500) }));
    expect(message.length).toBeLessThan(200);
  });
});
