import { ERROR_CATALOG } from '@tollgate/errors';
import type { FinishItem, FinishResult, ReserveItem, ReserveResult } from '@tollgate/schemas';
import { lookupHashHexOf } from '../api-keys/key-crypto.ts';
import type { FinishRow, FinishRowResult, ReserveRow, ReserveRowResult } from './engine.repository.ts';

/** The internal API's items as the SQL functions take them, and their rows as the API answers. */

export function reserveRowOf(
  settings: { keyPepper: string; coverPercent: number },
  item: ReserveItem,
): ReserveRow {
  return {
    reservation_id: item.reservationId,
    lookup_hash: lookupHashHexOf(settings.keyPepper, item.keyDigest),
    alias: item.alias,
    surface: item.surface,
    estimate_input: item.estimate.inputTokens,
    estimate_output: item.estimate.outputTokens,
    cover_percent: settings.coverPercent,
  };
}

/** A Postgres reservation checks no limits: `limited` is false, the gateway applies them. */
export function reserveResultOf(result: ReserveRowResult): ReserveResult {
  return result.ok
    ? {
        ok: true,
        reservationId: result.reservation_id,
        keyId: result.key_id,
        accountId: result.account_id,
        providerId: result.provider_id,
        upstreamModel: result.upstream_model,
        reserved: { tokens: result.reserved_tokens, credits: result.reserved_credits },
        limited: false,
      }
    : {
        ok: false,
        reservationId: result.reservation_id,
        code: result.code,
        message: ERROR_CATALOG[result.code].message,
      };
}

export function finishRowOfItem(item: FinishItem): FinishRow {
  return {
    action: item.action,
    reservation_id: item.reservationId,
    key_id: item.keyId,
    account_id: item.accountId,
    alias: item.alias,
    surface: item.surface,
    outcome: item.outcome,
    http_status: item.httpStatus,
    occurred_at: item.occurredAt,
    ...(item.action === 'settle'
      ? {
          input_tokens: item.usage.inputTokens,
          output_tokens: item.usage.outputTokens,
          cache_read_tokens: item.usage.cacheReadTokens ?? '0',
          cache_write_tokens: item.usage.cacheWriteTokens ?? '0',
          cache_write_1h_tokens: item.usage.cacheWrite1hTokens ?? '0',
        }
      : {}),
    ...(item.route
      ? {
          route: {
            provider_id: item.route.providerId,
            upstream_model: item.route.upstreamModel,
            attempts: item.route.attempts,
          },
        }
      : {}),
  };
}

export function finishResultOf(result: FinishRowResult): FinishResult {
  return {
    reservationId: result.reservation_id,
    status: result.status,
    replay: result.replay,
    charged: { tokens: result.charged_tokens, credits: result.charged_credits },
    writtenOff: { tokens: result.written_off_tokens, credits: result.written_off_credits },
  };
}
