import { setTimeout as sleep } from 'node:timers/promises';
import { AppError, toAppError } from '@tollgate/errors';
import {
  type Amounts,
  chargeWithinLegs,
  type FinishItem,
  type GatewayAlias,
  type MeteredSurface,
  type PlanCeilings,
  type RequestBudget,
  type ReservedLeg,
  type ReserveItem,
  type ReserveResult,
  type ResolvedKey,
} from '@tollgate/schemas';
import { mayHaveReserved } from '../billing/reserve-batcher.ts';
import type { GatewayDependencies } from '../deps.ts';
import type { Lease } from '../limiter/limiter.ts';
import type { InboundRequest } from '../request/inbound.ts';
import {
  assertSupportedParameters,
  checkCostParameters,
  estimateReservedInputTokens,
  readTopLevelValue,
  resolveMaxOutput,
  setTopLevelFields,
  withIncludeUsage,
} from '../request/index.ts';
import { PROBE } from '../routing/breakers.ts';
import { affinityKey, conversationOf } from '../routing/conversation.ts';
import { withoutReasoningProofs } from '../routing/proofs.ts';
import { providerOfKey, READY, type Standing, upstreamKey } from '../routing/upstream-order.ts';
import { candidatesFor, upstreamsFor } from '../routing/upstreams-for.ts';
import { authenticate } from './authenticate.ts';
import { type Decision, decide, finishItemOf, type ReservationContext } from './finish.ts';
import { type Forwarded, forwardToUpstream } from './forward.ts';
import { budgetHeaders, countRefusal, limitError, reserveLimitsOf, takeLimits } from './limits.ts';
import { costMembers, type Receipt, UNCONFIRMED, withCostInBody, withCostInStreamEnd } from './receipt.ts';
import type { Reply } from './reply.ts';
import { readRequestJson } from './request-body.ts';
import type { RequestLog } from './request-log.ts';
import { timeOrderedUuid } from './reservation-id.ts';
import { selectAlias, selectPlan } from './select-alias.ts';
import { servesNatively, translationFor } from './translation-plan.ts';

/**
 * One metered call on /v1/messages, /v1/chat/completions or /v1/responses (docs/architecture.md, "One
 * metered request"): every refusal happens before the reservation, and a call refused there
 * still counts against the key's request ceiling. Once reserved, the call's one decision (from
 * forwardToUpstream) is sent in exactly one place, which also frees the concurrency slot; a
 * failure before that releases the reservation at once.
 */
