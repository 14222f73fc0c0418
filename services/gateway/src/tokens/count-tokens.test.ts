import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { sampleMessagesBody, sampleText } from '../../test/fixtures/sample-bodies.ts';
import { countTextTokens, EXACT_LIMIT_CHARS, estimateInputTokens } from './count-tokens.ts';
import {
  ANTHROPIC_IMAGE_MAX_TOKENS,
  OPENAI_IMAGE_MAX_TOKENS,
  PDF_PAGE_TOKENS,
  REFERENCED_DOCUMENT_TOKENS,
} from './media-tokens.ts';
import { ANTHROPIC_TOOL_SYSTEM_PROMPT_TOKENS } from './messages-text.ts';
import {
  AUDIO_TOKENS,
  DOCUMENT_TOKENS,
  MESSAGE_OVERHEAD_TOKENS,
  REQUEST_OVERHEAD_TOKENS,
  TOOL_OVERHEAD_TOKENS,
} from './text-collector.ts';

const tokens = (text: string) => countTokens(text);
const BASE = REQUEST_OVERHEAD_TOKENS + MESSAGE_OVERHEAD_TOKENS;

describe('estimateInputTokens on messages', () => {
  it('counts a short text message with the real tokenizer', () => {
    const text = 'Explain how a metered gateway reserves quota before calling the model.';
    const estimate = estimateInputTokens('messages', {
      model: 'a',
      messages: [{ role: 'user', content: text }],
    });
    expect(estimate).toBe(BASE + tokens(text));
  });

  it('counts the system prompt, text blocks and tool calls and results', () => {
    const body = {
      system: [{ type: 'text', text: 'You are terse.' }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'List files' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'ls', input: { path: '/srv' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'a.txt\nb.txt' }] },
      ],
    };
    const joined = ['You are terse.', 'List files', 'ls', '{"path":"/srv"}', 'a.txt\nb.txt'].join('\n');
    expect(estimateInputTokens('messages', body)).toBe(
      REQUEST_OVERHEAD_TOKENS + 3 * MESSAGE_OVERHEAD_TOKENS + tokens(joined),
    );
  });

  it('counts tool definitions by name, description and schema', () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const tool = {
      name: 'search_code',
      description: 'Search the repository for a regular expression and return matching lines.',
      input_schema: { type: 'object', properties: { pattern: { type: 'string' } }, required: ['pattern'] },
    };
    const without = estimateInputTokens('count_tokens', { messages });
    const withTool = estimateInputTokens('count_tokens', { messages, tools: [tool] });
    const toolText = [tool.name, tool.description, JSON.stringify(tool.input_schema)].join('\n');
    const expected = ANTHROPIC_TOOL_SYSTEM_PROMPT_TOKENS + TOOL_OVERHEAD_TOKENS + tokens(toolText);
    expect(withTool - without).toBeGreaterThanOrEqual(expected - 2);
    expect(withTool - without).toBeLessThanOrEqual(expected + 2);
  });

  it('gives unreadable images the largest image, a one-page PDF a page, text documents their text', () => {
    const image = {
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: 'A'.repeat(200_000) },
    };
    const pdf = {
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' },
    };
    const textDocument = {
      type: 'document',
      source: { type: 'text', media_type: 'text/plain', data: 'plain words' },
    };
    const estimate = estimateInputTokens('messages', {
      messages: [{ role: 'user', content: [image, pdf, textDocument] }],
    });
    expect(estimate).toBe(BASE + ANTHROPIC_IMAGE_MAX_TOKENS + PDF_PAGE_TOKENS + tokens('plain words'));
  });

  it('counts an unknown block by its JSON text rather than ignoring it', () => {
    const block = { type: 'future_block', payload: 'something the model will read' };
    const estimate = estimateInputTokens('messages', { messages: [{ role: 'user', content: [block] }] });
    expect(estimate).toBe(BASE + tokens(JSON.stringify(block)));
  });

  it('treats special-token look-alikes as ordinary text', () => {
    const estimate = estimateInputTokens('messages', {
      messages: [{ role: 'user', content: 'end <|endoftext|> here <|im_start|>' }],
    });
    expect(estimate).toBeGreaterThan(BASE + 5);
  });
});

