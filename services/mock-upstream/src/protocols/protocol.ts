import type { IncomingHttpHeaders } from 'node:http';
import type { Directives } from '../directives.ts';
import type { ProtocolRequest, ReplyPlan } from '../reply-plan.ts';

/** One server-sent event before framing: an optional `event:` name and a JSON `data` value. */
export interface StreamEvent {
  event?: string;
  data: unknown;
}

export interface StreamEvents {
  events: StreamEvent[];
  /** Index of the first content delta: where `invalid_json` and `stream_error` strike. */
  firstDelta: number;
  /** A frame sent after the last event on a proper end (chat's `data: [DONE]`). */
  terminator?: string;
  /**
   * How many of the last events close the answer (those after its last content delta). Once the
   * model stops, providers send them back to back, so `chunk_delay` spaces only the first of them.
   */
  closing: number;
}

/** The events after the last one `isDelta` picks out: an answer's closing events. */
export function closingCount(events: StreamEvent[], isDelta: (event: StreamEvent) => boolean): number {
  return events.length - 1 - events.findLastIndex(isDelta);
}

/** One upstream wire protocol: how to read its requests and render its answers and errors. */
export interface Protocol {
  /** Reads what the mock needs from a parsed JSON body. */
  readRequest(body: Record<string, unknown>): ProtocolRequest;
  /** Whether the request carries the expected credential in this protocol's header. */
  isAuthorized(headers: IncomingHttpHeaders, expectedApiKey: string): boolean;
  /** The provider's error body for an HTTP status. */
  errorBody(status: number, message: string): unknown;
  /**
   * Checks a credential that needs the whole request (Bedrock's SigV4 signature), in place of
   * isAuthorized: null when accepted, else the refusal to send.
   */
  authorize?(
    request: { method: string; url: string; headers: IncomingHttpHeaders; body: string },
    expectedApiKey: string,
  ): Promise<{ status: number; body: unknown } | null>;
  /**
   * A refusal of the provider's own: one a directive asks for (Azure's content filter), or of a
   * body the provider does not take (Bedrock's envelope).
   */
  refuse?(
    directives: Directives,
    body?: Record<string, unknown>,
  ): { status: number; body: unknown } | undefined;
  /** Streams not sent as SSE (Bedrock): the content type and each event's frame. */
  streamContentType?: string;
  encodeFrame?(event: StreamEvent): Uint8Array;
  /** The non-streamed answer. */
  reply(plan: ReplyPlan, request: ProtocolRequest, directives?: Directives): unknown;
  /** The streamed answer, as events. */
  stream(plan: ReplyPlan, request: ProtocolRequest, directives?: Directives): StreamEvents;
  /** The provider's mid-stream error event; `sequence` is its position in the stream. */
  streamError(sequence: number): StreamEvent;
}

export function readNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export function readModel(body: Record<string, unknown>, fallback: string): string {
  return typeof body.model === 'string' ? body.model : fallback;
}