export async function handleMetered(
  deps: GatewayDependencies,
  request: InboundRequest,
  surface: MeteredSurface,
  log: RequestLog,
): Promise<Reply> {
  const { digest, key } = await authenticate(deps, request);
  log.keyId = key.keyId;
  const { text, body, alias, plan, maxOutput, cost, native } = await checkRequest(
    deps,
    request,
    surface,
    key,
    log,
  ).catch((error: unknown) => countRefusal(deps, key, error));
  const stream = body.stream === true;
  const translation = native ? null : translationFor(deps, surface, alias, body, maxOutput.value);
  const affinity = affinityOf(deps, key, alias, surface, body, request);

  // With Redis the control plane checks the limits in the step that reserves (and, with its hot
  // tier, owns the slot); without, here first. A gateway without its Redis refuses all the same.
  const deferred = deps.limiter.shared !== null;
  if (deferred && !(await deps.limiter.reachable())) throw new AppError('rate_limiter_unavailable');
  const taken = deferred ? null : await takeLimits(deps, key, plan, { holdsSlot: true });
  let lease = taken?.lease ?? null;
  let budget = taken?.budget;
  /** Set once the reservation is granted: until the call's end owns it, this function releases it. */
  let context: ReservationContext | null = null;
  /** Set once the call's end owns the reservation and the lease. */
  let ended: Promise<void> | null = null;
  /** The control plane took the slot with the reservation: finishing the reservation frees it. */
  let slotAtControlPlane = false;
  try {
    const estimate = {
      inputTokens: String(estimateReservedInputTokens(surface, body, deps.config.inputEstimateMarginPercent)),
      // The maximum output is per choice: the provider bills every choice's.
      outputTokens: String(maxOutput.value * cost.choices),
    };
    const { reservationId, reservation } = await reserve(deps, key, {
      keyDigest: digest,
      keyId: key.keyId,
      accountId: key.accountId,
      alias: alias.alias,
      surface,
      estimate,
      ...(deferred ? { limits: reserveLimitsOf(key, plan) } : {}),
      ...(affinity?.record ? { affinity: affinity.record } : {}),
    });
    log.reservationId = reservationId;
    // The request id the caller gets (x-request-id) names the call's receipt (GET /v1/key/usage/{id}).
    log.requestId = reservationId;
    context = { reservationId, keyId: key.keyId, accountId: key.accountId, alias: alias.alias, surface };
    if (deferred) ({ lease, budget } = await leaseOf(deps, key, plan, reservationId, reservation));
    slotAtControlPlane = deferred && reservation.limited;

    const clientAskedForUsage = isIncludeUsage(body.stream_options);
    // A settled answer that shows usage shows its cost too (docs/receipts.md): the settlement's
    // answer is awaited (bounded) before the end of the answer is written.
    const showsUsage = surface !== 'chat_completions' || !stream || clientAskedForUsage;
    let toldReceipt: (receipt: Promise<Receipt> | null) => void = () => {};
    const receipt = new Promise<Promise<Receipt> | null>((resolve) => {
      toldReceipt = resolve;
    });
    const pinned = affinity ? await pinnedOf(deps, affinity, reservation) : null;
    const candidates = candidatesFor(deps, {
      alias,
      first: { providerId: reservation.providerId, upstreamModel: reservation.upstreamModel },
      surface,
      translation,
    });
    // Only where a cool-down ended: one call across all gateways carries the upstream's probe.
    const claiming = deps.breakers.claimProbes(candidates);
    const probes = claiming ? await claiming : null;
    const forwarded = await forwardToUpstream(deps, {
      request,
      surface,
      stream,
      alias: alias.alias,
      conversationProvider: pinned === null ? null : providerOfKey(pinned),
      maxUpstreams: deps.config.routing.maxAttempts,
      upstreams: upstreamsFor(candidates, {
        standingOf: (target) =>
          probes?.has(upstreamKey(target))
            ? PROBE
            : (deps.breakers.standing(target) ?? (deps.cooldowns.isCooling(target) ? COOLING : READY)),
        // A claimed probe goes first, even before the conversation's upstream: it must be sent.
        preferred: probes?.size ? null : pinned,
      }),
      body: translation
        ? null
        : (upstreamModel, dropProofs) =>
            nativeBody(
              text,
              surface,
              stream,
              upstreamModel,
              maxOutput.edits,
              dropProofs ? withoutReasoningProofs(surface, body) : null,
            ),
      translation,
      clientAskedForUsage,
      ...(stream && showsUsage
        ? {
            closing: streamClosing(receipt, reservationId, surface),
          }
        : {}),
      log,
    });
    // The conversation's next turn goes where this one was answered (docs/routing.md); the read
    // renewed the record, so only a move is written.
    if (affinity && forwarded.route && 'answer' in forwarded.reply) {
      const served = upstreamKey(forwarded.route);
      if (served !== pinned) deps.affinity.set(affinity.key, served);
    }
    // The one place a reservation is finished: one decision, then the slot is freed.
    ended = finishWhenDecided(deps, context, forwarded, lease, {
      legs: reservation.legs ?? [],
      slotAtControlPlane,
      routed: alias.upstreams.length > 1,
      showsUsage,
      toldReceipt,
    });
    // A non-streamed answer leaves only once its slot is free, so the client's next call cannot
    // find this one in flight.
    if (!forwarded.streaming) await ended;
    if ('error' in forwarded.reply) throw forwarded.reply.error;
    let answer = forwarded.reply.answer;
    if (!forwarded.streaming && typeof answer.body === 'string') {
      const pending = await receipt;
      if (pending !== null) {
        answer = { ...answer, body: withCostInBody(answer.body, costMembers(await pending, reservationId)) };
      }
    }
    return budget ? { ...answer, headers: { ...answer.headers, ...budgetHeaders(budget) } } : answer;
  } catch (error) {
    // Failed after the reservation and before the upstream call (a refused slot, a fault): nothing
    // was produced, so the reservation is released now rather than left to the reconciler.
    if (context && !ended) {
      const item = finishItemOf(context, releaseOf(error));
      if (slotAtControlPlane) await receiptOf(deps, item);
      else deps.billing.finish(item);
    }
    throw error;
  } finally {
    if (!ended) await lease?.release();
  }
}

