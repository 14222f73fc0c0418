import { randomUUID } from 'node:crypto';
import { AppError, toAppError } from '@tollgate/errors';
import type { MeteredSurface } from '@tollgate/schemas';
import type { GatewayDependencies } from '../deps.ts';
import type { InboundRequest } from '../request/inbound.ts';
import { takeCapacity } from '../routing/capacity.ts';
import { retryAfterMs } from '../routing/cooldowns.ts';
import { credentialNamesOf } from '../routing/credential-pool.ts';
import type { UpstreamTarget } from '../routing/upstream-order.ts';
import {
  createStreamTranslator,
  encodeUpstreamBody,
  type Translation,
  translateAnswer,
} from '../translation/translate.ts';
import {
  checkUpstreamResponse,
  getAdapter,
  relayNonStreaming,
  relayStream,
  type StreamOutcome,
  type UpstreamAdapter,
  type UpstreamResponse,
} from '../upstream/index.ts';
import { isCredentialRefusal, logUpstreamFailure } from './failure-log.ts';
import { CLIENT_GONE_STATUS, type Decision, decide, decideStream, outcomeOf } from './finish.ts';
import type { Reply } from './reply.ts';
import type { RequestLog } from './request-log.ts';

export interface ForwardInput {
  request: InboundRequest;
  surface: MeteredSurface;
  stream: boolean;
  alias: string;
  /**
   * The upstreams to try, in order (routing/): the next one only when the one before failed
   * before anything reached the client. Each speaks the call's protocol the way the first does.
   */
  upstreams: UpstreamTarget[];
  /** Upstreams of the list one call may try (ROUTING_MAX_ATTEMPTS). */
  maxUpstreams: number;
  /**
   * Native calls: the client's body with model (the given upstream model), max output and
   * stream_options replaced; nothing else changed, except the conversation's reasoning proofs
   * when `dropProofs` (another provider than the one that issued them). Null for a translated
   * call, whose body is encoded from `translation`.
   */
  body: ((upstreamModel: string, dropProofs: boolean) => string) | null;
  /**
   * The provider that served the conversation's previous turn (prompt-cache affinity), when known:
   * a native call sent to another provider goes without that provider's reasoning proofs.
   */
  conversationProvider?: string | null;
  /** Set when the surface is not the upstream's protocol (translation/). */
  translation: Translation | null;
  clientAskedForUsage: boolean;
  /** Streams whose caller reads usage: the receipt that completes their end (relayStream). */
  closing?: Promise<((end: string) => string) | null>;
  log: RequestLog;
}

/** How a forwarded call turned out. Never a rejection: every path ends in a decision. */
export interface Forwarded {
  /** What the client gets: an answer, or the error to render in its surface's style. */
  reply: { answer: Reply } | { error: AppError };
  /**
   * What becomes of the reservation; resolves exactly once and never rejects. Already resolved
   * unless `streaming`, where it resolves when the stream (or its drain) has ended.
   */
  decision: Promise<Decision>;
  streaming: boolean;
  /** The upstream that answered (or was tried last), and how many upstreams were tried. */
  route: (UpstreamTarget & { attempts: number }) | null;
}

/** One upstream's try: its result, and whether the next upstream may take the call instead. */
interface Attempt {
  forwarded: Omit<Forwarded, 'route'>;
  /** Failed before any byte reached the client, in a way another upstream may not (docs/routing.md). */
  retryable: boolean;
  /** The provider's Retry-After, when it sent one. */
  retryAfter?: string | string[] | undefined;
  /** The credential the attempt sent (its name), and the provider's status when it refused it. */
  credential?: { name: string | null; refusedWith?: number | null };
  /** The provider's HTTP status, when it answered one. */
  status?: number;
}

function failed(error: AppError, decision: Decision): Omit<Forwarded, 'route'> {
  return { reply: { error }, decision: Promise.resolve(decision), streaming: false };
}

/** Failures another upstream may answer better: the provider's, never the request's own fault. */
function isRetryable(error: AppError): boolean {
  return error.code === 'upstream_unavailable' || error.code === 'upstream_invalid_response';
}

