import { count, isObject } from '../../fields.ts';
import type { IrUsage } from '../../ir.ts';

/**
 * Gemini's `usageMetadata` as the representation's usage, the one reading of it (the adapter
 * bills from it too). Gemini omits a count that is zero, so only `promptTokenCount` must be there.
 * - input: `promptTokenCount` (which already includes `cachedContentTokenCount`) plus
 *   `toolUsePromptTokenCount` (tool results Gemini fed itself), as Google bills them;
 * - output: `candidatesTokenCount` plus `thoughtsTokenCount`, which Gemini reports outside the
 *   candidates yet bills as output;
 * - cache reads: `cachedContentTokenCount`; Gemini reports no cache writes.
 */
export function decodeGeminiUsage(usage: unknown): IrUsage | null {
  if (!isObject(usage)) return null;
  const prompt = count(usage.promptTokenCount);
  const toolPrompt = optional(usage.toolUsePromptTokenCount);
  const candidates = optional(usage.candidatesTokenCount);
  const thoughts = optional(usage.thoughtsTokenCount);
  const cached = optional(usage.cachedContentTokenCount);
  if (prompt === null || toolPrompt === null || candidates === null || thoughts === null || cached === null)
    return null;
  return {
    input: prompt + toolPrompt,
    output: candidates + thoughts,
    cacheRead: cached,
    cacheWrite: 0,
    reasoning: usage.thoughtsTokenCount === undefined ? null : thoughts,
  };
}

/** An absent count is zero; a present one must be a count. */
function optional(value: unknown): number | null {
  return value === undefined ? 0 : count(value);
}