/**
 * Finishes the reservation with the call's one decision (its receipt told to a caller that shows
 * usage), then frees the slot: here, or, when the control plane holds it, by that finish, which
 * the answer then waits for (bounded by the receipt wait) so that the client's next call finds it
 * free (docs/decisions/one-owner-of-the-slot.md). This and streamClosing are apart from handleMetered so that a
 * stream keeps only what they take for its whole life: a closure made there would keep its whole
 * scope, the request's text and parsed body among it.
 */
function finishWhenDecided(
  deps: GatewayDependencies,
  context: ReservationContext,
  forwarded: Forwarded,
  lease: Lease | null,
  options: {
    /** The reservation's legs, when the control plane told them (a cost within them is known now). */
    legs: readonly ReservedLeg[];
    slotAtControlPlane: boolean;
    routed: boolean;
    showsUsage: boolean;
    toldReceipt: (receipt: Promise<Receipt> | null) => void;
  },
): Promise<void> {
  const { decision, route } = forwarded;
  const { showsUsage, toldReceipt } = options;
  return decision
    .then((decided: Decision) => {
      // Which upstream served is recorded only where there was a choice (docs/routing.md).
      const item = finishItemOf(context, decided, options.routed ? route : null);
      void lease?.release();
      if (showsUsage && decided.action === 'settle' && decided.outcome === 'ok') {
        // Usage within the reservation costs what its legs say (R9): told now, settled with the
        // next batch. Beyond them only the settlement knows; its answer is awaited, and that wait
        // covers the slot's release.
        const charged = item.action === 'settle' ? chargeWithinLegs(options.legs, item.usage) : null;
        if (charged) {
          deps.billing.finish(item);
          toldReceipt(Promise.resolve(withinReservation(context.reservationId, charged)));
        } else toldReceipt(receiptOf(deps, item));
      } else if (options.slotAtControlPlane) {
        toldReceipt(null);
        return receiptOf(deps, item).then(() => {});
      } else {
        deps.billing.finish(item);
        toldReceipt(null);
      }
    })
    .catch((error: unknown) => {
      // Never expected (enqueue and release do not throw); never an unhandled rejection either.
      deps.logger.error({ err: error, reservationId: context.reservationId }, 'finishing a call failed');
      toldReceipt(null);
    });
}

/** A stream's end with its receipt in it, once the settlement's answer (or its wait) is known. */
function streamClosing(
  receipt: Promise<Promise<Receipt> | null>,
  reservationId: string,
  surface: MeteredSurface,
): Promise<((end: string) => string) | null> {
  return receipt.then(async (pending) => {
    if (pending === null) return null;
    const members = costMembers(await pending, reservationId);
    return (end: string) => withCostInStreamEnd(surface, end, members);
  });
}

/** What a metered call is, once its request passed every check that needs no reservation. */
async function checkRequest(
  deps: GatewayDependencies,
  request: InboundRequest,
  surface: MeteredSurface,
  key: ResolvedKey,
  log: RequestLog,
) {
  const { text, body } = await readRequestJson(deps, key, request);
  await deps.catalog.ready();
  const alias = selectAlias(deps.catalog, key, body.model, surface);
  log.alias = alias.alias;
  assertSupportedParameters(surface, body);
  const native = servesNatively(deps, surface, alias);
  const cost = checkCostParameters(surface, body, request.headers, deps.config.costParameters, {
    betasReachUpstream: native,
  });
  const plan = selectPlan(key, alias.alias);
  const maxOutput = resolveMaxOutput(surface, body, {
    keyMax: key.limits.maxOutputTokens,
    planMax: plan?.maxOutputTokens ?? null,
    aliasMax: alias.maxOutputTokens,
    aliasDefault: alias.defaultMaxOutputTokens,
  });
  return { text, body, alias, plan, maxOutput, cost, native };
}

/**
 * Queues a settlement and resolves with the control plane's answer for it (what the ledger
 * charged), or unconfirmed past the receipt wait; the settlement itself is unaffected either way.
 */