/**
 * Sends the call upstream and relays the answer; decides (but does not send) what becomes of the
 * reservation (docs/streaming.md, when the client leaves). A client that leaves before the call is
 * sent costs nothing. Streamed: until the provider's response headers arrive, a client that leaves
 * aborts the upstream request (nothing produced yet, released); after that the answer is read to
 * its end for the usage the provider bills. Not streamed: the provider produces the whole answer
 * before its headers, so once sent the call is never aborted for the client; the answer is read
 * (within the upstream timeouts) and its usage settled as client_disconnected.
 */
export async function forwardToUpstream(deps: GatewayDependencies, input: ForwardInput): Promise<Forwarded> {
  let attempts = 0;
  /** Upstreams of the order tried or skipped at their capacity (a credential retry is not one). */
  let tried = 0;
  let skipped = 0;
  const upstreams = [...input.upstreams];
  const retries = new Set<number>();
  /** Credential retries of this call: at most one fewer than the upstream's pool has credentials. */
  let credentialRetries = 0;
  for (let index = 0; index < upstreams.length; index++) {
    const target = upstreams[index]!;
    if (!retries.has(index)) {
      if (tried >= input.maxUpstreams) break;
      tried++;
    }
    const slot = await takeCapacity(deps, input.alias, target, randomUUID());
    if (slot === 'full') {
      // At the provider's limit on the operator's account: the next upstream, nothing sent.
      skipped++;
      deps.logger.info({ ...input.log, providerId: target.providerId }, 'upstream at its capacity: skipped');
      continue;
    }
    attempts++;
    const attempt = await attemptUpstream(deps, input, target);
    if (slot) void attempt.forwarded.decision.then(() => slot.release());
    const anotherCredential =
      poolAfter(deps, target, attempt) && credentialRetries < poolSize(deps, target) - 1;
    // A refused or rate-limited credential with another one in its pool: the same upstream again,
    // with that one.
    if (anotherCredential && !input.request.signal.aborted) {
      credentialRetries++;
      deps.logger.info(
        { ...input.log, providerId: target.providerId, attempts },
        'trying another credential',
      );
      upstreams.splice(index + 1, 0, target);
      retries.add(index + 1);
      continue;
    }
    report(deps, target, attempt);
    const more = index + 1 < upstreams.length && tried < input.maxUpstreams && !input.request.signal.aborted;
    if (attempt.retryable && more) {
      // Nothing was produced: the reservation stays for the next upstream, and this attempt's
      // failure (logged by the attempt) costs the customer nothing.
      deps.logger.info({ ...input.log, providerId: target.providerId, attempts }, 'trying the next upstream');
      continue;
    }
    return { ...attempt.forwarded, route: { ...target, attempts } };
  }
  // Every upstream at its capacity (or, never expected, none to try): nothing was sent.
  const error = new AppError('upstream_unavailable', skipped > 0 ? { retryAfterSeconds: 1 } : {});
  return { ...failed(error, decide.failed(error, input.request.signal.aborted)), route: null };
}

/** How many credentials the upstream's provider sends in turn. */
function poolSize(deps: GatewayDependencies, target: UpstreamTarget): number {
  const provider = deps.catalog.provider(target.providerId);
  return provider ? credentialNamesOf(provider).length : 0;
}

/**
 * Tells the provider's credential pool how the attempt went (a refused credential leaves the
 * rotation, reported once; a rate-limited one is benched for the provider's Retry-After; an
 * answer brings a rechecked one back). True when the provider refused or rate-limited the
 * credential and its pool has another one in rotation: the caller tries that one, and the
 * upstream's breaker hears nothing (docs/routing.md, credential pools).
 */
