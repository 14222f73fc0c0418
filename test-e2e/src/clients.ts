import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

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