function receiptOf(deps: GatewayDependencies, item: FinishItem): Promise<Receipt> {
  if (deps.config.billing.receiptWaitMs === 0) {
    // The operator chose throughput: the settlement batches as usual, the cost is read by its id.
    deps.billing.finish(item);
    return Promise.resolve(UNCONFIRMED);
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(UNCONFIRMED), deps.config.billing.receiptWaitMs);
    deps.billing.finish(item, (result) => {
      clearTimeout(timer);
      resolve(result === null ? UNCONFIRMED : { confirmed: true, result });
    });
  });
}

/** The receipt of a settle within its reservation: what the legs charge, nothing written off. */
function withinReservation(reservationId: string, charged: Amounts): Receipt {
  return {
    confirmed: true,
    result: {
      reservationId,
      status: 'settled',
      replay: false,
      charged,
      writtenOff: { tokens: '0', credits: '0' },
    },
  };
}

/** The release of a reservation whose call failed before reaching the upstream. */
function releaseOf(error: unknown): Decision {
  const appError = toAppError(error);
  const limited = appError.code === 'rate_limit_exceeded' || appError.code === 'concurrency_limit_exceeded';
  return decide.release(limited ? 'rate_limited' : 'gateway_error', appError.status);
}

const COOLING: Standing = { kind: 'cooling' };

type ReserveRequest = Omit<ReserveItem, 'reservationId'>;

/**
 * The concurrency slot of a reserved call whose limits the control plane was asked to check: the
 * one its hot tier took (kept while the call runs, freed by the call's finish), or, from a control
 * plane that reserves in Postgres alone, one taken here now (refused: the caller releases the
 * reservation, nothing was spent).
 */
async function leaseOf(
  deps: GatewayDependencies,
  key: ResolvedKey,
  plan: PlanCeilings | null,
  reservationId: string,
  reservation: Extract<ReserveResult, { ok: true }>,
): Promise<{ lease: Lease | null; budget: RequestBudget | undefined }> {
  if (reservation.limited) {
    return { lease: deps.billing.holdSlot(reservationId, key.accountId), budget: reservation.budget };
  }
  return takeLimits(deps, key, plan, { holdsSlot: true, leaseId: reservationId });
}

/**
 * Reserves the estimate. A reservation whose answer timed out or was lost may still be committed
 * at the control plane: it is released by its id (idempotent; a release that arrives first leaves
 * a tombstone, so a late reserve cannot stay reserved). A refusal for lack of balance while this
 * gateway still has the account's settlements in its queue waits for them once and asks again:
 * a finished call's whole reservation is held until its settlement lands.
 */
async function reserve(
  deps: GatewayDependencies,
  key: ResolvedKey,
  request: ReserveRequest,
): Promise<{ reservationId: string; reservation: Extract<ReserveResult, { ok: true }> }> {
  let attempt = await reserveOnce(deps, key, request);
  if (
    !attempt.reservation.ok &&
    (attempt.reservation.code === 'insufficient_credits' ||
      attempt.reservation.code === 'insufficient_tokens') &&
    (await deps.billing.settledFor(key.accountId, deps.config.billing.timeoutMs))
  ) {
    attempt = await reserveOnce(deps, key, request);
  } else if (!attempt.reservation.ok && attempt.reservation.code === 'concurrency_limit_exceeded') {
    // A call answered with its cost already known frees its slot with its settlement, which may
    // still be queued, here or on another gateway: sent (here) or waited for (one flush interval
    // and a round trip there), then asked once more, so a client's next call finds it free.
    if (!(await deps.billing.settledFor(key.accountId, deps.config.billing.timeoutMs)))
      await sleep(2 * deps.config.billing.finishFlushMs + 10);
    attempt = await reserveOnce(deps, key, request);
  }
  const { reservationId, reservation } = attempt;
  if (!reservation.ok) {
    if (reservation.code === 'rate_limit_exceeded')
      throw limitError({ ...reservation, code: reservation.code });
    throw new AppError(reservation.code, {
      retryAfterSeconds:
        reservation.code === 'concurrency_limit_exceeded'
          ? deps.config.limits.concurrencyRetryAfterSeconds
          : reservation.retryAfterSeconds,
    });
  }
  return { reservationId, reservation };
}

