import { AppError } from '@tollgate/errors';
import type { UpstreamResponse } from './client.ts';
import { isRecord, parseJson } from './json-scan.ts';

/**
 * The provider's status as the client's error, or null for 2xx (docs/behaviour.md, Metering):
 * - 4xx -> upstream_rejected with the provider's status (the client can fix its request), except
 *   401/403/407 (our provider credential or proxy is wrong) and 408/429 (the provider is slow or
 *   over its limit), which the client cannot fix: upstream_unavailable.
 * - 5xx (529 "overloaded" included), 3xx (we follow no redirects) -> upstream_unavailable.
 */
export function classifyUpstreamStatus(status: number): AppError | null {
  if (status >= 200 && status < 300) return null;
  if (status >= 400 && status < 500 && ![401, 403, 407, 408, 429].includes(status)) {
    return AppError.upstreamRejected(status);
  }
  return new AppError('upstream_unavailable');
}

/** How much of an error body is read for its message; the rest is dropped unread. */
const MAX_ERROR_BODY_BYTES = 16 * 1024;
/** Longest provider message passed on to the client. */
const MAX_PROVIDER_MESSAGE_CHARS = 300;

export interface ModelNames {
  alias: string;
  upstreamModel: string;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Words and shapes that would tell the client who the provider is or where it lives. */
const REDACTIONS: Array<[RegExp, string]> = [
  [/\bhttps?:\/\/\S+/gi, '[link]'],
  [/\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b/g, '[host]'],
  [/\b(?:[a-z0-9-]+\.)+(?:com|ai|io|net|org|dev|cloud|internal|local|localhost)\b(?::\d+)?/gi, '[host]'],
  [/\b(?:sk|key|tok|api)[-_][A-Za-z0-9_-]{6,}/g, '[redacted]'],
  [/\breq_[A-Za-z0-9]+/g, '[request]'],
  [
    /\b(?:anthropic|openai|azure|bedrock|vertex(?: ai)?|vllm|ollama|llama\.cpp|claude|chatgpt|gpt-[\w.-]+)\b/gi,
    'provider',
  ],
];

/**
 * The provider's own explanation of a refusal, made safe to show: the upstream model id becomes
 * the alias; links, hosts, key-like strings, request ids and provider or product names are
 * removed; the length is capped. Kept because "prompt is too long" or "messages: roles must
 * alternate" is what the client needs to fix its request. Null when nothing useful is left.
 */
export function sanitizeProviderMessage(message: string, names: ModelNames): string | null {
  // The id is swapped for a placeholder first, so the name redactions cannot touch the alias.
  const placeholder = '\u0000';
  let text = message
    .replaceAll(placeholder, '')
    .replace(new RegExp(`${escapeRegExp(names.upstreamModel)}(?:-[\\w.:@-]*)?`, 'g'), placeholder);
  for (const [pattern, replacement] of REDACTIONS) text = text.replace(pattern, replacement);
  text = text.replace(/\s+/g, ' ').trim().replaceAll(placeholder, names.alias);
  if (text.length > MAX_PROVIDER_MESSAGE_CHARS) text = `${text.slice(0, MAX_PROVIDER_MESSAGE_CHARS - 1)}…`;
  return /[A-Za-z]{3}/.test(text.replace(/\[(?:link|host|redacted|request)\]/g, '')) ? text : null;
}

/** The message of an error body in the shapes providers use ({error:{message}}, {error}, {message}). */
function providerMessage(body: unknown): string | null {
  if (!isRecord(body)) return null;
  const error = body.error;
  if (isRecord(error) && typeof error.message === 'string') return error.message;
  if (typeof error === 'string') return error;
  if (typeof body.message === 'string') return body.message;
  return null;
}

/** Reads at most `maxBytes` of a body; drops the connection rather than read a huge one. */
export async function readCappedText(body: AsyncIterable<Buffer>, maxBytes: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) return null; // leaving the loop destroys the body
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
}

async function readProviderMessage(response: UpstreamResponse): Promise<string | null> {
  try {
    const text = await readCappedText(response.body, MAX_ERROR_BODY_BYTES);
    return text === null ? null : providerMessage(parseJson(text));
  } catch {
    return null;
  }
}

function isEventStream(response: UpstreamResponse): boolean {
  const type = response.headers['content-type'];
  const value = Array.isArray(type) ? type[0] : type;
  return value?.toLowerCase().startsWith('text/event-stream') === true;
}

export type UpstreamCheck = { ok: true } | { ok: false; error: AppError; settle: 'release' };

/**
 * Decides, from status and headers, whether a response can be relayed. On refusal the body is
 * consumed (read for its message when the client may see it, else dropped) and the reservation
 * is to be released: nothing valid was received. Streams must be `text/event-stream`; a server
 * that answered a streaming call with anything else is an invalid response.
 */
export async function checkUpstreamResponse(input: {
  response: UpstreamResponse;
  names: ModelNames;
  stream: boolean;
}): Promise<UpstreamCheck> {
  const { response } = input;
  const classified = classifyUpstreamStatus(response.status);
  if (classified === null && (!input.stream || isEventStream(response))) return { ok: true };
  if (classified?.code === 'upstream_rejected') {
    const raw = await readProviderMessage(response);
    const clean = raw === null ? null : sanitizeProviderMessage(raw, input.names);
    const message = clean
      ? `The model provider refused the request: ${clean.replace(/\.$/, '')}. Nothing was charged.`
      : undefined;
    return { ok: false, error: AppError.upstreamRejected(response.status, { message }), settle: 'release' };
  }
  await readCappedText(response.body, MAX_ERROR_BODY_BYTES).catch(() => null);
  return { ok: false, error: classified ?? new AppError('upstream_invalid_response'), settle: 'release' };
}
