/**
 * The quick start's catalogue (deploy/catalog.example.yaml) as shipped, against the mock as the
 * quick start runs it (no provider key): every alias of every provider kind that declares all
 * protocols answers on each surface, streamed and not, as itself, and is charged what it told.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '@tollgate/test-harness';
import { describe, expect, it } from 'vitest';
import { bodyFor, sseData, useStack } from './support.ts';

const EXAMPLE = readFileSync(path.join(ROOT, 'deploy/catalog.example.yaml'), 'utf8');

const t = useStack('gw-example-catalog', {
  catalog: (mockUrl) => EXAMPLE.replace(/\$\{MOCK_UPSTREAM_URL:-[^}]*\}/g, mockUrl),
  mockApiKey: null,
});

/** The example's aliases of each kind, with their prices (credits per token). */
const ALIASES: Record<string, [bigint, bigint]> = {
  'claude-mock': [3n, 15n],
  'gpt-mock': [2n, 8n],
  'gpt-azure-mock': [2n, 8n],
  'claude-bedrock-mock': [3n, 15n],
  'gemini-mock': [1n, 4n],
  'claude-vertex-mock': [3n, 15n],
};
const PATHS = ['/v1/messages', '/v1/chat/completions', '/v1/responses'];
const CREDITS = 10_000_000n;

/** Total input and output as the surface tells them, streamed or not. */
function told(path: string, stream: boolean, text: string): { input: number; output: number } {
  if (path === '/v1/messages') {
    const usage = stream
      ? sseData(text).find((event) => event.type === 'message_delta')!.usage
      : JSON.parse(text).usage;
    const start = stream ? sseData(text)[0]!.message.usage : usage;
    const input =
      (usage.input_tokens || start.input_tokens) +
      (usage.cache_creation_input_tokens ?? start.cache_creation_input_tokens ?? 0) +
      (usage.cache_read_input_tokens ?? start.cache_read_input_tokens ?? 0);
    return { input, output: usage.output_tokens };
  }
  if (path === '/v1/chat/completions') {
    const usage = stream
      ? sseData(text).find((chunk) => chunk.choices.length === 0)!.usage
      : JSON.parse(text).usage;
    return { input: usage.prompt_tokens, output: usage.completion_tokens };
  }
  const usage = stream
    ? sseData(text).find((event) => event.type === 'response.completed')!.response.usage
    : JSON.parse(text).usage;
  return { input: usage.input_tokens, output: usage.output_tokens };
}

describe('the example catalogue', () => {
  it.each(Object.keys(ALIASES))(
    '%s answers on every surface, streamed and not, charged what it told',
    async (alias) => {
      for (const path of PATHS) {
        for (const stream of [false, true]) {
          const key = await t.key({ credits: CREDITS });
          const reply = await t.post(
            path,
            key.secret,
            bodyFor(path, alias, 'words=3,input_tokens=21,output_tokens=3', {
              ...(stream ? { stream: true } : {}),
              ...(stream && path === '/v1/chat/completions'
                ? { stream_options: { include_usage: true } }
                : {}),
            }),
          );
          expect(reply.status, `${path} ${stream} ${reply.text}`).toBe(200);
          expect(reply.text).toContain(`"model":"${alias}"`);
          const usage = told(path, stream, reply.text);
          expect(usage).toEqual({ input: 21, output: 3 });
          await t.stack.settled();
          const [input, output] = ALIASES[alias]!;
          expect(await t.stack.balances(key.accountId)).toMatchObject({
            credits: CREDITS - (21n * input + 3n * output),
            reservedCredits: 0n,
          });
        }
      }
    },
  );
});