describe('estimateInputTokens on chat completions', () => {
  it('counts message text, content parts, tool calls and function tools', () => {
    const body = {
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'look', arguments: '{"zoom":2}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'a red bicycle' },
      ],
      tools: [
        {
          type: 'function',
          function: { name: 'look', description: 'Zoom in.', parameters: { type: 'object' } },
        },
      ],
    };
    const text = ['Be brief.', 'What is in this picture?', 'look', '{"zoom":2}', 'a red bicycle'];
    const toolText = ['look', 'Zoom in.', '{"type":"object"}'];
    const expected =
      REQUEST_OVERHEAD_TOKENS +
      4 * MESSAGE_OVERHEAD_TOKENS +
      OPENAI_IMAGE_MAX_TOKENS +
      AUDIO_TOKENS +
      TOOL_OVERHEAD_TOKENS +
      tokens([...text, ...toolText].join('\n'));
    expect(estimateInputTokens('chat_completions', body)).toBe(expected);
  });
});

describe('estimateInputTokens on responses', () => {
  it('counts instructions and a plain string input', () => {
    const estimate = estimateInputTokens('responses', {
      instructions: 'Answer in French.',
      input: 'Hello there',
    });
    expect(estimate).toBe(BASE + tokens('Answer in French.\nHello there'));
  });

  it('counts input items: messages, function calls and their output, reasoning', () => {
    const encrypted = 'e'.repeat(400);
    const body = {
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'Run the tests' }] },
        {
          type: 'reasoning',
          summary: [{ type: 'summary_text', text: 'Plan: run' }],
          encrypted_content: encrypted,
        },
        { type: 'function_call', call_id: 'c', name: 'shell', arguments: '{"cmd":"pnpm test"}' },
        { type: 'function_call_output', call_id: 'c', output: 'all green' },
        { type: 'message', role: 'user', content: [{ type: 'input_file', file_id: 'f' }] },
      ],
      tools: [
        { type: 'function', name: 'shell', description: 'Run a command.', parameters: { type: 'object' } },
      ],
    };
    const text = ['Run the tests', 'Plan: run', 'shell', '{"cmd":"pnpm test"}', 'all green'];
    const toolText = ['shell', 'Run a command.', '{"type":"object"}'];
    const expected =
      REQUEST_OVERHEAD_TOKENS +
      5 * MESSAGE_OVERHEAD_TOKENS +
      100 +
      REFERENCED_DOCUMENT_TOKENS +
      TOOL_OVERHEAD_TOKENS +
      tokens([...text, ...toolText].join('\n'));
    expect(estimateInputTokens('responses', body)).toBe(expected);
  });
});

describe('estimateInputTokens robustness', () => {
  it('never throws on shapes it does not expect', () => {
    const odd = [
      { messages: 'not a list', system: 42, tools: {} },
      { messages: [null, 7, { content: 3 }, { content: [null, 1, { type: 5 }] }] },
      { input: { role: 'user' }, instructions: ['x'] },
    ];
    for (const body of odd) {
      for (const surface of ['messages', 'chat_completions', 'responses'] as const) {
        expect(estimateInputTokens(surface, body)).toBeGreaterThanOrEqual(REQUEST_OVERHEAD_TOKENS);
      }
    }
  });

  it('copes with a tool input nested too deep to serialise', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    const body = { messages: [{ role: 'user', content: [{ type: 'tool_use', name: 'x', input: deep }] }] };
    expect(estimateInputTokens('messages', body)).toBeGreaterThanOrEqual(DOCUMENT_TOKENS);
  });
});

describe('countTextTokens', () => {
  it('is exact up to the exact limit', () => {
    const text = sampleText(EXACT_LIMIT_CHARS, 5);
    expect(countTextTokens(text)).toBe(tokens(text));
  });

  it('stays within 10% of the exact count on a long varied text', () => {
    const text = sampleText(400_000, 11);
    const exact = tokens(text);
    expect(Math.abs(countTextTokens(text) - exact) / exact).toBeLessThan(0.1);
  });

  it('estimates a large request close to its exact count', () => {
    const body = sampleMessagesBody(300_000);
    const estimate = estimateInputTokens('messages', body);
    const exactText = tokens(JSON.stringify(body));
    // The JSON text carries extra punctuation, so it is an upper bound of the right magnitude.
    expect(estimate).toBeGreaterThan(exactText * 0.6);
    expect(estimate).toBeLessThan(exactText * 1.1);
  });
});