function poolAfter(deps: GatewayDependencies, target: UpstreamTarget, attempt: Attempt): boolean {
  const name = attempt.credential?.name;
  if (!name) return false;
  const refusedWith = attempt.credential?.refusedWith;
  if (refusedWith === undefined && attempt.status === 429 && attempt.retryable) {
    return benchCredential(deps, target, name, attempt);
  }
  if (refusedWith === undefined) {
    if ('answer' in attempt.forwarded.reply && deps.credentialPools.accepted(target.providerId, name)) {
      deps.logger.info(
        { providerId: target.providerId, credential: name },
        'provider credential accepted again',
      );
    }
    return false;
  }
  if (deps.credentialPools.refused(target.providerId, name, refusedWith)) {
    deps.metrics?.credentialRefused(target.providerId, name);
    deps.logger.error(
      { providerId: target.providerId, credential: name, upstreamStatus: refusedWith },
      'provider refused a credential: taken out of rotation',
    );
  }
  const provider = deps.catalog.provider(target.providerId);
  return provider !== undefined && deps.credentialPools.hasAnother(provider, name);
}

/**
 * A 429 on a credential of a pool: that credential leaves the rotation for the provider's
 * Retry-After (or ROUTING_COOLDOWN_MS without one, up to ROUTING_MAX_RETRY_AFTER_SECONDS); the
 * upstream stays in. True when another credential of the pool is in rotation. A provider with one
 * credential is the upstream itself: its breaker and cooldown take the 429 (report()).
 */
function benchCredential(deps: GatewayDependencies, target: UpstreamTarget, name: string, attempt: Attempt) {
  const provider = deps.catalog.provider(target.providerId);
  if (!provider || credentialNamesOf(provider).length < 2) return false;
  const { cooldownMs, maxRetryAfterMs } = deps.config.routing;
  const forMs = Math.min(retryAfterMs(attempt.retryAfter) ?? cooldownMs, maxRetryAfterMs);
  // ROUTING_COOLDOWN_MS=0 turns benches off; the call still moves to the pool's next credential.
  if (cooldownMs > 0 && forMs > 0 && deps.credentialPools.benched(target.providerId, name, forMs)) {
    deps.logger.warn(
      { providerId: target.providerId, credential: name, upstreamStatus: 429, benchedForMs: forMs },
      'provider rate-limited a credential: benched',
    );
  }
  return deps.credentialPools.hasAnother(provider, name);
}

/** Codes of an upstream that answered: its refusal of the request, or an answer without usage. */
const ANSWERED = new Set(['upstream_rejected', 'billing_settlement_pending']);

/** Tells the cooldowns and breakers how the upstream did (docs/routing.md). */
function report(deps: GatewayDependencies, target: UpstreamTarget, attempt: Attempt): void {
  const reply = attempt.forwarded.reply;
  if (attempt.retryable) {
    const wait = retryAfterMs(attempt.retryAfter);
    deps.cooldowns.failed(target, wait);
    const code = 'error' in reply ? reply.error.code : 'upstream_unavailable';
    deps.breakers.failed(target, {
      retryAfterMs: wait,
      cause: attempt.status === undefined ? code : `${code} (${attempt.status})`,
    });
  } else if ('answer' in reply || ANSWERED.has(reply.error.code)) {
    deps.cooldowns.succeeded(target);
    deps.breakers.succeeded(target);
  } else {
    deps.breakers.released(target);
  }
}

/** One upstream's try, with its own abort wiring (a client that leaves aborts only what waits). */
async function attemptUpstream(
  deps: GatewayDependencies,
  input: ForwardInput,
  target: UpstreamTarget,
): Promise<Attempt> {
  const clientSignal = input.request.signal;
  const controller = new AbortController();
  const abort = () => controller.abort();
  if (input.stream) clientSignal.addEventListener('abort', abort, { once: true });
  else if (clientSignal.aborted) controller.abort();
  const detach = () => clientSignal.removeEventListener('abort', abort);
  try {
    return await forward(deps, input, target, controller, detach);
  } catch (error) {
    const appError = toAppError(error);
    return {
      forwarded: failed(appError, decide.failed(appError, clientSignal.aborted)),
      retryable: isRetryable(appError),
    };
  } finally {
    detach();
  }
}

