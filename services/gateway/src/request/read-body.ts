import type { Readable } from 'node:stream';
import { AppError } from '@tollgate/errors';

/*
 * How @hono/node-server (2.1.x) hands us the body, checked in its dist/index.mjs:
 * - `c.req.raw.body` is a pull-based ReadableStream over the IncomingMessage. Nothing is read from
 *   the socket until we pull, and Node's own backpressure pauses the socket when its small buffer
 *   (one highWaterMark) is full, so a refused body is never held in memory.
 * - With the default `autoCleanupIncoming`, that stream is a wrapper with no cancel hook: our
 *   `cancel()` releases the reader but leaves the socket alone, so the 413 can still be written.
 *   After the response the server drains what is left of the body (at most 64 MiB or 500 ms, then
 *   it destroys the socket); drained bytes are discarded, not buffered.
 * - Node's HTTP parser enforces a declared Content-Length itself (the body ends after that many
 *   bytes; extra bytes are parsed as the next request) and rejects a request carrying both
 *   Content-Length and Transfer-Encoding. We still count every byte we read, so neither a missing
 *   nor a lying header can get a body past the limit.
 */

/** A declared Content-Length, or undefined when absent or not a plain decimal number. */
function parseDeclaredLength(contentLength: string | null | undefined): number | undefined {
  if (contentLength === null || contentLength === undefined) return undefined;
  const trimmed = contentLength.trim();
  if (!/^\d{1,20}$/.test(trimmed)) return undefined;
  return Number(trimmed);
}

function tooLarge(limit: number): AppError {
  return new AppError('request_too_large', {
    message: `The request body exceeds the limit of ${limit} bytes.`,
  });
}

/**
 * Reads a request body into one Buffer, refusing it with request_too_large as soon as it is known
 * to be larger than `limit` bytes: at once when Content-Length declares more, otherwise the moment
 * the bytes read so far exceed the limit (the stream is cancelled and nothing more is read).
 * Works the same without Content-Length (chunked uploads).
 */
export async function readBodyWithLimit(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
  contentLength: string | null | undefined,
): Promise<Buffer> {
  const declared = parseDeclaredLength(contentLength);
  if (declared !== undefined && declared > limit) throw tooLarge(limit);
  if (body === null) return Buffer.alloc(0);

  const reader = body.getReader();
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limit) {
        // Stop reading right here; the caller answers 413 while the rest stays unread.
        await reader.cancel().catch(() => {});
        throw tooLarge(limit);
      }
      chunks.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
    }
  } finally {
    reader.releaseLock();
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
}

/**
 * The same contract over a Node request stream (the gateway's own server): refused at once when
 * Content-Length declares more than `limit`, else the moment the bytes read exceed it, after which
 * the stream is paused and nothing more is read (the server drains or drops the rest after its
 * answer). A client that leaves before the end rejects with client_disconnected.
 */
export function readStreamWithLimit(
  stream: Readable,
  limit: number,
  contentLength: string | null | undefined,
): Promise<Buffer> {
  const declared = parseDeclaredLength(contentLength);
  if (declared !== undefined && declared > limit) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const done = (error: Error | null) => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.off('close', onClose);
      if (error) {
        stream.pause();
        reject(error);
      } else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total));
    };
    const onData = (chunk: Buffer) => {
      total += chunk.length;
      if (total > limit) done(tooLarge(limit));
      else chunks.push(chunk);
    };
    const onEnd = () => done(null);
    const onError = (error: Error) => done(new AppError('client_disconnected', { cause: error }));
    const onClose = () => done(new AppError('client_disconnected'));
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', onError);
    stream.once('close', onClose);
  });
}
