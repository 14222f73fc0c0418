import type { GatewayProvider } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import { SseParser } from '../sse.ts';
import type { UpstreamTarget } from '../types.ts';
import { plainUsage } from '../types.ts';
import {
  AZURE_CHAT_API_VERSION,
  AZURE_RESPONSES_API_VERSION,
  azureOpenaiAdapter,
} from './azure-openai-adapter.ts';
import { getAdapter } from './index.ts';

function target(baseUrl: string, credential: string | null): UpstreamTarget {
  const provider: GatewayProvider = { id: 'prov_az', kind: 'azure-openai', baseUrl, credentialRef: null };
  return { provider, credential, upstreamModel: 'prod gpt/4o', alias: 'gpt-azure' };
}

function build(baseUrl: string, surface: 'chat_completions' | 'responses', credential: string | null = 'k') {
  return azureOpenaiAdapter.buildRequest({
    target: target(baseUrl, credential),
    surface,
    clientHeaders: new Headers({ authorization: 'Bearer sk-client', 'api-key': 'sk-client' }),
  });
}

describe('azure-openai adapter: request', () => {
  it('is the adapter of its kind, serving chat completions and responses', () => {
    expect(getAdapter('azure-openai')).toBe(azureOpenaiAdapter);
    expect(azureOpenaiAdapter.surfaces).toEqual(['chat_completions', 'responses']);
  });

  it('puts the deployment in the chat URL and the api-version in the query', () => {
    for (const base of ['https://acme.openai.azure.com', 'https://acme.openai.azure.com/openai/']) {
      expect(build(base, 'chat_completions').url).toBe(
        `https://acme.openai.azure.com/openai/deployments/prod%20gpt%2F4o/chat/completions?api-version=${AZURE_CHAT_API_VERSION}`,
      );
      expect(build(base, 'responses').url).toBe(
        `https://acme.openai.azure.com/openai/responses?api-version=${AZURE_RESPONSES_API_VERSION}`,
      );
    }
    expect(
      build('https://acme.openai.azure.com?api-version=2025-03-01-preview', 'chat_completions').url,
    ).toBe(
      'https://acme.openai.azure.com/openai/deployments/prod%20gpt%2F4o/chat/completions?api-version=2025-03-01-preview',
    );
  });

  it('sends the key as api-key, an Entra token as Bearer, never the client credential', () => {
    expect(build('https://a.openai.azure.com', 'chat_completions', 'azure-key').headers).toEqual({
      'content-type': 'application/json',
      'api-key': 'azure-key',
    });
    expect(build('https://a.openai.azure.com', 'responses', 'Bearer eyJ.a.b').headers).toEqual({
      'content-type': 'application/json',
      authorization: 'Bearer eyJ.a.b',
    });
    expect(build('https://a.openai.azure.com', 'responses', null).headers).toEqual({
      'content-type': 'application/json',
    });
  });
});

describe('azure-openai adapter: streams', () => {
  it('drops the prompt filter chunk, passes content and reads the usage chunk', () => {
    const tracker = azureOpenaiAdapter.createStreamUsageTracker('chat_completions');
    const events = new SseParser().push(
      'data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}\n\n' +
        'data: {"choices":[{"content_filter_results":{},"delta":{"content":"Hi"},"finish_reason":null,"index":0}],"id":"c1","model":"gpt-4o-2024-11-20","usage":null}\n\n' +
        'data: {"choices":[],"id":"c1","model":"gpt-4o-2024-11-20","usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}\n\n' +
        'data: [DONE]\n\n',
    );
    expect(events.map((event) => tracker.observe(event))).toEqual(['drop', 'pass', 'usage_only', 'terminal']);
    expect(tracker.usage()).toEqual(plainUsage(9n, 1n));
  });

  it('answers with its own model name, so the first model is always renamed', () => {
    expect(azureOpenaiAdapter.namesItsOwnModel).toBe(true);
  });
});
