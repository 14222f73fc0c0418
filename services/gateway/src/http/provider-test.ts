import { SERVICE_TOKEN_AUDIENCE, SERVICE_TOKEN_ISSUER } from '@tollgate/schemas';
import { jwtVerify } from 'jose';
import type { GatewayDependencies } from '../deps.ts';
import type { WireProtocol } from '../translation/protocol.ts';
import { getAdapter } from '../upstream/index.ts';

/** A test call waits at most this long for the provider (headers and body). */
const TEST_TIMEOUT_MS = 20_000;
/** The most of the provider's answer shown to the admin. */
const ANSWER_CHARS = 500;
const PROMPT = 'Reply with the word OK.';

/** The smallest request of each wire protocol: one user turn, a few output tokens. */
function testBody(protocol: WireProtocol, model: string): string {
  switch (protocol) {
    case 'messages':
      return JSON.stringify({ model, max_tokens: 16, messages: [{ role: 'user', content: PROMPT }] });
    case 'chat_completions':
      return JSON.stringify({
        model,
        max_completion_tokens: 16,
        messages: [{ role: 'user', content: PROMPT }],
      });
    case 'responses':
      return JSON.stringify({ model, max_output_tokens: 16, input: PROMPT });
    case 'gemini':
      return JSON.stringify({
        contents: [{ role: 'user', parts: [{ text: PROMPT }] }],
        generationConfig: { maxOutputTokens: 16 },
      });
  }
}

type Json = Record<string, unknown> | undefined;
const texts = (parts: unknown): string[] =>
  Array.isArray(parts)
    ? parts.flatMap((part) =>
        typeof (part as Json)?.text === 'string' ? [(part as { text: string }).text] : [],
      )
    : [];

/** The answer's text in any protocol, else the provider's error message, else the raw body. */
function answerText(body: unknown, raw: string): string {
  const root = body as Json;
  const found = [
    ...texts(root?.content),
    ...(Array.isArray(root?.choices)
      ? root.choices.flatMap((choice) => {
          const content = ((choice as Json)?.message as Json)?.content;
          return typeof content === 'string' ? [content] : [];
        })
      : []),
    ...(Array.isArray(root?.output) ? root.output.flatMap((item) => texts((item as Json)?.content)) : []),
    ...(Array.isArray(root?.candidates)
      ? root.candidates.flatMap((candidate) => texts(((candidate as Json)?.content as Json)?.parts))
      : []),
  ].join('');
  if (found) return found;
  const error = root?.error as Json | string | undefined;
  if (typeof error === 'string') return error;
  if (typeof error?.message === 'string') return error.message;
  if (typeof root?.message === 'string') return root.message;
  return raw;
}

export interface ProviderTestResult {
  ok: boolean;
  /** From sending the request to the whole answer read. */
  latencyMs: number;
  /** The provider's HTTP status; null when it could not be reached. */
  upstreamStatus: number | null;
  /** The answer's text, or the provider's error message (never a credential), shortened. */
  answer: string;
  /** The name of the credential sent (of its pool), never its value; null when it needs none. */
  credential: string | null;
}

/**
 * One real call to a provider's model, outside any account: the admin's "test connection". The
 * gateway makes it because only gateways hold the provider credentials.
 */
export async function testProvider(
  deps: GatewayDependencies,
  input: { providerId: string; upstreamModel: string },
): Promise<ProviderTestResult | null> {
  // The provider may have been saved a moment ago: read the catalogue afresh.
  await deps.catalog.reload();
  const provider = deps.catalog.provider(input.providerId);
  if (!provider) return null;
  const credentialName = deps.credentialPools.pick(provider);
  const credential = deps.credentials.get(credentialName);
  const failed = (answer: string, latencyMs = 0, upstreamStatus: number | null = null) => ({
    ok: false,
    latencyMs,
    upstreamStatus,
    answer,
    credential: credentialName,
  });
  if (credentialName !== null && credential === null) {
    return failed(
      `The credential ${credentialName} is not set on this gateway (SECRETS_FILE or its environment): add it and restart the gateways.`,
    );
  }
  const adapter = getAdapter(provider.kind, input.upstreamModel);
  const target = { provider, credential, upstreamModel: input.upstreamModel, alias: input.upstreamModel };
  const body = testBody(adapter.wireProtocol, input.upstreamModel);
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  // Whatever the provider says goes to an admin, but never the secret it may quote back.
  const redact = (text: string) =>
    (credential ? text.split(credential).join('[credential]') : text).slice(0, ANSWER_CHARS);
  try {
    const built = adapter.buildRequest({
      target,
      surface: adapter.wireProtocol,
      clientHeaders: new Headers(),
      stream: false,
      body,
    });
    let request = { url: built.url, headers: built.headers, body: built.body ?? body };
    if (adapter.authorize) {
      const authorized = await adapter.authorize(request, target);
      request = { url: authorized.url, headers: authorized.headers, body: authorized.body ?? request.body };
    }
    const response = await deps.upstream.send({ ...request, signal: AbortSignal.timeout(TEST_TIMEOUT_MS) });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      // Enough to show the answer; the rest is not read.
      if (size < 64_000) chunks.push(chunk);
      size += chunk.length;
    }
    const raw = Buffer.concat(chunks).toString('utf8');
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = undefined;
    }
    const ok = response.status >= 200 && response.status < 300;
    return {
      ok,
      latencyMs: elapsed(),
      upstreamStatus: response.status,
      answer: redact(answerText(parsed, raw)),
      credential: credentialName,
    };
  } catch (error) {
    deps.logger.warn(
      { providerId: provider.id, cause: error instanceof Error ? error.message : String(error) },
      'provider test call failed',
    );
    return failed(
      'The provider could not be reached (refused, reset, DNS, TLS or timeout). Check its base URL.',
      elapsed(),
    );
  }
}

/**
 * POST /internal/v1/providers/test: the control plane's admin route asks a gateway for one test
 * call. Only the control plane's service token (the shared INTERNAL_TOKEN_SECRET) may ask.
 */
export function providerTestHandler(deps: GatewayDependencies) {
  // Encoded on first use: an app built for other routes need not carry the secret.
  let key: Uint8Array | undefined;
  return async (c: { req: { raw: Request } }): Promise<Response> => {
    key ??= new TextEncoder().encode(deps.config.internalTokenSecret);
    const authorization = c.req.raw.headers.get('authorization') ?? '';
    try {
      await jwtVerify(authorization.replace(/^Bearer /, ''), key, {
        issuer: SERVICE_TOKEN_ISSUER,
        audience: SERVICE_TOKEN_AUDIENCE,
        algorithms: ['HS256'],
        maxTokenAge: '10m',
      });
    } catch {
      return Response.json({ error: { code: 'unauthorized' } }, { status: 401 });
    }
    const input = (await c.req.raw.json().catch(() => null)) as Json;
    if (
      typeof input?.providerId !== 'string' ||
      typeof input.upstreamModel !== 'string' ||
      !input.upstreamModel
    ) {
      return Response.json({ error: { code: 'validation_failed' } }, { status: 422 });
    }
    const result = await testProvider(deps, {
      providerId: input.providerId,
      upstreamModel: input.upstreamModel.slice(0, 256),
    });
    if (!result) return Response.json({ error: { code: 'not_found' } }, { status: 404 });
    return Response.json({ data: result });
  };
}
