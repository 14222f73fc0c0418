import { AppError } from '@tollgate/errors';
import { describe, expect, it } from 'vitest';
import { readBodyWithLimit } from './read-body.ts';

/** A stream of `count` chunks of `size` bytes that records how many chunks were pulled. */
function countingStream(count: number, size: number) {
  const state = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (state.pulled === count) {
          controller.close();
          return;
        }
        state.pulled += 1;
        controller.enqueue(new Uint8Array(size).fill(0x61));
      },
      cancel() {
        state.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, state };
}

function streamOf(...parts: string[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(new TextEncoder().encode(part));
      controller.close();
    },
  });
}

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe('readBodyWithLimit', () => {
  it('returns the whole body when it fits, across several chunks', async () => {
    const body = await readBodyWithLimit(streamOf('{"a":', '1,"b":"é"', '}'), 100, undefined);
    expect(body.toString('utf8')).toBe('{"a":1,"b":"é"}');
  });

  it('accepts a body of exactly the limit', async () => {
    const { stream } = countingStream(4, 25);
    const body = await readBodyWithLimit(stream, 100, '100');
    expect(body.length).toBe(100);
  });

  it('returns an empty buffer for a missing body', async () => {
    expect((await readBodyWithLimit(null, 10, undefined)).length).toBe(0);
  });

  it('refuses a declared Content-Length above the limit without reading anything', async () => {
    const { stream, state } = countingStream(1000, 1024);
    const error = await refusal(readBodyWithLimit(stream, 1024, '1048576'));
    expect(error.code).toBe('request_too_large');
    expect(error.status).toBe(413);
    expect(error.message).toContain('1024 bytes');
    expect(state.pulled).toBe(0);
  });

  it('stops reading a body without Content-Length the moment it passes the limit', async () => {
    const { stream, state } = countingStream(10_000, 1000);
    const error = await refusal(readBodyWithLimit(stream, 4500, undefined));
    expect(error.code).toBe('request_too_large');
    expect(state.pulled).toBe(5);
    expect(state.cancelled).toBe(true);
  });

  it('refuses a body longer than its small declared Content-Length', async () => {
    const { stream, state } = countingStream(100, 1000);
    const error = await refusal(readBodyWithLimit(stream, 2000, '10'));
    expect(error.code).toBe('request_too_large');
    expect(state.pulled).toBe(3);
  });

  it('reads a body shorter than its declared length when it fits', async () => {
    const body = await readBodyWithLimit(streamOf('{}'), 100, '90');
    expect(body.toString()).toBe('{}');
  });

  it('ignores a Content-Length that is not a number and counts the bytes instead', async () => {
    for (const header of ['abc', '-1', '1e9', '', ' ']) {
      const { stream } = countingStream(50, 100);
      const error = await refusal(readBodyWithLimit(stream, 1000, header));
      expect(error.code).toBe('request_too_large');
    }
  });

  it('passes a stream error through unchanged', async () => {
    const failure = new Error('socket closed');
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.error(failure);
      },
    });
    await expect(readBodyWithLimit(stream, 100, undefined)).rejects.toBe(failure);
  });
});
