import { AppError } from '@tollgate/errors';
import type { WireProtocol } from '../translation/protocol.ts';
import type { StreamTranslator } from '../translation/translate.ts';
import type { UpstreamResponse } from './client.ts';
import { isRecord, parseJson } from './json-scan.ts';
import { createModelRewriter } from './model-rewrite.ts';
import { type SseEvent, SseParser } from './sse.ts';
import { renderStreamError } from './stream-errors.ts';
import type { MeteredSurface, UpstreamAdapter, UsageFigures } from './types.ts';

/**
 * How a relayed stream ended; decides the reservation:
 * - completed: the protocol's end event arrived with usage -> settle that usage;
 * - no_usage: ended cleanly but without usage figures -> hold for reconciliation;
 * - upstream_failed: cut, timed out, invalid event or provider error event -> hold (the client
 *   got our error event as the stream's last event);
 * - client_disconnected: the client went away. Before the provider produced anything
 *   (`started` false) the upstream request was aborted -> release. After, the upstream was read
 *   to its end without relaying -> settle the usage it reported, or hold when it reported none.
 */
export type StreamOutcome =
  | { kind: 'completed'; usage: UsageFigures }
  | { kind: 'no_usage' }
  | { kind: 'upstream_failed'; error: AppError }
  | { kind: 'client_disconnected'; started: boolean; usage: UsageFigures | null };

export interface RelayStreamInput {
  /** A 2xx `text/event-stream` response (see checkUpstreamResponse). */
  response: UpstreamResponse;
  /** The caller's surface: its end and error events. */
  surface: MeteredSurface;
  /** The upstream's protocol when it is not the caller's (a translated call). */
  upstreamSurface?: WireProtocol;
  /** Translated calls: turns the upstream's events into the caller's. */
  translator?: StreamTranslator;
  adapter: UpstreamAdapter;
  alias: string;
  upstreamModel: string;
  /** Chat only: whether the client itself set stream_options.include_usage. */
  clientAskedForUsage: boolean;
  /** Aborts the upstream request; called once when the client disconnects before any output. */
  abortUpstream: () => void;
  /**
   * The signal given to client.send, if any. When it has fired, a failed upstream read means the
   * client left (its request signal aborted the upstream first), not that the provider failed.
   * Without it, only an AbortError is recognised as such.
   */
  signal?: AbortSignal;
  /**
   * Longest the upstream is read on for its usage after the client left (besides the transport's
   * own timeouts, which bound each silence, not the total). Past it the upstream is aborted.
   */
  drainTimeoutMs?: number;
  /**
   * Receipts (docs/receipts.md): from the event that carries the final usage (or the end event) on,
   * the text is kept back until the stream has ended and this resolves, then passed through the
   * function it gives (null: unchanged). The caller bounds its wait.
   */
  closing?: Promise<((end: string) => string) | null>;
}

export interface RelayedStream {
  /** What the client reads: upstream events relayed as they arrive, then the end or error event. */
  body: ReadableStream<Uint8Array>;
  /** The only headers the client gets; provider headers never pass. */
  headers: Record<string, string>;
  /** Resolves exactly once, when the stream has ended one way or another. Never rejects. */
  outcome: Promise<StreamOutcome>;
}

/** Buffer.from is about four times cheaper than TextEncoder for event-sized strings. */
function toBytes(text: string): Uint8Array {
  return Buffer.from(text, 'utf8');
}

/**
 * The provider's own word for a failure inside a stream (`error.type` or `error.code`, Bedrock's
 * exception type, Anthropic's `overloaded_error`), kept as the cause for the log: the client gets
 * only the gateway's code. Anything but a short machine word is not kept.
 */
function providerFailure(event: SseEvent): Error {
  const parsed = parseJson(event.data);
  const error = isRecord(parsed) && isRecord(parsed.error) ? parsed.error : parsed;
  const kind = isRecord(error)
    ? [error.type, error.code].find((value) => typeof value === 'string' && /^[A-Za-z_]{1,64}$/.test(value))
    : undefined;
  return Object.assign(new Error('the provider reported a failure in the stream'), {
    code: typeof kind === 'string' && kind !== 'error' ? kind : 'provider_stream_error',
  });
}

