import type { ProviderKind, UpstreamAdapter } from '../types.ts';
import { anthropicAdapter } from './anthropic-adapter.ts';
import { azureOpenaiAdapter } from './azure-openai-adapter.ts';
import { bedrockAdapter } from './bedrock-adapter.ts';
import { geminiAdapter } from './gemini-adapter.ts';
import { openaiAdapter } from './openai-adapter.ts';

/** Every provider kind has exactly one adapter; a new kind without one is a compile error. */
const ADAPTERS: Record<ProviderKind, UpstreamAdapter> = {
  anthropic: anthropicAdapter,
  openai: openaiAdapter,
  'azure-openai': azureOpenaiAdapter,
  gemini: geminiAdapter,
  bedrock: bedrockAdapter,
};

export function getAdapter(kind: ProviderKind): UpstreamAdapter {
  return ADAPTERS[kind];
}

export { anthropicAdapter, DEFAULT_ANTHROPIC_VERSION } from './anthropic-adapter.ts';
export { azureOpenaiAdapter } from './azure-openai-adapter.ts';
export { geminiAdapter } from './gemini-adapter.ts';
export { openaiAdapter } from './openai-adapter.ts';