/**
 * The decision of a relayed stream, logged when it ends. Built apart from forward() so that what
 * it keeps for the stream's whole life is only this: a closure made in forward() would keep its
 * whole scope, the request's text and the body sent upstream with it.
 */
function streamDecision(
  deps: GatewayDependencies,
  outcome: Promise<StreamOutcome>,
  providerId: string,
  log: RequestLog,
): Promise<Decision> {
  const started = performance.now();
  return outcome.then((ended) => {
    if (ended.kind === 'upstream_failed') logUpstreamFailure(deps, providerId, ended.error, undefined, log);
    deps.logger.info(
      { ...log, outcome: ended.kind, streamMs: Math.round(performance.now() - started) },
      'stream ended',
    );
    return decideStream(ended);
  });
}

async function forward(
  deps: GatewayDependencies,
  input: ForwardInput,
  target: UpstreamTarget,
  controller: AbortController,
  detach: () => void,
): Promise<Attempt> {
  const clientSignal = input.request.signal;
  const { upstreamModel } = target;
  const { adapter, providerId, url, headers, body, translation, credentialName } = await prepare(
    deps,
    input,
    target,
  );
  /** What the pool learns from this attempt (a refusal names the status that refused). */
  const credential = (error?: AppError, status?: number): NonNullable<Attempt['credential']> =>
    error && isCredentialRefusal(error, status)
      ? { name: credentialName, refusedWith: status ?? null }
      : { name: credentialName };
  const upstreamSurface = translation ? translation.upstream : input.surface;
  let response: UpstreamResponse;
  try {
    response = await deps.upstream.send({ url, headers, body, signal: controller.signal });
  } catch (error) {
    const appError = toAppError(error);
    if (appError.code !== 'client_disconnected')
      logUpstreamFailure(deps, providerId, appError, undefined, input.log);
    throw appError;
  }
  detach();
  const names = { alias: input.alias, upstreamModel };
  const retryAfter = response.headers['retry-after'];

  if (input.stream) {
    const checked = await checkUpstreamResponse({
      response,
      names,
      surface: input.surface,
      adapter,
      stream: true,
    });
    if (!checked.ok) {
      logUpstreamFailure(deps, providerId, checked.error, response.status, input.log);
      return {
        forwarded: failed(checked.error, decide.failed(checked.error, clientSignal.aborted)),
        retryable: isRetryable(checked.error),
        retryAfter,
        credential: credential(checked.error, response.status),
        status: response.status,
      };
    }
    const relayed = relayStream({
      response,
      surface: input.surface,
      ...(translation
        ? {
            upstreamSurface,
            translator: createStreamTranslator(translation, {
              alias: input.alias,
              providerId,
              includeUsage: input.clientAskedForUsage,
            }),
          }
        : {}),
      adapter,
      alias: input.alias,
      upstreamModel,
      clientAskedForUsage: input.clientAskedForUsage,
      abortUpstream: abort(controller),
      signal: controller.signal,
      drainTimeoutMs: deps.config.upstream.bodyTimeoutMs,
      ...(input.closing ? { closing: input.closing } : {}),
    });
    const decision = streamDecision(deps, relayed.outcome, providerId, input.log);
    // From here a byte may reach the client: never another upstream (docs/routing.md).
    return {
      forwarded: {
        reply: { answer: { status: 200, headers: relayed.headers, body: { pipe: relayed.pipe } } },
        decision,
        streaming: true,
      },
      retryable: false,
      credential: credential(),
    };
  }

  const result = await relayNonStreaming({
    response,
    surface: upstreamSurface,
    adapter,
    alias: input.alias,
    upstreamModel,
    ...(translation
      ? { render: (answer) => translateAnswer(translation, answer, { alias: input.alias, providerId }) }
      : {}),
  });
  // Read to the end even if the client left meanwhile: the recorded outcome says it left.
  const gone = clientSignal.aborted;
  const outcome = (error: AppError) => (gone ? 'client_disconnected' : outcomeOf(error));
  const status = (error: AppError) => (gone ? CLIENT_GONE_STATUS : error.status);
  if (!result.ok) {
    if (result.error.code !== 'billing_settlement_pending')
      logUpstreamFailure(deps, providerId, result.error, response.status, input.log);
    const decision =
      result.settle === 'hold'
        ? decide.hold(outcome(result.error), status(result.error))
        : decide.release(outcome(result.error), status(result.error));
    return {
      forwarded: failed(gone ? new AppError('client_disconnected') : result.error, decision),
      // A held answer may have been billed by the provider: never asked of another one.
      retryable: !gone && result.settle === 'release' && isRetryable(result.error),
      retryAfter,
      credential: credential(result.error, response.status),
      status: response.status,
    };
  }
  if (gone) {
    return {
      forwarded: failed(new AppError('client_disconnected'), decide.clientGone(result.usage)),
      retryable: false,
    };
  }
  return {
    forwarded: {
      reply: {
        answer: { status: result.status, headers: { 'content-type': result.contentType }, body: result.body },
      },
      decision: Promise.resolve(decide.settle(result.usage, result.status)),
      streaming: false,
    },
    retryable: false,
    credential: credential(),
  };
}

