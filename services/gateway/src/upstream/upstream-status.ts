import { AppError } from '@tollgate/errors';
import { METERED_SURFACES, type MeteredSurface } from '@tollgate/schemas';
import { listSupportedParameters } from '../request/parameters.ts';
import type { WireProtocol } from '../translation/protocol.ts';
import type { UpstreamResponse } from './client.ts';
import { isRecord, parseJson } from './json-scan.ts';
import { type ProviderRefusal, refusalMessage } from './refusal-messages.ts';
import type { UpstreamAdapter } from './types.ts';

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

/** The cause code of a refusal of our credential under another status (failure-log.ts reads it). */
export const CREDENTIAL_REFUSED = 'credential_refused';

/** How much of an error body is read to recognise the refusal; the rest is dropped unread. */
const MAX_ERROR_BODY_BYTES = 16 * 1024;

export interface ModelNames {
  alias: string;
  upstreamModel: string;
}

/** A short machine word of the provider's (error type or code); anything else is not kept. */
function kindOf(value: unknown): string[] {
  return typeof value === 'string' && /^[a-z_]{1,64}$/.test(value) ? [value] : [];
}

/** The parts of an error body ({error:{type,code,message,param}}, {error}, {message}) used to classify it. */
function refusalOf(status: number, body: unknown): ProviderRefusal {
  const refusal: ProviderRefusal = { status, kinds: [], message: '', param: null };
  if (!isRecord(body)) return refusal;
  const error = body.error;
  if (isRecord(error)) {
    refusal.kinds = [...kindOf(error.type), ...kindOf(error.code)];
    if (typeof error.message === 'string') refusal.message = error.message;
    if (typeof error.param === 'string') refusal.param = error.param;
  } else if (typeof error === 'string') {
    refusal.message = error;
  } else if (typeof body.message === 'string') {
    refusal.message = body.message;
  }
  return refusal;
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

/** The error body as JSON (undefined when unreadable, too large or not JSON). */
async function readErrorBody(response: UpstreamResponse): Promise<unknown> {
  try {
    const text = await readCappedText(response.body, MAX_ERROR_BODY_BYTES);
    return text === null ? undefined : parseJson(text);
  } catch {
    return undefined;
  }
}

/** The surface's own parameters, which a refusal may name; none for a provider's protocol. */
function parametersOf(surface: WireProtocol): Set<string> {
  return (METERED_SURFACES as readonly string[]).includes(surface)
    ? new Set(listSupportedParameters(surface as MeteredSurface))
    : new Set();
}

/** A stream is `text/event-stream`, or the adapter's own framing (Bedrock's event stream). */
function isEventStream(response: UpstreamResponse, contentType = 'text/event-stream'): boolean {
  const type = response.headers['content-type'];
  const value = Array.isArray(type) ? type[0] : type;
  return value?.toLowerCase().startsWith(contentType) === true;
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
  surface: WireProtocol;
  /** The provider's adapter, which may recognise a refusal of its credential in a 4xx body. */
  adapter?: Pick<UpstreamAdapter, 'isCredentialRefusal' | 'streamFraming'>;
  stream: boolean;
}): Promise<UpstreamCheck> {
  const { response } = input;
  const classified = classifyUpstreamStatus(response.status);
  const streamType = input.adapter?.streamFraming?.contentType;
  if (classified === null && (!input.stream || isEventStream(response, streamType))) return { ok: true };
  if (classified?.code === 'upstream_rejected') {
    const body = await readErrorBody(response);
    if (input.adapter?.isCredentialRefusal?.(response.status, body) === true) {
      const cause = Object.assign(new Error('the provider refused its credential'), {
        code: CREDENTIAL_REFUSED,
      });
      return { ok: false, error: new AppError('upstream_unavailable', { cause }), settle: 'release' };
    }
    const message = refusalMessage(
      refusalOf(response.status, body),
      input.names.alias,
      parametersOf(input.surface),
    );
    return { ok: false, error: AppError.upstreamRejected(response.status, { message }), settle: 'release' };
  }
  await readCappedText(response.body, MAX_ERROR_BODY_BYTES).catch(() => null);
  return { ok: false, error: classified ?? new AppError('upstream_invalid_response'), settle: 'release' };
}
