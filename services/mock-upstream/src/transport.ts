import type { ServerResponse } from 'node:http';
import type { Directives } from './directives.ts';
import type { Protocol, StreamEvent, StreamEvents } from './protocols/protocol.ts';

/** Writing answers: JSON bodies, SSE streams, and the transport faults of the directives. */

const JSON_HEADERS = { 'content-type': 'application/json' };
const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
};
/** Data of the frame an `invalid_json` stream carries in place of its first content delta. */
const BROKEN_DATA = '{"type": "broken", not json';

export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers?: Record<string, string>,
): void {
  sendText(response, status, JSON.stringify(body), headers);
}

function sendText(response: ServerResponse, status: number, text: string, headers?: Record<string, string>) {
  response.writeHead(status, { ...JSON_HEADERS, ...headers, 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

/**
 * Resolves after `ms`, or early (false) when the client goes away, so a long `delay` never keeps
 * a closed connection's work alive.
 */
export function wait(response: ServerResponse, ms: number): Promise<boolean> {
  if (response.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onClose = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      response.off('close', onClose);
      resolve(!response.destroyed);
    }, ms);
    response.once('close', onClose);
  });
}

/** A non-streamed answer, honouring `invalid_json` and `cut_after` (bytes). */
export function sendBody(response: ServerResponse, body: unknown, directives: Directives): void {
  const text = directives.invalidJson ? '{"id": "broken", "type": ' : JSON.stringify(body);
  if (directives.cutAfter === undefined) {
    sendText(response, 200, text);
    return;
  }
  // Announce the full length, send part of it, then drop the connection.
  const bytes = Buffer.from(text);
  response.writeHead(200, { ...JSON_HEADERS, 'content-length': bytes.length });
  response.write(bytes.subarray(0, Math.min(directives.cutAfter, bytes.length)));
  dropConnection(response);
}

/** Ends the socket once what was written is flushed, without the end of the HTTP message. */
function dropConnection(response: ServerResponse): void {
  const socket = response.socket;
  if (socket) socket.end();
  else response.destroy();
}

function isText(frames: string[] | Uint8Array[]): frames is string[] {
  return typeof frames[0] === 'string';
}

function frame(event: StreamEvent): string {
  const data = JSON.stringify(event.data);
  return event.event === undefined ? `data: ${data}\n\n` : `event: ${event.event}\ndata: ${data}\n\n`;
}

/** A stream's frames; from `backToBack` on each follows the one before it without a gap. */
export interface Frames {
  frames: string[] | Uint8Array[];
  backToBack: number;
}

/**
 * Frames the events, applying `stream_error` and `invalid_json` at the first content delta. A
 * binary framing (Bedrock's) breaks that frame's CRC for `invalid_json`. The answer's closing
 * events (and the terminator) follow the first of them without a gap.
 */
export function renderFrames(stream: StreamEvents, protocol: Protocol, directives: Directives): Frames {
  const at = Math.min(stream.firstDelta, stream.events.length - 1);
  let events = stream.events;
  if (directives.streamError) events = [...events.slice(0, at + 1), protocol.streamError(at + 1)];
  const closing = directives.streamError ? 0 : stream.closing;
  const backToBack = closing > 0 ? events.length - closing + 1 : events.length;
  if (protocol.encodeFrame) {
    const binary = events.map((event) => protocol.encodeFrame!(event));
    if (directives.invalidJson && binary[at]) {
      const broken = Buffer.from(binary[at]);
      broken.writeUInt8(broken.readUInt8(broken.length - 5) ^ 0xff, broken.length - 5);
      binary[at] = broken;
    }
    return { frames: binary, backToBack };
  }
  const frames = events.map(frame);
  if (directives.invalidJson) {
    const name = events[at]?.event;
    frames[at] = name === undefined ? `data: ${BROKEN_DATA}\n\n` : `event: ${name}\ndata: ${BROKEN_DATA}\n\n`;
  }
  if (stream.terminator && !directives.streamError) frames.push(stream.terminator);
  return { frames, backToBack };
}

/**
 * Sends a stream. Without timing or cut directives everything goes out in one write, which keeps
 * the benchmark path cheap; otherwise frame by frame.
 */
export async function sendStream(
  response: ServerResponse,
  { frames, backToBack }: Frames,
  directives: Directives,
  contentType?: string,
) {
  const { firstByteDelay, chunkDelay, cutAfter } = directives;
  response.writeHead(200, contentType ? { ...SSE_HEADERS, 'content-type': contentType } : SSE_HEADERS);
  if (firstByteDelay === undefined && chunkDelay === undefined && cutAfter === undefined) {
    response.end(isText(frames) ? frames.join('') : Buffer.concat(frames));
    return;
  }
  response.flushHeaders();
  if (firstByteDelay && !(await wait(response, firstByteDelay))) return;
  const limit = cutAfter === undefined ? frames.length : Math.min(cutAfter, frames.length);
  for (let index = 0; index < limit; index += 1) {
    if (index > 0 && index < backToBack && chunkDelay && !(await wait(response, chunkDelay))) return;
    if (response.destroyed) return;
    response.write(frames[index]!);
  }
  if (cutAfter === undefined) {
    response.end();
    return;
  }
  dropConnection(response);
}
