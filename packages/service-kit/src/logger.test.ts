import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, scrubSecrets } from './logger.ts';

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(String(chunk));
      callback();
    },
  });
  return { lines, logger: createLogger({ name: 'test', destination }) };
}

describe('createLogger', () => {
  it('redacts credential fields and headers', () => {
    const { lines, logger } = capture();
    logger.info(
      {
        password: 'hunter2hunter2',
        request: {
          headers: { authorization: 'Bearer abcdefghijkl', cookie: 'sid=abc', 'x-api-key': 'sk-1' },
        },
      },
      'login',
    );
    const text = lines.join('');
    expect(text).not.toContain('hunter2hunter2');
    expect(text).not.toContain('abcdefghijkl');
    expect(text).not.toContain('sid=abc');
    expect(text).toContain('[redacted]');
  });

  it('scrubs keys out of messages and string fields', () => {
    const { lines, logger } = capture();
    logger.warn({ detail: 'got sk-live_abcdefghijklmnop in body' }, 'key sk-abcdefghijklmnopqrstu seen');
    const text = lines.join('');
    expect(text).not.toContain('abcdefghijklmnop');
    expect(text).toContain('sk-[redacted]');
  });
});

describe('scrubSecrets', () => {
  it('leaves ordinary text alone', () => {
    expect(scrubSecrets('task-123 risk-free')).toBe('task-123 risk-free');
  });
});
