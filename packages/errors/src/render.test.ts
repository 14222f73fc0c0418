import { describe, expect, it } from 'vitest';
import { AppError } from './app-error.ts';
import { renderControlPlaneError, renderMessagesError, renderOpenAIError } from './render.ts';

describe('renderControlPlaneError', () => {
  it('renders message and code, and field errors for validation failures', () => {
    const rendered = renderControlPlaneError(
      AppError.validation({ email: ['Enter a valid email address.'] }),
    );
    expect(rendered.status).toBe(422);
    expect(rendered.body).toEqual({
      message: 'The request body failed validation.',
      code: 'validation_failed',
      errors: { email: ['Enter a valid email address.'] },
    });
  });

  it('omits errors when there are none', () => {
    const rendered = renderControlPlaneError(new AppError('not_found'));
    expect(rendered).toEqual({
      status: 404,
      headers: {},
      body: { message: 'Not found.', code: 'not_found' },
    });
  });

  it('turns an unknown throw into a bare server_error without its message', () => {
    const rendered = renderControlPlaneError(new Error('connect ECONNREFUSED db.internal:5432'));
    expect(rendered.status).toBe(500);
    expect(rendered.body.code).toBe('server_error');
    expect(JSON.stringify(rendered.body)).not.toContain('db.internal');
  });

  it('sets Retry-After on rate limits when known', () => {
    const rendered = renderControlPlaneError(new AppError('rate_limit_exceeded', { retryAfterSeconds: 2.2 }));
    expect(rendered.status).toBe(429);
    expect(rendered.headers).toEqual({ 'retry-after': '3' });
  });

  it('sets Retry-After on payment_pending when known', () => {
    const rendered = renderControlPlaneError(new AppError('payment_pending', { retryAfterSeconds: 5 }));
    expect(rendered.status).toBe(402);
    expect(rendered.headers).toEqual({ 'retry-after': '5' });
  });

  it('uses the documented choice of 401 for session_expired', () => {
    expect(renderControlPlaneError(new AppError('session_expired')).status).toBe(401);
  });
});

describe('renderMessagesError', () => {
  it('renders the messages-style shape with service_code', () => {
    const rendered = renderMessagesError(new AppError('invalid_api_key'));
    expect(rendered.status).toBe(401);
    expect(rendered.body).toEqual({
      type: 'error',
      error: {
        type: 'authentication_error',
        message:
          'This API key is not recognised: it may be mistyped, or replaced by a rotation (the old secret ' +
          'stops at once). Send the current key in x-api-key or Authorization: Bearer.',
        service_code: 'invalid_api_key',
      },
    });
  });

  it('passes the provider status through for upstream_rejected', () => {
    const rendered = renderMessagesError(AppError.upstreamRejected(404));
    expect(rendered.status).toBe(404);
    expect(rendered.body.error).toMatchObject({ type: 'not_found_error', service_code: 'upstream_rejected' });
  });

  it('gives concurrency refusals a short Retry-After', () => {
    const rendered = renderMessagesError(new AppError('concurrency_limit_exceeded'));
    expect(rendered.status).toBe(429);
    expect(rendered.headers['retry-after']).toBe('1');
  });
});

describe('renderOpenAIError', () => {
  it('renders the openai-style shape with code', () => {
    const rendered = renderOpenAIError(
      new AppError('request_too_large', { message: 'Body over 1048576 bytes.' }),
    );
    expect(rendered.status).toBe(413);
    expect(rendered.body).toEqual({
      error: { message: 'Body over 1048576 bytes.', type: 'request_too_large', code: 'request_too_large' },
    });
  });

  it('renders billing refusals as 402 billing_error', () => {
    const rendered = renderOpenAIError(new AppError('insufficient_credits'));
    expect(rendered.status).toBe(402);
    expect(rendered.body.error).toMatchObject({ type: 'billing_error', code: 'insufficient_credits' });
    expect(rendered.headers).toEqual({});
  });
});

describe('AppError', () => {
  it('refuses a status the catalogue does not allow for the code', () => {
    expect(() => AppError.upstreamRejected(500)).toThrow(TypeError);
    expect(() => new AppError('not_found', {}, 400)).toThrow(TypeError);
  });

  it('accepts the alternative status the catalogue allows', () => {
    expect(new AppError('payment_verification_failed', {}, 422).status).toBe(422);
  });
});
