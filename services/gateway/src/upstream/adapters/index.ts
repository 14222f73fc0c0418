import type { ProviderKind, UpstreamAdapter } from '../types.ts';
import { anthropicAdapter } from './anthropic-adapter.ts';
import { azureOpenaiAdapter } from './azure-openai-adapter.ts';
import { bedrockAdapter } from './bedrock-adapter.ts';
import { geminiAdapter } from './gemini-adapter.ts';
import { openaiAdapter } from './openai-adapter.ts';
import { vertexAdapterFor } from './vertex-adapter.ts';

/**
 * Every provider kind has exactly one adapter, or one per publisher of the model (Vertex serves
 * Claude and Gemini in their own protocols); a new kind without one is a compile error.
 */
const ADAPTERS: Record<ProviderKind, UpstreamAdapter | ((upstreamModel: string) => UpstreamAdapter)> = {
  anthropic: anthropicAdapter,
  openai: openaiAdapter,
  'azure-openai': azureOpenaiAdapter,
  gemini: geminiAdapter,
  bedrock: bedrockAdapter,
  vertex: vertexAdapterFor,
};

/** The adapter of a provider kind for a model (the model decides only for Vertex). */
export function getAdapter(kind: ProviderKind, upstreamModel = ''): UpstreamAdapter {
  const adapter = ADAPTERS[kind];
  return typeof adapter === 'function' ? adapter(upstreamModel) : adapter;
}

export { anthropicAdapter, DEFAULT_ANTHROPIC_VERSION } from './anthropic-adapter.ts';
export { azureOpenaiAdapter } from './azure-openai-adapter.ts';
export { geminiAdapter } from './gemini-adapter.ts';
export { openaiAdapter } from './openai-adapter.ts';
