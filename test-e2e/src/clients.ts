import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { expect } from 'vitest';

/**
 * The official clients as a customer configures them for the gateway: OpenAI-style clients on
 * `{base_url}/v1`, the Anthropic client on `{base_url}`. No retries, so each test sees exactly
 * one request and the error it got.
 */
export function openaiClient(gatewayUrl: string, apiKey: string): OpenAI {
  return new OpenAI({ apiKey, baseURL: `${gatewayUrl}/v1`, maxRetries: 0, timeout: 20_000 });
}

/** `apiKey` is sent as `x-api-key`, `authToken` as `Authorization: Bearer`. */
export function anthropicClient(
  gatewayUrl: string,
  credential: { apiKey: string } | { authToken: string },
): Anthropic {
  return new Anthropic({ ...credential, baseURL: gatewayUrl, maxRetries: 0, timeout: 20_000 });
}

/** What the mock upstream recorded for requests labelled `@mock(tag=...)`. */
export async function mockRequests(
  mockUrl: string,
  tag: string,
): Promise<Array<{ path: string; headers: Record<string, string>; body: string }>> {
  const response = await fetch(`${mockUrl}/__mock/requests?tag=${encodeURIComponent(tag)}`);
  return (
    (await response.json()) as {
      requests: Array<{ path: string; headers: Record<string, string>; body: string }>;
    }
  ).requests;
}

/** Awaits a promise that must reject, and returns what it rejected with. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail, and it succeeded');
}

// biome-ignore lint/suspicious/noExplicitAny: any of the SDK's error classes
type ErrorClass = abstract new (...args: any[]) => Error;

/**
 * The call fails with the openai client's own error class, our status, and our code in
 * `error.code` (read from the body's `error.code`). Returns the error for further checks.
 */
export async function expectOpenAIError(
  call: Promise<unknown>,
  errorClass: ErrorClass,
  status: number,
  code: string,
): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await rejection(call);
  expect(error).toBeInstanceOf(errorClass);
  const apiError = error as InstanceType<typeof OpenAI.APIError>;
  expect({ status: apiError.status, code: apiError.code }).toEqual({ status, code });
  return apiError;
}

/**
 * The call fails with the Anthropic client's own error class, our status, and our code in the
 * body it keeps (`error.error.error.service_code`). Returns the error for further checks.
 */
export async function expectAnthropicError(
  call: Promise<unknown>,
  errorClass: ErrorClass,
  status: number,
  code: string,
): Promise<InstanceType<typeof Anthropic.APIError>> {
  const error = await rejection(call);
  expect(error).toBeInstanceOf(errorClass);
  const apiError = error as InstanceType<typeof Anthropic.APIError>;
  expect({ status: apiError.status, code: anthropicServiceCode(apiError) }).toEqual({ status, code });
  return apiError;
}

/** Our code in an Anthropic client error: the body is `{type: 'error', error: {type, message, service_code}}`. */
export function anthropicServiceCode(error: InstanceType<typeof Anthropic.APIError>): string | undefined {
  return (error.error as { error?: { service_code?: string } } | undefined)?.error?.service_code;
}

const SMALL_CALL = 'Hi @mock(input_tokens=10,output_tokens=2)';

/** A small chat-completions body: 10 input and 2 output tokens as the mock reports them. */
export const chatRequest = (model = 'gpt-e2e', content = SMALL_CALL) => ({
  model,
  max_tokens: 32,
  messages: [{ role: 'user' as const, content }],
});

/** The same for the messages surface. */
export const messageRequest = (model = 'claude-e2e', content = SMALL_CALL) => ({
  model,
  max_tokens: 32,
  messages: [{ role: 'user' as const, content }],
});
