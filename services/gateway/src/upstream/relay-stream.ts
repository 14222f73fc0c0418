import { Readable } from 'node:stream';
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

/**
 * Where a relayed stream is written. The gateway's server writes to the client's socket; tests and
 * other readers take the same stream as a web ReadableStream (RelayedStream.body).
 */
export interface StreamSink {
  /** Takes bytes; false when the client's buffer is full: the relay pauses until resumed. */
  write(bytes: Uint8Array): boolean;
  /** The stream ended, after its end event or the gateway's error event. */
  end(): void;
}

/** A relay started into a sink. */
export interface PipedStream {
  /** The sink has room again (after a write that answered false). */
  resume(): void;
  /** The client left: stops relaying (and, after output started, reads on for the usage). */
  cancel(): void;
}

export interface RelayedStream {
  /**
   * What the client reads as a web stream: upstream events relayed as they arrive, then the end or
   * error event. Created on first use; use either this or pipe, once.
   */
  readonly body: ReadableStream<Uint8Array>;
  /** The same stream written straight into a sink: no promise per event (the server's path). */
  pipe(sink: StreamSink): PipedStream;
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

/** How the relay reads the upstream body: pushed to handlers, paused while the sink is full. */
interface Source {
  pause(): void;
  resume(): void;
  /** Ends the reading for good (destroys the upstream body). */
  stop(): void;
}

interface SourceHandlers {
  chunk(bytes: Buffer): void;
  end(): void;
  error(error: unknown): void;
}

/**
 * An undici body (a Node Readable) read by its events: one callback per chunk, where an async
 * iterator and a web stream cost several promises each (docs/decisions/stream-relay-push.md).
 */
function readableSource(body: Readable, handlers: SourceHandlers): Source {
  let stopped = false;
  body.on('data', (chunk: Buffer) => {
    if (!stopped) handlers.chunk(chunk);
  });
  body.once('end', () => {
    if (!stopped) handlers.end();
  });
  body.on('error', (error: unknown) => {
    if (!stopped) handlers.error(error);
  });
  return {
    pause: () => body.pause(),
    resume: () => {
      if (!stopped) body.resume();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      body.destroy();
    },
  };
}

/** Any other async iterable (tests' in-memory bodies): read in a loop that waits while paused. */
function iteratorSource(body: AsyncIterable<Buffer>, handlers: SourceHandlers): Source {
  const iterator = body[Symbol.asyncIterator]();
  let stopped = false;
  let paused = false;
  let wake: (() => void) | null = null;
  const loop = async () => {
    try {
      for (;;) {
        if (paused) await new Promise<void>((resolve) => (wake = resolve));
        if (stopped) return;
        const next = await iterator.next();
        if (stopped) return;
        if (next.done) return handlers.end();
        handlers.chunk(next.value);
      }
    } catch (error) {
      if (!stopped) handlers.error(error);
    }
  };
  void loop();
  return {
    pause: () => {
      paused = true;
    },
    resume: () => {
      paused = false;
      const waiting = wake;
      wake = null;
      waiting?.();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      // Ending the iteration destroys the upstream body; a pending read then settles by itself.
      iterator.return?.().catch(() => {});
      const waiting = wake;
      wake = null;
      waiting?.();
    },
  };
}

/**
 * The one stream relay. Each upstream chunk is parsed into complete SSE events; every event is
 * fed to the adapter's usage tracker and passed on at once (with the upstream model id replaced by
 * the alias), so nothing waits for the whole stream. The upstream is read only as fast as the
 * client takes what is written: a full sink pauses the upstream body, so a slow client holds at
 * most the sink's buffer and the upstream's socket buffers, and the provider feels the
 * backpressure. A client that cancels before any event aborts the upstream request; one that
 * cancels later stops the relaying only: the upstream is read on to its end (bounded by the
 * upstream timeouts and the drain deadline) so that the usage the provider bills is known and
 * settled.
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
  const dropUsageOnly = !translator && surface === 'chat_completions' && !input.clientAskedForUsage;

  let resolveOutcome: (outcome: StreamOutcome) => void = () => {};
  const outcome = new Promise<StreamOutcome>((resolve) => {
    resolveOutcome = resolve;
  });
  let finished = false;
  let terminalSeen = false;
  /** Set once the client has gone after output started: events are only observed, not relayed. */
  let draining = false;
  let drainDeadline: ReturnType<typeof setTimeout> | undefined;
  /** Upstream events seen; the next responses sequence number, since the provider counts from 0. */
  let eventCount = 0;
  /** The stream's end, kept back for the receipt once its usage or end event arrived (`closing`). */
  let holding = false;
  let held = '';
  let sink: StreamSink | null = null;
  let source: Source | null = null;
  /** Why the upstream is paused: the client's socket is full, or the end waits for its receipt. */
  let sinkFull = false;
  let waitingForReceipt = false;