function failMissingTranslation(): never {
  throw new AppError('server_error');
}

function abort(controller: AbortController): () => void {
  return () => controller.abort();
}

/** The provider, its adapter and the upstream request; upstream_unavailable when misconfigured. */
async function prepare(
  deps: GatewayDependencies,
  input: ForwardInput,
  upstream: UpstreamTarget,
): Promise<{
  adapter: UpstreamAdapter;
  providerId: string;
  url: string;
  headers: Record<string, string>;
  body: string;
  translation: Translation | null;
  /** The name of the credential sent (one of the provider's pool), null when it needs none. */
  credentialName: string | null;
}> {
  let provider = deps.catalog.provider(upstream.providerId);
  if (!provider) {
    // An alias re-pointed at a provider added since the last catalogue load.
    await deps.catalog.reload();
    provider = deps.catalog.provider(upstream.providerId);
  }
  if (!provider) {
    deps.logger.error(
      { providerId: upstream.providerId },
      'alias points at a provider missing from the catalogue',
    );
    throw new AppError('upstream_unavailable');
  }
  const credentialName = deps.credentialPools.pick(provider);
  const credential = deps.credentials.get(credentialName);
  if (credentialName !== null && credential === null) {
    deps.logger.error(
      { providerId: provider.id, credential: credentialName },
      'provider credential is not configured',
    );
    throw new AppError('upstream_unavailable');
  }
  const adapter = getAdapter(provider.kind, upstream.upstreamModel);
  // An alias re-pointed meanwhile at a provider of another kind: its protocol is the target now.
  const translation =
    input.translation && input.translation.upstream !== adapter.wireProtocol
      ? { ...input.translation, upstream: adapter.wireProtocol }
      : input.translation;
  const target = { provider, credential, upstreamModel: upstream.upstreamModel, alias: input.alias };
  const encoded =
    translation || input.body === null
      ? encodeUpstreamBody(translation ?? failMissingTranslation(), {
          providerId: provider.id,
          upstreamModel: upstream.upstreamModel,
        })
      : input.body(
          upstream.upstreamModel,
          input.conversationProvider != null && input.conversationProvider !== provider.id,
        );
  const built = adapter.buildRequest({
    target,
    surface: translation ? translation.upstream : input.surface,
    clientHeaders: input.request.headers,
    stream: input.stream,
    body: encoded,
  });
  let request = { url: built.url, headers: built.headers, body: built.body ?? encoded };
  if (adapter.authorize) {
    try {
      const authorized = await adapter.authorize(request, target);
      request = { url: authorized.url, headers: authorized.headers, body: authorized.body ?? request.body };
    } catch (error) {
      // The provider's token endpoint or signer failed: the client cannot fix it.
      deps.logger.error(
        { providerId: provider.id, cause: error instanceof Error ? error.message : String(error) },
        'provider authorisation failed',
      );
      throw new AppError('upstream_unavailable');
    }
  }
  return { adapter, providerId: provider.id, ...request, translation, credentialName };
}