/** Only the gateway aborts upstream requests, and only for a client that left. */
function isAbortError(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}

export const STREAM_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
};

/**
 * The one stream relay. Each upstream chunk is parsed into complete SSE events; every event is
 * fed to the adapter's usage tracker and passed on at once (with the upstream model id replaced by
 * the alias), so nothing waits for the whole stream. Pull-based: the upstream is read only as
 * fast as the client reads. A client that cancels before any event aborts the upstream request;
 * one that cancels later stops the relaying only: the upstream is read on to its end (bounded by
 * the upstream timeouts) so that the usage the provider bills is known and settled.
 */
export function relayStream(input: RelayStreamInput): RelayedStream {
  const { surface, translator } = input;
  // Usage is always read from the upstream's own events: the provider bills from them.
  const tracker = input.adapter.createStreamUsageTracker(input.upstreamSurface ?? surface);
  // Providers whose streams are not SSE (Bedrock) decode into the events an SSE stream carries.
  const parser = input.adapter.streamFraming?.createDecoder() ?? new SseParser();
  const rewrite = createModelRewriter(input.upstreamModel, input.alias, {
    firstOnly: true,
    anyValue: input.adapter.namesItsOwnModel === true,
  });
  const iterator = input.response.body[Symbol.asyncIterator]();
  const dropUsageOnly = !translator && surface === 'chat_completions' && !input.clientAskedForUsage;

  let resolveOutcome: (outcome: StreamOutcome) => void = () => {};
  const outcome = new Promise<StreamOutcome>((resolve) => {
    resolveOutcome = resolve;
  });
  let finished = false;
  let terminalSeen = false;
  /** Set once the client has gone after output started: events are only observed, not relayed. */
  let draining = false;
  /** The pull under way, which a drain must let finish before it reads on. */
  let reading: Promise<void> | null = null;
  /** Upstream events seen; the next responses sequence number, since the provider counts from 0. */
  let eventCount = 0;
  /** The stream's end, kept back for the receipt once its usage or end event arrived (`closing`). */
  let holding = false;
  let held = '';

  function finish(result: StreamOutcome): boolean {
    if (finished) return false;
    finished = true;
    resolveOutcome(result);
    return true;
  }

  function stopReading(): void {
    // Ending the iteration destroys the upstream body; a pending read then settles by itself.
    iterator.return?.().catch(() => {});
  }

  function disconnected(): StreamOutcome {
    return { kind: 'client_disconnected', started: eventCount > 0, usage: tracker.usage() };
  }

  /** Relayable text of these events, or the failure that ends the stream after that text. */
  function relayEvents(events: SseEvent[]): { text: string; failure: AppError | null } {
    let text = '';
    for (const event of events) {
      const verdict = tracker.observe(event);
      if (verdict === 'provider_error')
        return { text, failure: new AppError('upstream_unavailable', { cause: providerFailure(event) }) };
      if (verdict === 'invalid') return { text, failure: new AppError('upstream_invalid_response') };
      if (verdict === 'drop') continue;
      eventCount++;
      if (verdict === 'terminal') terminalSeen = true;
      if (!holding && input.closing)
        holding = verdict === 'usage_only' || verdict === 'terminal' || event.event === 'message_delta';
      let piece: string;
      if (translator) piece = translator.push(event);
      else if (verdict === 'usage_only' && dropUsageOnly) continue;
      else piece = rewrite(event.raw);
      if (holding) held += piece;
      else text += piece;
    }
    return { text, failure: null };
  }

  /** This chunk's text and all that was kept back, in order. */
  function withHeld(text: string): string {
    if (held.length === 0) return text;
    const all = text + held;
    held = '';
    return all;
  }

  /** The end of the answer, with the receipt in it once known. */
  async function closed(text: string): Promise<string> {
    const close = await input.closing;
    const end = withHeld('');
    return text + (close ? close(end) : end);
  }

  function fail(
    controller: ReadableStreamDefaultController<Uint8Array>,
    text: string,
    error: AppError,
  ): void {
    if (!finish({ kind: 'upstream_failed', error })) return;
    const sequence = translator ? translator.eventCount : eventCount;
    controller.enqueue(toBytes(text + renderStreamError(surface, error, sequence)));
    controller.close();
    stopReading();
  }

  function ended(): StreamOutcome {
    const usage = tracker.usage();
    return usage === null ? { kind: 'no_usage' } : { kind: 'completed', usage };
  }

  function announceEnd(): void {
    resolveOutcome(ended());
  }

  function end(controller: ReadableStreamDefaultController<Uint8Array>): void {
    if (!finish(ended())) return;
    controller.close();
    stopReading();
  }

  /**
   * Reads the rest of the upstream answer for its usage alone, once the client has gone. Ends at
   * the protocol's end event, the body's end, a provider error or a transport failure (including
   * the upstream body timeout); whatever usage was seen by then decides.
   */
  async function drain(): Promise<void> {
    const deadline =
      input.drainTimeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            // A provider that trickles on forever: stop it; the usage seen so far decides.
            finish(disconnected());
            input.abortUpstream();
            stopReading();
          }, input.drainTimeoutMs);
    deadline?.unref();
    try {
      await drainToEnd();
    } finally {
      clearTimeout(deadline);
    }
  }

  async function drainToEnd(): Promise<void> {
    await reading;
    try {
      while (!finished && !terminalSeen) {
        const next = await iterator.next();
        const { failure } = relayEvents(next.done ? parser.flush() : parser.push(next.value));
        if (failure || next.done) break;
      }
    } catch {
      // Cut or timed out: the usage seen so far decides (none -> held).
    }
    finish(disconnected());
    stopReading();
  }

  async function pullOnce(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    // Reads until at least one complete event can be passed on, or the stream ends.
    for (;;) {
      let next: IteratorResult<Buffer>;
      try {
        next = await iterator.next();
      } catch (error) {
        if (finished || draining) return;
        // After the end event the answer is whole; a late cut changes nothing.
        if (terminalSeen) return end(controller);
        if (input.signal?.aborted || isAbortError(error)) {
          finish(disconnected());
          return controller.close();
        }
        return fail(controller, '', new AppError('upstream_unavailable', { cause: error }));
      }
      if (finished) return;
      const relayed = relayEvents(next.done ? parser.flush() : parser.push(next.value));
      const failure = relayed.failure;
      let text = relayed.text;
      // The client left while this read was under way: its events count, the drain reads on.
      if (draining) return;
      if (failure) return fail(controller, withHeld(text), failure);
      // The end event decides the outcome before the client can read it, so the settlement is
      // on its way before the client's next call (the promise keeps this first resolution).
      if (terminalSeen) {
        announceEnd();
        if (holding) text = await closed(text);
        if (finished || draining) return;
      }
      if (next.done) {
        text = withHeld(text);
        if (text.length > 0) controller.enqueue(toBytes(text));
        // A stream that stops without its protocol's end event was cut short.
        if (!terminalSeen) return fail(controller, '', new AppError('upstream_invalid_response'));
        return end(controller);
      }
      if (text.length > 0) return controller.enqueue(toBytes(text));
    }
  }

  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      reading = pullOnce(controller).finally(() => {
        reading = null;
      });
      return reading;
    },
    cancel() {
      if (finished) return;
      // A client may hang up as soon as it has read the end event (openai-node stops at [DONE]),
      // before the upstream body has formally ended: that answer was whole and is settled.
      if (terminalSeen) {
        finish(ended());
        stopReading();
      } else if (eventCount === 0) {
        // The provider produced nothing yet: stop it, nothing is owed.
        finish(disconnected());
        input.abortUpstream();
        stopReading();
      } else {
        // Output has started and the provider bills it: read on for the usage.
        draining = true;
        drain().catch(() => {});
      }
    },
  });

  return { body, headers: { ...STREAM_HEADERS }, outcome };
}
