import { AppError, toAppError } from '@tollgate/errors';
import type { MeteredSurface } from '@tollgate/schemas';
import type { GatewayDependencies } from '../deps.ts';
import type { InboundRequest } from '../request/inbound.ts';
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
  type UpstreamAdapter,
  type UpstreamResponse,
} from '../upstream/index.ts';
import { logUpstreamFailure } from './failure-log.ts';
import { CLIENT_GONE_STATUS, type Decision, decide, decideStream, outcomeOf } from './finish.ts';
import type { Reply } from './reply.ts';
import type { RequestLog } from './request-log.ts';

export interface ForwardInput {
  request: InboundRequest;
  surface: MeteredSurface;
  stream: boolean;
  alias: string;
  providerId: string;
  upstreamModel: string;
  /**
   * Native calls: the client's body with model (and max output, stream_options) replaced; nothing
   * else changed. Null for a translated call, whose body is encoded from `translation`.
   */
  body: string | null;
  /** Set when the surface is not the upstream's protocol (translation/). */
  translation: Translation | null;
  clientAskedForUsage: boolean;
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
}

function failed(error: AppError, decision: Decision): Forwarded {
  return { reply: { error }, decision: Promise.resolve(decision), streaming: false };
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
  const clientSignal = input.request.signal;
  const controller = new AbortController();
  const abort = () => controller.abort();
  if (input.stream) clientSignal.addEventListener('abort', abort, { once: true });
  else if (clientSignal.aborted) controller.abort();
  const detach = () => clientSignal.removeEventListener('abort', abort);
  try {
    return await forward(deps, input, controller, detach);
  } catch (error) {
    const appError = toAppError(error);
    return failed(appError, decide.failed(appError, clientSignal.aborted));
  } finally {
    detach();
  }
}

async function forward(
  deps: GatewayDependencies,
  input: ForwardInput,
  controller: AbortController,
  detach: () => void,
): Promise<Forwarded> {
  const clientSignal = input.request.signal;
  const { adapter, providerId, url, headers, body, translation } = await prepare(deps, input);
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
  const names = { alias: input.alias, upstreamModel: input.upstreamModel };

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
      return failed(checked.error, decide.failed(checked.error, clientSignal.aborted));
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
      upstreamModel: input.upstreamModel,
      clientAskedForUsage: input.clientAskedForUsage,
      abortUpstream: abort(controller),
      signal: controller.signal,
      drainTimeoutMs: deps.config.upstream.bodyTimeoutMs,
    });
    const started = performance.now();
    const decision = relayed.outcome.then((outcome) => {
      if (outcome.kind === 'upstream_failed')
        logUpstreamFailure(deps, providerId, outcome.error, undefined, input.log);
      deps.logger.info(
        { ...input.log, outcome: outcome.kind, streamMs: Math.round(performance.now() - started) },
        'stream ended',
      );
      return decideStream(outcome);
    });
    return {
      reply: { answer: { status: 200, headers: relayed.headers, body: relayed.body } },
      decision,
      streaming: true,
    };
  }

  const result = await relayNonStreaming({
    response,
    surface: upstreamSurface,
    adapter,
    alias: input.alias,
    upstreamModel: input.upstreamModel,
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
    return failed(gone ? new AppError('client_disconnected') : result.error, decision);
  }
  if (gone) return failed(new AppError('client_disconnected'), decide.clientGone(result.usage));
  return {
    reply: {
      answer: { status: result.status, headers: { 'content-type': result.contentType }, body: result.body },
    },
    decision: Promise.resolve(decide.settle(result.usage, result.status)),
    streaming: false,
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
): Promise<{
  adapter: UpstreamAdapter;
  providerId: string;
  url: string;
  headers: Record<string, string>;
  body: string;
  translation: Translation | null;
}> {
  let provider = deps.catalog.provider(input.providerId);
  if (!provider) {
    // An alias re-pointed at a provider added since the last catalogue load.
    await deps.catalog.reload();
    provider = deps.catalog.provider(input.providerId);
  }
  if (!provider) {
    deps.logger.error(
      { providerId: input.providerId },
      'alias points at a provider missing from the catalogue',
    );
    throw new AppError('upstream_unavailable');
  }
  const credential = deps.credentials.get(provider.credentialRef);
  if (provider.credentialRef !== null && credential === null) {
    deps.logger.error(
      { providerId: provider.id, credential: provider.credentialRef },
      'provider credential is not configured',
    );
    throw new AppError('upstream_unavailable');
  }
  const adapter = getAdapter(provider.kind);
  // An alias re-pointed meanwhile at a provider of another kind: its protocol is the target now.
  const translation =
    input.translation && input.translation.upstream !== adapter.wireProtocol
      ? { ...input.translation, upstream: adapter.wireProtocol }
      : input.translation;
  const target = { provider, credential, upstreamModel: input.upstreamModel, alias: input.alias };
  const encoded =
    translation || input.body === null
      ? encodeUpstreamBody(translation ?? failMissingTranslation(), {
          providerId: provider.id,
          upstreamModel: input.upstreamModel,
        })
      : input.body;
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
  return { adapter, providerId: provider.id, ...request, translation };
}
