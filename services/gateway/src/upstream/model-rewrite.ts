import { findKeyValue, readPlainString } from './json-scan.ts';

const KEY = '"model"';

export interface ModelRewriteOptions {
  /**
   * Stop after the first replacement. An SSE event carries the model once
   * (message_start.message.model, chunk.model, response.model), so the relay skips scanning the
   * rest of each event.
   */
  firstOnly?: boolean;
  /**
   * Replace the first `model` value whatever it is (implies firstOnly): for providers that answer
   * with a model name of their own. The first `model` member is the answer's own in every protocol
   * (Anthropic writes it before the content; chat and Responses content holds no such key).
   */
  anyValue?: boolean;
}

/**
 * Replaces the upstream model id with the public alias in the `"model": "<id>"` members of a JSON
 * text (a body or an SSE block), without re-serialising it: every other byte stays as the provider
 * sent it. A value counts as the upstream id when it equals it or is a dated snapshot of it
 * (`gpt-4o` answered as `gpt-4o-2024-08-06`). Text inside string values is never touched: a quote
 * there is escaped, so it cannot look like a `"model"` key.
 */
export function createModelRewriter(
  upstreamModel: string,
  alias: string,
  options: ModelRewriteOptions = {},
): (text: string) => string {
  const anyValue = options.anyValue === true;
  if (upstreamModel === alias && !anyValue) return (text) => text;
  const replacement = JSON.stringify(alias);
  const snapshotPrefix = `${upstreamModel}-`;
  const firstOnly = options.firstOnly === true || anyValue;
  return (text) => {
    let out = '';
    let copied = 0;
    let from = 0;
    for (;;) {
      const position = findKeyValue(text, KEY, from);
      if (position === -1) break;
      const value = readPlainString(text, position);
      if (value && (anyValue || value.value === upstreamModel || value.value.startsWith(snapshotPrefix))) {
        out += text.slice(copied, position) + replacement;
        copied = value.end;
        if (firstOnly) break;
      }
      from = value ? value.end : position;
    }
    return copied === 0 ? text : out + text.slice(copied);
  };
}
