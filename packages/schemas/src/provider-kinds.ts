import type { MeteredSurface, ProviderKind } from './billing.ts';

/**
 * The metered surfaces each provider kind serves upstream: the gateway's adapters and the
 * catalogue's checks both read this one list. count_tokens is answered locally, for any kind.
 */
export const PROVIDER_KIND_SURFACES: Record<ProviderKind, readonly MeteredSurface[]> = {
  anthropic: ['messages'],
  openai: ['chat_completions', 'responses'],
  'azure-openai': ['chat_completions', 'responses'],
  // Gemini's protocol is no metered surface: every call to it is translated.
  gemini: [],
  bedrock: ['messages'],
  // Vertex: Claude models speak messages, Gemini models nothing natively (the gateway's adapter).
  vertex: ['messages'],
};
