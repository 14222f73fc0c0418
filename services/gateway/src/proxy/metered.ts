import { randomUUID } from 'node:crypto';
import { AppError, toAppError } from '@tollgate/errors';
import type { MeteredSurface, ReserveResult } from '@tollgate/schemas';
import type { GatewayDependencies } from '../deps.ts';
import {
  assertSupportedParameters,
  estimateReservedInputTokens,
  readTopLevelValue,
  resolveMaxOutput,
  setTopLevelFields,
  withIncludeUsage,
} from '../request/index.ts';
import { authenticate } from './authenticate.ts';
import { createReservationFinisher, outcomeOf } from './finish.ts';
import { forwardToUpstream } from './forward.ts';
import { takeLimits } from './limits.ts';
import { readRequestJson } from './request-body.ts';
import type { RequestLog } from './request-log.ts';
import { selectAlias, selectPlan } from './select-alias.ts';

/**
 * One metered call on /v1/messages, /v1/chat/completions or /v1/responses (ARCHITECTURE.md, "One
 * inference request"): every refusal happens before the reservation, and once reserved, every
 * path finishes the reservation exactly once.
 */
export async function handleMetered(
  deps: GatewayDependencies,
  request: Request,
  surface: MeteredSurface,
  log: RequestLog,
): Promise<Response> {
  const { digest, key } = await authenticate(deps, request);
  log.keyId = key.keyId;
  const { text, body } = await readRequestJson(deps, key, request);
  await deps.catalog.ready();
  const alias = selectAlias(deps.catalog, key, body.model, surface);
  log.alias = alias.alias;
  assertSupportedParameters(surface, body);
  const plan = selectPlan(key, alias.alias);
  const maxOutput = resolveMaxOutput(surface, body, {
    keyMax: key.limits.maxOutputTokens,
    planMax: plan?.maxOutputTokens ?? null,
    aliasMax: alias.maxOutputTokens,
    aliasDefault: alias.defaultMaxOutputTokens,
  });
  const stream = body.stream === true;

  const lease = await takeLimits(deps, key, plan, { holdsSlot: true });
  let leaseOwnedByStream = false;

  try {
    const reservationId = randomUUID();
    let reservation: ReserveResult;
    try {
      reservation = await deps.billing.reserve({
        reservationId,
        keyDigest: digest,
        alias: alias.alias,
        surface,
        estimate: {
          inputTokens: String(
            estimateReservedInputTokens(surface, body, deps.config.inputEstimateMarginPercent),
          ),
          outputTokens: String(maxOutput.value),
        },
      });
    } catch (error) {
      throw error instanceof AppError ? error : new AppError('billing_unavailable', { cause: error });
    }
    if (!reservation.ok) throw new AppError(reservation.code);
    log.reservationId = reservationId;

    const finisher = createReservationFinisher(
      { reservationId, keyId: key.keyId, accountId: key.accountId, alias: alias.alias, surface },
      deps.billing.finish,
    );
    const fields: Record<string, string> = {
      model: JSON.stringify(reservation.upstreamModel),
      ...maxOutput.edits,
    };
    const clientAskedForUsage = isIncludeUsage(body.stream_options);
    if (surface === 'chat_completions' && stream) {
      fields.stream_options = withIncludeUsage(readTopLevelValue(text, 'stream_options'));
    }
    try {
      const result = await forwardToUpstream(deps, {
        request,
        surface,
        stream,
        alias: alias.alias,
        providerId: reservation.providerId,
        upstreamModel: reservation.upstreamModel,
        body: setTopLevelFields(text, fields),
        clientAskedForUsage,
        finisher,
        log,
      });
      if (result.streamDone) {
        leaseOwnedByStream = true;
        result.streamDone.finally(() => lease?.release());
      }
      return result.response;
    } catch (error) {
      // Anything that escaped before the answer was decided: nothing valid reached the client.
      const appError = toAppError(error);
      const disconnected = request.signal.aborted;
      finisher.release(
        disconnected ? 'client_disconnected' : outcomeOf(appError),
        disconnected ? 499 : appError.status,
      );
      throw error;
    }
  } finally {
    if (!leaseOwnedByStream) await lease?.release();
  }
}

function isIncludeUsage(options: unknown): boolean {
  return (
    typeof options === 'object' &&
    options !== null &&
    (options as { include_usage?: unknown }).include_usage === true
  );
}
