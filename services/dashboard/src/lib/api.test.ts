import { describe, expect, it } from 'vitest';
import { failureOf } from './api.ts';

describe('a failed answer as the dashboard shows it', () => {
  it("keeps the service's own code, message, field errors and Retry-After", () => {
    const error = failureOf(
      422,
      { message: 'Check the fields.', code: 'validation_failed', errors: { name: ['Required.'] } },
      null,
    );
    expect(error).toMatchObject({
      status: 422,
      code: 'validation_failed',
      message: 'Check the fields.',
      fieldErrors: { name: ['Required.'] },
    });
    expect(failureOf(429, { message: 'Slow down.', code: 'rate_limit_exceeded' }, '7').retryAfter).toBe(7);
    // A 404 that names a code is the service's answer, not a missing endpoint.
    expect(failureOf(404, { message: 'Not found.', code: 'not_found' }, null).code).toBe('not_found');
  });

  it('classifies a 404 or 501 without a code as endpoint_unavailable', () => {
    for (const status of [404, 501]) {
      for (const body of [null, {}, 'Not Found', { message: 'Cannot GET /api/v1/x' }]) {
        expect(failureOf(status, body, null)).toMatchObject({ status, code: 'endpoint_unavailable' });
      }
    }
  });

  it('classifies any other answer without a code as unknown_error', () => {
    for (const status of [400, 500, 502, 503]) {
      const error = failureOf(status, null, null);
      expect(error).toMatchObject({
        status,
        code: 'unknown_error',
        message: `The request failed (${status}).`,
      });
    }
    expect(failureOf(502, { message: 'Bad gateway', code: 42 }, null).code).toBe('unknown_error');
  });
});
