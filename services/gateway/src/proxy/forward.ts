import { AppError } from '@tollgate/errors';
import type { MeteredSurface } from '@tollgate/schemas';
import type { GatewayDependencies } from '../deps.ts';
import {
  checkUpstreamResponse,
  getAdapter,
  relayNonStreaming,
  relayStream,
  type StreamOutcome,
} from '../upstream/index.ts';
import { outcomeOf, type ReservationFinisher } from './finish.ts';
import type { RequestLog } from './request-log.ts';

export interface ForwardInput {
  request: Request;
  surface: MeteredSurface;
  stream: boolean;
  alias: string;
  providerId: string;
  upstreamModel: string;
  /** The client's body with model (and max output, stream_options) replaced; nothing else changed. */
  body: string;
  clientAskedForUsage: boolean;
  finisher: ReservationFinisher;
  log: RequestLog;
}

export interface ForwardResult {
  response: Response;
  /** Streams only: resolves when the stream has ended and its reservation is finished. */
  streamDone?: Promise<void>;
}

/** Sends the call upstream and relays the answer; settles, releases or holds the reservation. */
export async function forwardToUpstream(
  deps: GatewayDependencies,
  input: ForwardInput,
): Promise<ForwardResult> {
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
  const target = { provider, credential, upstreamModel: input.upstreamModel, alias: input.alias };
  const upstreamRequest = adapter.buildRequest({
    target,
    surface: input.surface,
    clientHeaders: input.request.headers,
  });

  const controller = new AbortController();
  const abort = () => controller.abort();
  input.request.signal.addEventListener('abort', abort, { once: true });
  const response = await deps.upstream.send({
    url: upstreamRequest.url,
    headers: upstreamRequest.headers,
    body: input.body,
    signal: controller.signal,
  });
  const names = { alias: input.alias, upstreamModel: input.upstreamModel };

  if (input.stream) {
    const checked = await checkUpstreamResponse({ response, names, stream: true });
    if (!checked.ok) {
      input.finisher.release(outcomeOf(checked.error), checked.error.status);
      throw checked.error;
    }
    const relayed = relayStream({
      response,
      surface: input.surface,
      adapter,
      alias: input.alias,
      upstreamModel: input.upstreamModel,
      clientAskedForUsage: input.clientAskedForUsage,
      abortUpstream: abort,
    });
    const started = performance.now();
    const streamDone = relayed.outcome.then((outcome) => {
      finishStream(input.finisher, outcome);
      input.request.signal.removeEventListener('abort', abort);
      deps.logger.info(
        { ...input.log, outcome: outcome.kind, streamMs: Math.round(performance.now() - started) },
        'stream ended',
      );
    });
    return { response: new Response(relayed.body, { status: 200, headers: relayed.headers }), streamDone };
  }

  const result = await relayNonStreaming({
    response,
    surface: input.surface,
    adapter,
    alias: input.alias,
    upstreamModel: input.upstreamModel,
  });
  input.request.signal.removeEventListener('abort', abort);
  if (!result.ok) {
    if (input.request.signal.aborted) input.finisher.release('client_disconnected', 499);
    else if (result.settle === 'hold') input.finisher.hold(outcomeOf(result.error), result.error.status);
    else input.finisher.release(outcomeOf(result.error), result.error.status);
    throw result.error;
  }
  // Usage was reported: it is charged even if the client is gone by now.
  input.finisher.settle(result.usage, result.status);
  return {
    response: new Response(result.body, {
      status: result.status,
      headers: { 'content-type': result.contentType },
    }),
  };
}

function finishStream(finisher: ReservationFinisher, outcome: StreamOutcome): void {
  switch (outcome.kind) {
    case 'completed':
      finisher.settle(outcome.usage, 200);
      return;
    case 'no_usage':
      finisher.hold('billing_settlement_pending', 200);
      return;
    case 'upstream_failed':
      // Part of the answer reached the client: usage is unknown, so hold, never guess.
      finisher.hold(outcomeOf(outcome.error), outcome.error.status);
      return;
    case 'client_disconnected':
      finisher.release('client_disconnected', 499);
      return;
  }
}