  function finish(result: StreamOutcome): boolean {
    if (finished) return false;
    finished = true;
    resolveOutcome(result);
    return true;
  }

  function stopReading(): void {
    clearTimeout(drainDeadline);
    source?.stop();
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

  function resumeSource(): void {
    if (!sinkFull && !waitingForReceipt) source?.resume();
  }

  function write(text: string): void {
    if (text.length > 0 && sink && !sink.write(toBytes(text))) {
      sinkFull = true;
      source?.pause();
    }
  }

  function fail(text: string, error: AppError): void {
    if (!finish({ kind: 'upstream_failed', error })) return;
    const sequence = translator ? translator.eventCount : eventCount;
    sink?.write(toBytes(text + renderStreamError(surface, error, sequence)));
    sink?.end();
    stopReading();
  }

  function ended(): StreamOutcome {
    const usage = tracker.usage();
    return usage === null ? { kind: 'no_usage' } : { kind: 'completed', usage };
  }

  function end(): void {
    if (!finish(ended())) return;
    sink?.end();
    stopReading();
  }

  /** Once the client has gone: the usage seen by now decides, and the upstream is let go. */
  function drained(): void {
    finish(disconnected());
    stopReading();
  }

  function chunk(bytes: Buffer): void {
    relayChunk(parser.push(bytes), false);
  }

  function upstreamEnded(): void {
    relayChunk(parser.flush(), true);
  }

  /** The events of one upstream chunk (`last`: what the body's end completed). */
  function relayChunk(events: SseEvent[], last: boolean): void {
    if (finished) return;
    const { text, failure } = relayEvents(events);
    if (draining) {
      // Read for the usage alone, to the protocol's end event or the provider's error.
      if (last || failure || terminalSeen) drained();
      return;
    }
    if (failure) {
      fail(withHeld(text), failure);
      return;
    }
    if (terminalSeen) {
      // The end event decides the outcome before the client can read it, so the settlement is
      // on its way before the client's next call (the promise keeps this first resolution).
      resolveOutcome(ended());
      if (holding) {
        // Nothing more is read until the end, with its receipt, is written.
        waitingForReceipt = true;
        source?.pause();
        void closed(text).then((end) => {
          waitingForReceipt = false;
          if (finished || draining) return;
          deliver(end, last);
          resumeSource();
        });
        return;
      }
    }
    deliver(text, last);
  }

  function deliver(text: string, last: boolean): void {
    if (!last) {
      write(text);
      return;
    }
    write(withHeld(text));
    // A stream that stops without its protocol's end event was cut short.
    if (!terminalSeen) fail('', new AppError('upstream_invalid_response'));
    else end();
  }

  function upstreamFailed(error: unknown): void {
    if (finished) return;
    if (draining) {
      // Cut or timed out while draining: the usage seen so far decides (none -> held).
      drained();
    } else if (terminalSeen) {
      // After the end event the answer is whole; a late cut changes nothing.
      end();
    } else if (input.signal?.aborted || isAbortError(error)) {
      finish(disconnected());
      sink?.end();
      stopReading();
    } else {
      fail('', new AppError('upstream_unavailable', { cause: error }));
    }
  }

  function cancel(): void {
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
      // Output has started and the provider bills it: read on for the usage, within the deadline.
      draining = true;
      if (input.drainTimeoutMs !== undefined) {
        drainDeadline = setTimeout(() => {
          // A provider that trickles on forever: stop it; the usage seen so far decides.
          finish(disconnected());
          input.abortUpstream();
          stopReading();
        }, input.drainTimeoutMs);
        drainDeadline.unref();
      }
      source?.resume();
    }
  }

  function pipe(target: StreamSink): PipedStream {
    if (sink) throw new Error('a relayed stream is read once');
    sink = target;
    const handlers = { chunk, end: upstreamEnded, error: upstreamFailed };
    const body = input.response.body;
    source = body instanceof Readable ? readableSource(body, handlers) : iteratorSource(body, handlers);
    return {
      resume: () => {
        sinkFull = false;
        if (!draining) resumeSource();
      },
      cancel,
    };
  }

  let webBody: ReadableStream<Uint8Array> | null = null;
  const webStream = (): ReadableStream<Uint8Array> => {
    let piped: PipedStream | null = null;
    return new ReadableStream<Uint8Array>({
      start(controller) {
        piped = pipe({
          write(bytes) {
            controller.enqueue(bytes);
            return (controller.desiredSize ?? 0) > 0;
          },
          end: () => controller.close(),
        });
      },
      pull() {
        piped?.resume();
      },
      cancel() {
        piped?.cancel();
      },
    });
  };

  return {
    get body() {
      webBody ??= webStream();
      return webBody;
    },
    pipe,
    headers: { ...STREAM_HEADERS },
    outcome,
  };
}
