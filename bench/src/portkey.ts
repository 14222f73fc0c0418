import type { ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startScript } from './scripts.ts';

const entry = createRequire(import.meta.url).resolve('@portkey-ai/gateway/build/start-server.js');
const preload = fileURLToPath(new URL('./portkey-fetch.ts', import.meta.url));

/**
 * Portkey's published node build, with the preload that lets its streamed calls work under Node's
 * fetch (bench/src/portkey-fetch.ts). --headless skips its log UI, production its console banner.
 */
export function startPortkey(work: string, port: number, node?: string): ChildProcess {
  return startScript(
    work,
    'portkey',
    path.dirname(entry),
    ['--import', preload, entry, `--port=${port}`, '--headless'],
    { NODE_ENV: 'production' },
    node,
  );
}

/**
 * What a call through Portkey to the mock sends besides its body: Messages calls go to Portkey's
 * Anthropic provider (its OpenAI provider refuses them), the others to its OpenAI provider.
 */
export function portkeyHeaders(surfacePath: string, mockPort: number): Record<string, string> {
  const host = { 'x-portkey-custom-host': `http://127.0.0.1:${mockPort}/v1` };
  if (surfacePath === '/v1/messages')
    return {
      ...host,
      'x-portkey-provider': 'anthropic',
      'x-api-key': 'sk-direct',
      'anthropic-version': '2023-06-01',
    };
  return { ...host, 'x-portkey-provider': 'openai', authorization: 'Bearer sk-direct' };
}
