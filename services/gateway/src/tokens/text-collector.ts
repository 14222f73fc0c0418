/*
 * What the body walkers (messages-text.ts, openai-text.ts) collect from a request: text segments
 * for the tokenizer, plus token counts for parts the tokenizer cannot see (images and documents by
 * the providers' rules in media-tokens.ts, audio at a fixed estimate). The walkers never throw on shapes they do not expect: an unknown part is
 * counted by its JSON text, so anything new a client sends still weighs in the estimate.
 */

/** Per message or input item: role markers and separators around its content. */
export const MESSAGE_OVERHEAD_TOKENS = 4;
/** Per request: the priming of the reply. */
export const REQUEST_OVERHEAD_TOKENS = 3;
/** Per tool definition: the wrapper the provider renders around name, description and schema. */
export const TOOL_OVERHEAD_TOKENS = 8;
/** A value too deeply nested to serialise is weighed like a document of a few pages. */
export const DOCUMENT_TOKENS = 3_000;
/** An audio input part. */
export const AUDIO_TOKENS = 1_000;
/** Encrypted reasoning carried between turns: roughly one token per four characters of it. */
export const ENCRYPTED_CHARS_PER_TOKEN = 4;

export interface CollectedText {
  segments: string[];
  fixedTokens: number;
}

export type Json = Record<string, unknown>;

export function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

export function createCollector() {
  const collected: CollectedText = { segments: [], fixedTokens: 0 };
  const text = (value: unknown) => {
    if (typeof value === 'string' && value.length > 0) collected.segments.push(value);
  };
  const json = (value: unknown) => {
    if (value === undefined || value === null) return;
    try {
      text(typeof value === 'string' ? value : JSON.stringify(value));
    } catch {
      // Too deeply nested to serialise: weigh it like a document rather than not at all.
      collected.fixedTokens += DOCUMENT_TOKENS;
    }
  };
  const fixed = (tokens: number) => {
    collected.fixedTokens += tokens;
  };
  return { collected, text, json, fixed };
}
export type Collector = ReturnType<typeof createCollector>;
