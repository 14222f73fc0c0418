import { AppError } from '@tollgate/errors';
import type { WireProtocol } from '../translation/protocol.ts';
import type { UpstreamResponse } from './client.ts';
import { isRecord, parseJson } from './json-scan.ts';
import { createModelRewriter } from './model-rewrite.ts';
import type { UpstreamAdapter, UsageFigures } from './types.ts';
import { checkUpstreamResponse, readCappedText } from './upstream-status.ts';

/**
 * A non-streamed answer larger than this is treated as invalid rather than held in memory.
 * The largest real answers (hundreds of thousands of output tokens) stay far below it.
 */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

/** What the reservation becomes when the relay fails: released (nothing valid) or held. */
export type SettleOnFailure = 'release' | 'hold';

export type NonStreamingRelay =
  | { ok: true; status: number; contentType: string; body: string; usage: UsageFigures }
  | { ok: false; error: AppError; settle: SettleOnFailure };

export interface RelayNonStreamingInput {
  response: UpstreamResponse;
  /** The upstream's protocol: how its body and usage are read. */
  surface: WireProtocol;
  adapter: UpstreamAdapter;
  alias: string;
  upstreamModel: string;
  /**
   * Translated calls: the answer as the caller's protocol writes it (translation/); throws
   * upstream_invalid_response for an answer it cannot read. Native calls: absent, the body is
   * relayed as sent with only the model renamed.
   */
  render?: (body: Record<string, unknown>) => string;
}

function jsonContentType(response: UpstreamResponse): string {
  const type = response.headers['content-type'];
  const value = Array.isArray(type) ? type[0] : type;
  return value?.toLowerCase().startsWith('application/json') ? value : 'application/json';
}

/**
 * Reads a whole non-streamed answer and decides what the client gets (docs/behaviour.md, Metering):
 * - provider refused or unreachable: the status's error, reservation released;
 * - body cut or unreadable: upstream_unavailable, released;
 * - 2xx whose body is not a JSON object: upstream_invalid_response, released;
 * - 2xx JSON without usage: billing_settlement_pending, held for reconciliation;
 * - else the body exactly as sent with the upstream model id replaced by the alias, and its usage.
 * Only the content type goes back; provider headers never reach the client.
 */
export async function relayNonStreaming(input: RelayNonStreamingInput): Promise<NonStreamingRelay> {
  const { response, surface, adapter, alias, upstreamModel } = input;
  const checked = await checkUpstreamResponse({
    response,
    names: { alias, upstreamModel },
    surface,
    adapter,
    stream: false,
  });
  if (!checked.ok) return checked;
  let text: string | null;
  try {
    text = await readCappedText(response.body, MAX_BODY_BYTES);
  } catch (error) {
    return { ok: false, error: new AppError('upstream_unavailable', { cause: error }), settle: 'release' };
  }
  const parsed = text === null ? undefined : parseJson(text);
  if (text === null || !isRecord(parsed)) {
    return { ok: false, error: new AppError('upstream_invalid_response'), settle: 'release' };
  }
  const usage = adapter.extractUsage(surface, parsed);
  if (usage === null) return { ok: false, error: new AppError('billing_settlement_pending'), settle: 'hold' };
  let body: string;
  try {
    body = input.render
      ? input.render(parsed)
      : createModelRewriter(upstreamModel, alias, { anyValue: adapter.namesItsOwnModel === true })(text);
  } catch (error) {
    // The client gets no answer, so nothing is charged as used.
    return {
      ok: false,
      error: error instanceof AppError ? error : new AppError('upstream_invalid_response'),
      settle: 'release',
    };
  }
  return {
    ok: true,
    status: response.status,
    contentType: input.render ? 'application/json' : jsonContentType(response),
    body,
    usage,
  };
}
