import { readPlainString } from './json-scan.ts';

const KEY = '"model"';
const COLON = 58;

function skipSpace(text: string, position: number): number {
  let at = position;
  for (;;) {
    const code = text.charCodeAt(at);
    if (code !== 32 && code !== 10 && code !== 13 && code !== 9) return at;
    at++;
  }
}

/**
 * Replaces the upstream model id with the public alias in the `"model": "<id>"` members of a JSON
 * text (a body or an SSE block), without re-serialising it: every other byte stays as the provider
 * sent it. A value counts as the upstream id when it equals it or is a dated snapshot of it
 * (`gpt-4o` answered as `gpt-4o-2024-08-06`). Text inside string values is never touched: a quote
 * there is escaped, so it cannot look like a `"model"` key.
 */
export function createModelRewriter(upstreamModel: string, alias: string): (text: string) => string {
  if (upstreamModel === alias) return (text) => text;
  const replacement = JSON.stringify(alias);
  const snapshotPrefix = `${upstreamModel}-`;
  return (text) => {
    let at = text.indexOf(KEY);
    if (at === -1) return text;
    let out = '';
    let copied = 0;
    while (at !== -1) {
      let position = skipSpace(text, at + KEY.length);
      if (text.charCodeAt(position) === COLON) {
        position = skipSpace(text, position + 1);
        const value = readPlainString(text, position);
        if (value && (value.value === upstreamModel || value.value.startsWith(snapshotPrefix))) {
          out += text.slice(copied, position) + replacement;
          copied = value.end;
          at = text.indexOf(KEY, value.end);
          continue;
        }
      }
      at = text.indexOf(KEY, at + KEY.length);
    }
    return copied === 0 ? text : out + text.slice(copied);
  };
}