async function reserveOnce(
  deps: GatewayDependencies,
  key: ResolvedKey,
  request: ReserveRequest,
): Promise<{ reservationId: string; reservation: ReserveResult }> {
  // Chosen here, so that the gateway can release what it cannot know was reserved. Time-ordered,
  // so Postgres appends its rows at the end of the index instead of all over it.
  const reservationId = timeOrderedUuid();
  try {
    return { reservationId, reservation: await deps.billing.reserve({ reservationId, ...request }) };
  } catch (error) {
    const appError =
      error instanceof AppError ? error : new AppError('billing_unavailable', { cause: error });
    if (appError.code === 'billing_unavailable') {
      deps.logger.warn(
        { keyId: key.keyId, reservationId, reason: billingFailureReason(appError) },
        'reservation failed: billing unavailable',
      );
    }
    if (mayHaveReserved(appError)) {
      // Its release also frees the slot the control plane may have taken with it.
      deps.billing.finish(
        finishItemOf(
          {
            reservationId,
            keyId: key.keyId,
            accountId: key.accountId,
            alias: request.alias,
            surface: request.surface,
          },
          { action: 'release', outcome: 'gateway_error', httpStatus: appError.status },
        ),
      );
    }
    throw appError;
  }
}

/** Why the control plane could not answer, for the operator's log. */
function billingFailureReason(error: AppError): string {
  let cause: unknown = error.cause;
  for (let depth = 0; depth < 5 && cause; depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    cause = (cause as { cause?: unknown }).cause;
  }
  return cause === undefined ? 'refused_or_server_error' : toAppError(cause).code;
}

/** The client's body with model, max output and (chat streams) stream_options replaced. */
function nativeBody(
  text: string,
  surface: MeteredSurface,
  stream: boolean,
  upstreamModel: string,
  edits: Record<string, string>,
  withoutProofs: ReturnType<typeof withoutReasoningProofs>,
): string {
  const fields: Record<string, string> = { model: JSON.stringify(upstreamModel), ...edits };
  if (surface === 'chat_completions' && stream) {
    fields.stream_options = withIncludeUsage(readTopLevelValue(text, 'stream_options'));
  }
  if (withoutProofs) fields[withoutProofs.field] = JSON.stringify(withoutProofs.value);
  return setTopLevelFields(text, fields);
}

interface Affinity {
  key: string;
  /** Where the reservation may read it in the same step; null when it lives in this process. */
  record: ReserveItem['affinity'] | null;
  /** The gateway's own lookup, started at once, unless the reservation is expected to read it. */
  early: Promise<string | null> | null;
}

/**
 * The conversation's affinity record, for an alias with several upstreams (docs/routing.md): its
 * name, sent with the reservation (the control plane's hot tier reads it in the same Redis step),
 * and the gateway's own lookup when no reservation is expected to read it.
 */
function affinityOf(
  deps: GatewayDependencies,
  key: ResolvedKey,
  alias: GatewayAlias,
  surface: MeteredSurface,
  body: Record<string, unknown>,
  request: InboundRequest,
): Affinity | null {
  if (alias.upstreams.length < 2) return null;
  const conversation = conversationOf(surface, body, request.headers);
  if (conversation === null) return null;
  const name = affinityKey(key.accountId, key.keyId, alias.alias, conversation);
  const record = deps.affinity.recordOf(name);
  const early = record && deps.affinity.readByReservation ? null : deps.affinity.get(name);
  return { key: name, record, early };
}

/**
 * The upstream that served the conversation's previous turn: as the reservation read it, else
 * looked up here (an engine that reserves in Postgres does not read it).
 */
function pinnedOf(
  deps: GatewayDependencies,
  affinity: Affinity,
  reservation: Extract<ReserveResult, { ok: true }>,
): Promise<string | null> {
  if (affinity.record) deps.affinity.readByReservation = reservation.pinned !== undefined;
  if (reservation.pinned !== undefined) return Promise.resolve(reservation.pinned);
  return affinity.early ?? deps.affinity.get(affinity.key);
}

function isIncludeUsage(options: unknown): boolean {
  return (
    typeof options === 'object' &&
    options !== null &&
    (options as { include_usage?: unknown }).include_usage === true
  );
}
