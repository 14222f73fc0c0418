import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import type { Surface } from '../request/surface.ts';
import { collectRequestText } from './collect-text.ts';
import { withMargin } from './media-tokens.ts';

/*
 * Local input-token estimate with the o200k_base BPE tokenizer (gpt-tokenizer). It serves the
 * count_tokens endpoint and the reservation estimate of every metered request, so its cost is
 * bounded whatever the body size. Measured on this machine (see measure-count-tokens.ts), exact BPE
 * costs about 0.05 us per character on repetitive English, 0.3 us on varied text and 0.6 us on
 * base64-like text: a 500 KB body would block the event loop for 25-300 ms. So:
 * - up to EXACT_LIMIT_CHARS of text in the request, every character is tokenised;
 * - above it, SAMPLE_WINDOWS evenly spaced windows of SAMPLE_WINDOW_CHARS are tokenised and their
 *   tokens-per-character ratio is applied to the whole text. Tokeniser work stays under
 *   EXACT_LIMIT_CHARS characters per request; the estimate stays within a few per cent on
 *   homogeneous text. Billing never uses it: settlement charges what the model reports.
 * Segments are joined with a newline before counting, standing in for the boundaries between them.
 */

export const EXACT_LIMIT_CHARS = 16_384;
export const SAMPLE_WINDOWS = 8;
export const SAMPLE_WINDOW_CHARS = 1_024;

// Text that looks like a special token (<|endoftext|>) is ordinary text in a request.
const ORDINARY_TEXT = { disallowedSpecial: new Set<string>() };

function countExactly(text: string): number {
  return text.length === 0 ? 0 : countTokens(text, ORDINARY_TEXT);
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** Tokens of a long text, extrapolated from evenly spaced windows. */
function countBySampling(text: string): number {
  const span = text.length - SAMPLE_WINDOW_CHARS;
  let sampledChars = 0;
  let sampledTokens = 0;
  for (let window = 0; window < SAMPLE_WINDOWS; window += 1) {
    let start = Math.floor((span * window) / (SAMPLE_WINDOWS - 1));
    // Never start in the middle of a surrogate pair.
    if (isLowSurrogate(text.charCodeAt(start))) start += 1;
    const sample = text.slice(start, start + SAMPLE_WINDOW_CHARS);
    sampledChars += sample.length;
    sampledTokens += countExactly(sample);
  }
  return Math.ceil((sampledTokens / sampledChars) * text.length);
}

/** Tokens of a text: exact when short, sampled when long. */
export function countTextTokens(text: string): number {
  return text.length <= EXACT_LIMIT_CHARS ? countExactly(text) : countBySampling(text);
}

/**
 * Estimates the input tokens of an inference request: system prompt or instructions, the text of
 * every message and content part, tool definitions (name, description, JSON schema as JSON text),
 * tool calls and tool results, overheads per request, message and tool (and the provider's tool
 * system prompt), images and documents by the provider's rules (media-tokens.ts) and a fixed
 * estimate per audio part (text-collector.ts).
 */
export function estimateInputTokens(surface: Surface, body: Record<string, unknown>): number {
  const { segments, fixedTokens } = collectRequestText(surface, body);
  return fixedTokens + countTextTokens(segments.join('\n'));
}

/**
 * The input tokens a reservation covers: the estimate plus the configured safety margin, so a call
 * rarely uses more than it reserved (usage beyond the reservation is written off).
 */
export function estimateReservedInputTokens(
  surface: Surface,
  body: Record<string, unknown>,
  marginPercent: number,
): number {
  return withMargin(estimateInputTokens(surface, body), marginPercent);
}
